"""`routed_pg_logs`: a real psycopg pool facing a port nobody listens on reports through keel's
message, once, and its raw log lines reach neither the root logger nor stderr."""

from __future__ import annotations

import logging
import socket
import threading

import psycopg
import psycopg_pool
import pytest

from memory.pglog import pg_log_message, routed_pg_logs


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"postgresql://keel@127.0.0.1:{port}/keel"


def test_a_pool_that_cannot_connect_speaks_through_keel_once(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    said: list[str] = []
    heard = threading.Event()

    def report(message: str) -> None:
        said.append(message)
        heard.set()

    caplog.set_level(logging.DEBUG)
    with routed_pg_logs(report):
        pool: psycopg_pool.ConnectionPool[psycopg.Connection[tuple[object, ...]]] = (
            psycopg_pool.ConnectionPool(
                _dead_url(),
                min_size=1,
                open=False,
                name="keel-test",
                reconnect_timeout=1.0,
                kwargs={"connect_timeout": 1},
            )
        )
        pool.open(wait=False)
        try:
            assert heard.wait(60), "the pool never reported its failed connection"
        finally:
            pool.close()
    assert said[0].startswith("cannot reach the PostgreSQL server (pool keel-test): ")
    assert said[0].endswith("; keel keeps trying") and "\n" not in said[0]
    assert len(said) == len(set(said))  # repeats folded
    assert not [r for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= logging.WARNING]
    assert "error connecting in" not in capfd.readouterr().err
    assert logging.getLogger("psycopg").propagate  # restored when the last route ends


def test_an_unknown_record_is_one_line_naming_the_pool() -> None:
    record = logging.LogRecord("psycopg.pool", logging.WARNING, "x", 1, "odd: %s", ("a\nb",), None)
    assert pg_log_message(record) == "PostgreSQL connection pool: odd: a"
