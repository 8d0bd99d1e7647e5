"""The session lease with real processes: one holder at a time, and a killed holder frees it."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from memory import PgSessionStore, SessionBusyError
from memory.lease import FileLease, PgLease, SessionLease, lease_key

REPO = Path(__file__).resolve().parents[3]
WORKER = Path(__file__).with_name("lease_worker.py")


@pytest.fixture(params=["files", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(backend, target) as `lease_worker.py` takes them."""
    if request.param == "files":
        yield "files", str(tmp_path / "leases")
        return
    url: str = request.getfixturevalue("postgres_url")
    schema: str = request.getfixturevalue("sessions_schema")
    yield "postgres", f"{url}#{schema}"


def lease_for(where: tuple[str, str], wait_s: float) -> FileLease | PgLease:
    backend, target = where
    if backend == "files":
        return FileLease(Path(target), wait_s=wait_s)
    url, _, schema = target.partition("#")
    return PgLease(url, schema=schema, wait_s=wait_s)


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def wait_for_line(proc: subprocess.Popen[str], expected: str, timeout_s: float = 60.0) -> None:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout_s), f"worker printed nothing in {timeout_s} s"
    assert proc.stdout.readline().strip() == expected


async def test_a_killed_holder_frees_the_lease(where: tuple[str, str]) -> None:
    holder = spawn("hold", *where, "s-1")
    try:
        wait_for_line(holder, "held")
        lease = lease_for(where, wait_s=0.3)
        with pytest.raises(SessionBusyError, match="session 's-1' is busy"):
            async with lease.hold("s-1"):
                pass
        async with lease.hold("s-2"):  # another session is not held up
            pass
        holder.kill()
        holder.communicate()
        patient = lease_for(where, wait_s=30)
        with anyio.fail_after(30):
            async with patient.hold("s-1"):
                pass
        await patient.aclose()
        await lease.aclose()
    finally:
        holder.kill()
        holder.communicate()


def test_two_processes_never_interleave_turns_of_one_session(where: tuple[str, str], tmp_path: Path) -> None:
    log = tmp_path / "turns.log"
    workers = [spawn("turns", *where, "shared", str(log), "15") for _ in range(2)]
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 60
    for start, end in zip(lines[::2], lines[1::2], strict=True):
        assert start.startswith("start ") and end == "end " + start.removeprefix("start ")
    assert len({line.split()[1] for line in lines}) == 2  # both workers ran turns


async def test_two_holders_in_one_process_take_turns(where: tuple[str, str]) -> None:
    lease = lease_for(where, wait_s=30)
    held: SessionLease = lease
    order: list[str] = []

    async def turn(name: str) -> None:
        async with held.hold("one"):
            order.append(f"start {name}")
            await anyio.sleep(0.05)
            order.append(f"end {name}")

    async with anyio.create_task_group() as tg:
        for name in ("a", "b", "c"):
            tg.start_soon(turn, name)
    assert len(order) == 6
    assert all(e == "end " + s.removeprefix("start ") for s, e in zip(order[::2], order[1::2], strict=True))
    await lease.aclose()


def test_lease_keys_differ_by_schema_and_session() -> None:
    assert lease_key("a", "s") != lease_key("b", "s") != lease_key("b", "t")
    assert -(2**63) <= lease_key("a", "s") < 2**63


async def test_a_wait_that_runs_out_keeps_the_other_leases_of_the_process(
    postgres_url: str, sessions_schema: str
) -> None:
    """A deadline that lands while the lock is being polled must not break the one lease
    connection: every other session the process holds would lose its lease with it."""
    import psycopg

    holder = PgLease(postgres_url, schema=sessions_schema, wait_s=30.0)
    waiter = PgLease(postgres_url, schema=sessions_schema, wait_s=0.004, poll_s=0.0001)
    try:
        async with holder.hold("busy"), waiter.hold("mine"):
            for _ in range(150):  # many deadlines, some of them mid-query
                with pytest.raises(SessionBusyError):
                    async with waiter.hold("busy"):
                        pass
            # "mine" is still the waiter's: another connection cannot take it
            async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as other:
                cur = await other.execute(
                    "SELECT pg_try_advisory_lock(%s)", (lease_key(sessions_schema, "mine"),)
                )
                row = await cur.fetchone()
            assert row is not None and row[0] is False
    finally:
        await holder.aclose()
        await waiter.aclose()


async def test_every_take_by_any_holder_raises_the_generation_by_one(where: tuple[str, str]) -> None:
    if where[0] == "postgres":  # the generation is the fence token: the schema needs its table
        url, _, schema = where[1].partition("#")
        await (await PgSessionStore.open(url, schema=schema)).aclose()
    first, second = lease_for(where, wait_s=30), lease_for(where, wait_s=30)
    try:
        async with first.hold("gen") as a:
            pass
        async with first.hold("gen") as b:  # nobody in between: the holder's own last plus one
            pass
        async with second.hold("gen") as other:
            pass
        async with first.hold("gen") as c:  # another holder in between: a gap the holder sees
            pass
        async with first.hold("another") as elsewhere:
            pass
    finally:
        await first.aclose()
        await second.aclose()
    assert a is not None and (b, other, c) == (a + 1, a + 2, a + 3)
    assert elsewhere == 1  # each session counts its own takes
