"""Worker liveness: a held lock reads alive from this process and from another, and a test
never releases the lock it tests; a killed holder reads gone."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory.lease.files import try_lock, unlock
from memory.runs.liveness import FileLiveness, PgLiveness

pytestmark = pytest.mark.anyio

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from memory.lease.files import try_lock
    fd = try_lock(Path(sys.argv[1]))
    print("held" if fd is not None else "busy", flush=True)
    time.sleep(60)
    """
)


def _other_process_can_lock(path: Path) -> bool:
    code = "import sys; from pathlib import Path; from memory.lease.files import try_lock; print(try_lock(Path(sys.argv[1])) is not None)"
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout.strip() == "True"


def _start_holder(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)


async def test_file_liveness_of_this_process_keeps_its_lock(tmp_path: Path) -> None:
    liveness = FileLiveness(tmp_path)
    async with liveness.hold("w-1"):
        path = tmp_path / "serve-worker-w-1.lock"
        assert await liveness.alive("w-1")
        assert await FileLiveness(tmp_path).alive("w-1")  # another instance, same process
        # Before the fix, the test above closed a descriptor of the file and so dropped
        # this process's record lock: another process could then take the worker's id.
        assert not _other_process_can_lock(path)
    assert not await liveness.alive("w-1")


async def test_file_liveness_of_another_process(tmp_path: Path) -> None:
    liveness = FileLiveness(tmp_path)
    path = tmp_path / "serve-worker-w-2.lock"
    proc = _start_holder(path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        assert await liveness.alive("w-2")
        assert await liveness.alive("w-2")  # testing twice changes nothing
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert not await liveness.alive("w-2")  # the kernel dropped the lock with the process
    fd = try_lock(path)
    assert fd is not None
    unlock(fd)


async def test_pg_liveness_survives_its_own_probe(postgres_url: str, pg_schema: str) -> None:
    holder = PgLiveness(postgres_url, schema=pg_schema)
    other = PgLiveness(postgres_url, schema=pg_schema)
    async with holder.hold("w-3"):
        assert await other.alive("w-3")
        assert await holder.alive("w-3")
        assert await other.alive("w-3")  # the holder's own probe did not release it
    try:
        assert not await other.alive("w-3")
    finally:
        await other.aclose()
