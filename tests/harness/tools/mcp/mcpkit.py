"""What the MCP tests share: a free loopback port and the server processes this test started."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

__all__ = ["children_named", "free_port", "start_http_server"]


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
    for _ in range(300):
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            break
        except httpx.TransportError:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv!r} exited at start") from None
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}/mcp"
