"""A run's events and its end are retried while the storage is unavailable (a pool exhausted
under load): dropping them lost events and left runs running forever (`serve_load.py` at 500
sessions)."""

from __future__ import annotations

import pytest

from harness.serve.worker import _persist
from memory import SessionStoreError, SessionStoreUnavailableError


async def test_a_write_the_storage_could_not_take_is_retried_until_it_is_taken() -> None:
    attempts: list[int] = []

    async def write() -> None:
        attempts.append(len(attempts))
        if len(attempts) < 3:
            raise SessionStoreUnavailableError("couldn't get a connection after 10.00 sec")

    await _persist(write, "could not write")
    assert len(attempts) == 3


async def test_a_write_the_store_refused_is_not_retried(caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[int] = []

    async def write() -> None:
        attempts.append(1)
        raise SessionStoreError("refused")

    await _persist(write, "could not end run r1")
    assert attempts == [1]
    assert "could not end run r1" in caplog.text
