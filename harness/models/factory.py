"""Build the model client a config asks for.

`open_model(config, ...)` is an async context manager: for the embedded model it starts
(and later stops) the llama.cpp server; for remote endpoints it reads the API key from the
environment variable the config names. Every client is wrapped in `RetryingClient`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.models.anthropic import AnthropicClient
from harness.models.base import ModelClient
from harness.models.local import ServerOptions, start_local_model
from harness.models.openai import OpenAIClient, ToolResultStyle
from harness.models.retry import RetryAttempt, RetryingClient

__all__ = ["local_client", "open_model"]

_DEFAULT_URL = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _retrying(
    inner: ModelClient, config: KeelConfig, on_retry: Callable[[RetryAttempt], None] | None = None
) -> ModelClient:
    r = config.model.retry
    return RetryingClient(
        inner,
        max_attempts=r.max_attempts,
        base_delay_s=r.base_delay_s,
        max_delay_s=r.max_delay_s,
        on_retry=on_retry,
    )


@asynccontextmanager
async def open_model(
    config: KeelConfig,
    *,
    home: Path,
    environ: Mapping[str, str] | None = None,
    http: httpx.AsyncClient | None = None,
    on_retry: Callable[[RetryAttempt], None] | None = None,
) -> AsyncIterator[ModelClient]:
    """The configured model client, alive for the `async with` block.

    Args:
        on_retry: told about every failed attempt that is about to be retried (the session
            shows it as a warning).

    Raises:
        ConfigError: a remote provider without a model name or API key.
        LocalModelError: the embedded model is not installed or did not start.
    """
    env = os.environ if environ is None else environ
    m = config.model
    async with httpx.AsyncClient(timeout=m.timeout_s) if http is None else _borrowed(http) as client:
        if m.provider == "local":
            if m.base_url:
                # An already-running llama.cpp-style server: talk to it, do not start one.
                yield _retrying(
                    local_client(
                        client,
                        m.base_url,
                        m.name or "local",
                        m.timeout_s,
                        streaming=m.stream,
                        tool_results=m.tool_results,
                    ),
                    config,
                    on_retry,
                )
                return
            async with start_local_model(
                model=m.local_model,
                gguf=m.gguf,
                gguf_sha256=m.gguf_sha256,
                # The keel home, not `home` (a demo or a run may pass a scratch directory):
                # assembled weights are kept once per home.
                models_dir=m.models_dir or config.resolved_home(env) / "models",
                n_ctx=m.context_window,
                threads=m.local_threads,
                threads_batch=m.local_threads_batch,
                log_path=home / "logs" / "local-model.log",
                max_tokens=m.max_output_tokens,
                server=_server_options(config, home),
            ) as lm:
                yield _retrying(
                    local_client(
                        client, lm.base_url, lm.model, m.timeout_s, api_key=lm.api_key, streaming=m.stream
                    ),
                    config,
                    on_retry,
                )
            return
        yield _retrying(_remote(client, config, env), config, on_retry)


def _remote(client: httpx.AsyncClient, config: KeelConfig, env: Mapping[str, str]) -> ModelClient:
    """The client of a remote provider (`openai` or `anthropic`), its key read from `env`."""
    m = config.model
    key_env = m.api_key_env or _DEFAULT_KEY_ENV[m.provider]
    key = env.get(key_env)
    if not m.name:
        raise ConfigError(f"model.name is required for provider {m.provider!r}; set it in the config file")
    if m.provider == "anthropic":
        if not key:
            raise ConfigError(f"no Anthropic API key: set the environment variable {key_env}")
        inner: ModelClient = AnthropicClient(
            client,
            base_url=m.base_url or _DEFAULT_URL["anthropic"],
            model=m.name,
            api_key=key,
            cache_ttl=m.cache_ttl,
            default_max_tokens=m.max_output_tokens,
            timeout_s=m.timeout_s,
            api_key_env=key_env,
            streaming=m.stream,
        )
    else:
        inner = OpenAIClient(
            client,
            base_url=m.base_url or _DEFAULT_URL["openai"],
            model=m.name,
            api_key=key,
            timeout_s=m.timeout_s,
            api_key_env=key_env,
            streaming=m.stream,
            tool_results=m.tool_results,
        )
    return inner


def _server_options(config: KeelConfig, home: Path) -> ServerOptions:
    s = config.model.local_server
    return ServerOptions(
        ram_states=s.ram_states,
        ram_mb=s.ram_mb,
        cache_dir=home / "cache" / "local-model" if s.disk_cache else None,
        cache_mb=s.disk_cache_mb,
        cache_files=s.disk_cache_files,
        cache_min_tokens=s.disk_min_tokens,
        max_body_mb=s.max_body_mb,
        max_queue=s.max_queue,
        call_confidence=s.call_confidence,
    )


def local_client(
    http: httpx.AsyncClient,
    base_url: str,
    model: str,
    timeout_s: float,
    *,
    api_key: str | None = None,
    streaming: bool = True,
    tool_results: ToolResultStyle = "native",
) -> OpenAIClient:
    """The client for keel's embedded model server (or any llama.cpp-style local server):
    plain OpenAI chat completions — native `role: tool` results, streaming with tools.
    `api_key`: the embedded server's bearer token (`LocalModel.api_key`). `timeout_s`
    measures silence: a local prefill may take minutes on a busy machine, and keel's server
    reports its progress."""
    return OpenAIClient(
        http,
        base_url=base_url,
        model=model,
        timeout_s=timeout_s,
        api_key=api_key,
        provider_name="llama.cpp",
        silence_timeout=True,
        streaming=streaming,
        tool_results=tool_results,
        split_system=True,
    )


@asynccontextmanager
async def _borrowed(http: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    yield http  # the caller owns it and closes it
