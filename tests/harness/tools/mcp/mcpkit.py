"""What the MCP tests share: a free loopback port, the server processes this test started, and
the MCP servers from the npm registry (installed once, at the versions `npm/package-lock.json`
pins)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

__all__ = ["children_named", "free_port", "npm_servers", "start_http_server", "wait_for_port"]

NPM_DIR = Path(__file__).with_name("npm")
"""`package.json` and `package-lock.json` of the npm servers the tests connect to."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def children_named(word: bytes) -> list[int]:
    """Live processes whose parent is this test process and whose command line holds `word`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and word in cmdline:
            found.append(int(entry.name))
    return found


def start_http_server(argv: Sequence[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start `argv + ["--http", PORT]` and wait until it answers on loopback (blocking).

    Returns the process (the caller stops it) and the server's MCP URL."""
    port = free_port()
    proc = subprocess.Popen(
        [*argv, "--http", str(port)], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    wait_for_port(proc, port, argv)
    return proc, f"http://127.0.0.1:{port}/mcp"


def wait_for_port(proc: subprocess.Popen[bytes], port: int, argv: Sequence[str], *, tries: int = 300) -> None:
    """Wait (blocking) until something answers HTTP on loopback `port`, or `proc` exits."""
    for _ in range(tries):
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv!r} exited at start") from None
            time.sleep(0.05)
    raise RuntimeError(f"{argv!r} did not answer on port {port}")


def npm_servers() -> Path:
    """The folder whose `node_modules` holds the npm servers of `npm/package-lock.json`.

    `$KEEL_TEST_NODE_DIR` when set (`.ci/run` installs there before the tests), else a cache
    folder keyed by the lock file's hash; installed with `npm ci` (the locked versions and
    their hashes) when missing, once across concurrent tests. Skips only where node or npm
    is not on the machine; an install that fails is a test failure."""
    lock = (NPM_DIR / "package-lock.json").read_bytes()
    key = hashlib.sha256(lock).hexdigest()[:16]
    env = os.environ.get("KEEL_TEST_NODE_DIR")
    where = Path(env) if env else Path.home() / ".cache" / "keel-tests" / f"npm-{key}"
    stamp = where / "node_modules" / f".keel-{key}"
    if stamp.exists():
        return where
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("needs Node.js and npm to install the npm registry's MCP servers (npm/package.json)")
    where.mkdir(parents=True, exist_ok=True)
    with FileLock(str(where) + ".lock"):
        if not stamp.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(NPM_DIR / name, where / name)
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--prefix", str(where)],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci in {where} failed ({done.returncode}): {done.stderr[-2000:]}")
            stamp.touch()
    return where
