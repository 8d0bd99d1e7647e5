"""Real processes for tests and benchmarks of `keel serve`: the fake model endpoint and servers.

```python
with fake_model() as base_url, keel_server(config_file, home=tmp_path / "home") as server:
    httpx.post(server.url + "/v1/sessions")
```

Both are started with this interpreter, wait until they answer (the fake model prints its
port; a server answers `GET /healthz`), and are stopped on exit (SIGTERM, then SIGKILL).
A server's output goes to `<log_dir>/keel-serve-<port>.log`, quoted when it fails to start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["KeelServer", "fake_model", "free_port", "keel_server", "keel_servers"]


def free_port() -> int:
    """A TCP port nobody listens on now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@contextmanager
def fake_model(*, latency_ms: float = 0.0, chunks: int = 3) -> Iterator[str]:
    """Run `harness.testing.fake_openai`; yields its base URL (`http://127.0.0.1:N/v1`)."""
    command = [
        sys.executable,
        "-m",
        "harness.testing.fake_openai",
        "--latency-ms",
        str(latency_ms),
        "--chunks",
        str(chunks),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.startswith("port "):
            raise RuntimeError(f"the fake model did not start (it printed {line!r})")
        yield f"http://127.0.0.1:{line.split()[1]}/v1"
    finally:
        _stop(process)


@dataclass
class KeelServer:
    """A running `keel serve` process."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-whatever, as in a crash."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


@contextmanager
def keel_servers(
    config: Path,
    *,
    home: Path | Sequence[Path],
    count: int = 1,
    env: Mapping[str, str] | None = None,
    workers: int = 1,
    log_dir: Path | None = None,
    startup_s: float = 90.0,
) -> Iterator[list[KeelServer]]:
    """Start `keel serve` processes on `config` at once (each on a free port): `count` on one
    `home`, or one per home of a list; yields them once every `/healthz` answers 200, stops
    them all on exit."""
    homes = [home] * count if isinstance(home, Path) else list(home)
    servers: list[KeelServer] = []
    try:
        for each in homes:
            servers.append(_start(config, each, env, workers, log_dir))
        for server in servers:
            _wait_healthy(server, startup_s)
        yield servers
    finally:
        for server in servers:
            if server.process.poll() is None:
                server.process.terminate()
        for server in servers:
            _stop(server.process)


@contextmanager
def keel_server(
    config: Path,
    *,
    home: Path,
    env: Mapping[str, str] | None = None,
    workers: int = 1,
    log_dir: Path | None = None,
) -> Iterator[KeelServer]:
    """One `keel serve` process (see `keel_servers`)."""
    with keel_servers(config, home=home, env=env, workers=workers, log_dir=log_dir) as servers:
        yield servers[0]


def _start(
    config: Path, home: Path, env: Mapping[str, str] | None, workers: int, log_dir: Path | None
) -> KeelServer:
    port = free_port()
    log = (log_dir or home.parent) / f"keel-serve-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "harness", "--config", str(config), "--home", str(home)]
    command += ["serve", "--port", str(port), "--workers", str(workers)]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    return KeelServer(process, f"http://127.0.0.1:{port}", log)


def _wait_healthy(server: KeelServer, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            break
        try:
            if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    tail = server.log.read_text(errors="replace")[-3000:] if server.log.exists() else ""
    raise RuntimeError(f"keel serve did not become healthy at {server.url}; its log ends:\n{tail}")
