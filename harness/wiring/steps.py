"""The steps `open_session` runs, one function each: models, curated memory, the memory
manager and its external provider, skills, the trace file, subagents.

Each takes what it needs — never the session, which is built last from what they return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path

from harness.config import KeelConfig
from harness.errors import ConfigError
from harness.loop.calls import ModelCalls
from harness.loop.warnings import WarningSink
from harness.models.base import ModelClient
from harness.models.factory import open_model
from harness.models.retry import RetryAttempt
from harness.trace import TraceWriter
from harness.types import ModelReply, ModelRequest
from harness.wiring.scoped import curated_store, meaning_check, provenance_gate, skill_library, trace_dir
from harness.wiring.semantic import semantic_provider
from harness.wiring.stores import MemoryPlace, Stores
from memory import (
    MemoryManager,
    MemoryProvider,
    MemoryStore,
    MemoryTarget,
    MemoryTool,
    Principal,
    ProviderContext,
)
from memory.providers.holographic import HolographicProvider
from memory.skills import SkillLibrary

__all__ = [
    "curated",
    "memory_warnings",
    "new_manager",
    "open_models",
    "skills",
    "start_manager",
    "trace_writer",
    "unused_db_path",
]


class _Builtin(MemoryProvider):
    """The built-in layer as seen by the manager: its tool is registered by the harness."""

    name = "builtin"


def _retry_warner(warn: WarningSink) -> Callable[[RetryAttempt], None]:
    def on_retry(attempt: RetryAttempt) -> None:
        warn(
            f"the model call failed ({type(attempt.error).__name__}: {attempt.error}); retrying in "
            f"{attempt.delay_s:.1f} s (attempt {attempt.attempt + 1} of {attempt.max_attempts})"
        )

    return on_retry


async def open_models(
    stack: AsyncExitStack, config: KeelConfig, *, home: Path, env: Mapping[str, str], warn: WarningSink
) -> tuple[ModelClient, ModelClient | None]:
    """The main model and, when `compression.summary_model` names one, the summary model."""
    name = config.compression.summary_model
    if name and config.model.provider == "local":
        raise ConfigError(
            f"compression.summary_model {name!r} cannot be used with the embedded model (it serves one "
            "model); unset it, or use a remote provider"
        )
    on_retry = _retry_warner(warn)
    model = await stack.enter_async_context(open_model(config, home=home, environ=env, on_retry=on_retry))
    if not name:
        return model, None
    summary_config = config.model_copy(update={"model": config.model.model_copy(update={"name": name})})
    summary = await stack.enter_async_context(
        open_model(summary_config, home=home, environ=env, on_retry=on_retry)
    )
    return model, summary


def curated(
    config: KeelConfig, home: Path, principal: Principal, *, place: MemoryPlace | None = None
) -> tuple[MemoryStore, MemoryTool] | None:
    """The principal's curated store and its `memory` tool (None when both files are disabled).

    `place`: where its documents and held writes live (None: the home's files; see
    `harness.wiring.stores`)."""
    m = config.memory
    if not (m.memory_enabled or m.user_profile_enabled):
        return None
    backend = None if place is None else place.curated(principal)
    store = curated_store(config, home, principal, meaning=meaning_check(config), backend=backend)
    held = (place or MemoryPlace(backend="files", location=str(home))).held(principal, home)
    gate = provenance_gate(config)
    return store, MemoryTool(store, untrusted_writes=m.untrusted_writes, pending=held, gate=gate)


def memory_warnings(store: MemoryStore) -> list[str]:
    """What the user must know about the curated files at session start."""
    out: list[str] = []
    files: tuple[tuple[MemoryTarget, str], ...] = (("memory", "MEMORY.md"), ("user", "USER.md"))
    for target, name in files:
        if not store.enabled(target):
            continue
        error = store.read_error(target)
        if error is not None:
            out.append(
                f"{name} could not be read ({error}); it is left out of the prompt and writes to it are refused until it is fixed"
            )
            continue
        usage = store.usage(target)
        if usage.over_budget:
            out.append(
                f"{name} holds {usage.chars:,} characters, over its {usage.limit:,} budget: the prompt shows only the "
                "entries that fit — consolidate it (`keel memory list`, `keel memory remove`)"
            )
    return out


def new_manager(config: KeelConfig) -> MemoryManager:
    """The memory manager with the built-in layer only (the external provider joins in `start_manager`)."""
    m = config.memory
    # Learning (semantic) runs model calls inside sync_turn: bound hooks by its own limit.
    bound = max(30.0, m.semantic.learn_timeout_s) if m.provider == "semantic" else 30.0
    return MemoryManager(
        _Builtin(), clock=time.monotonic, recall_wait_s=config.recall.wait_s, call_timeout_s=bound
    )


def unused_db_path(config: KeelConfig, stores: Stores | None) -> str | None:
    """The warning for a provider `db_path` the backend ignores (None: nothing to say).

    On `storage.backend: postgres` the provider's data are rows of the server's schema and
    no file is opened, so a configured `db_path` names a file that is neither read nor
    written — its data are not in the session's memory, and `keel storage migrate` leaves
    a file outside the standard places where it is.
    """
    m = config.memory
    pg = None if stores is None else stores.providers()
    if pg is None or m.provider == "none":
        return None
    db_path = m.holographic.db_path if m.provider == "holographic" else m.semantic.db_path
    if db_path is None:
        return None
    return (
        f"memory.{m.provider}.db_path ({str(db_path)!r}) is ignored: storage.backend is postgres, so the "
        f"{m.provider} provider keeps its data in PostgreSQL schema {pg.schema!r} and that file is neither "
        "read nor written; unset db_path (if the file holds data, `keel storage migrate --to postgres` copies "
        "it only from the standard place in the home)"
    )


def _external(config: KeelConfig, calls: ModelCalls, stores: Stores | None) -> MemoryProvider | None:
    """The configured provider, keeping its data where `stores` keeps everything else."""
    m = config.memory
    pg = None if stores is None else stores.providers()
    if m.provider == "holographic":
        h = m.holographic
        return HolographicProvider(
            db_path=h.db_path,
            hrr_dim=h.hrr_dim,
            default_trust=h.default_trust,
            min_trust=h.min_trust,
            prefetch_limit=h.prefetch_limit,
            pg=pg,
        )
    if m.provider == "semantic":

        async def send(request: ModelRequest) -> ModelReply:
            reply, _ = await calls.send(request)
            return reply

        semantic = semantic_provider(config, send=send, pg=pg)
        reason = semantic.unavailable_reason()
        if reason is not None:
            raise ConfigError(f"memory.provider is 'semantic' but {reason}; or set memory.provider: none")
        return semantic
    return None


async def start_manager(
    stack: AsyncExitStack,
    config: KeelConfig,
    manager: MemoryManager,
    *,
    calls: ModelCalls,
    provider: MemoryProvider | None,
    context: ProviderContext,
    stores: Stores | None = None,
    warn: WarningSink | None = None,
) -> None:
    """Register the external provider (`provider`, else the configured one, its data on the
    `stores`' backend, `warn` told of a configured `db_path` that backend ignores) and
    initialize all."""
    if context.agent_context == "subagent":
        pass  # subagents run without external providers; the parent hears `on_delegation`
    else:
        external = provider if provider is not None else _external(config, calls, stores)
        if provider is None and warn is not None and (ignored := unused_db_path(config, stores)):
            warn(ignored)
        if external is not None:
            manager.add_provider(external)
    await manager.initialize(context)
    stack.push_async_callback(manager.shutdown)


def skills(
    config: KeelConfig, home: Path, principal: Principal, *, stores: Stores | None = None
) -> SkillLibrary | None:
    """The principal's skill library (on the `stores`' backend when given), unless skills are off."""
    if not config.skills.enabled:
        return None
    return skill_library(config, home, principal, stores=stores)


def trace_writer(
    config: KeelConfig, home: Path, principal: Principal, trace_path: Path | None, session_id: str
) -> TraceWriter | None:
    """The request trace file, unless traces are off."""
    if not config.traces.enabled:
        return None
    return TraceWriter(trace_path or trace_dir(config, home, principal) / f"{session_id}.jsonl")
