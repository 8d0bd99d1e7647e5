"""`open_session`: everything a session needs, built from one config and torn down in order.

```python
async with open_session(config) as session:
    async with session.run_turn("hello") as events:
        async for ev in events:
            ...
```

Everything is opened for one principal (`user_id`, `workspace`; `memory.scope` draws the
layout): its curated files, its sessions, its skills, its provider data and its traces.

The order is the specification (each step closes with the stack, in reverse):

1. the warning sink — everything after it warns into it, even before the first turn;
2. the model (starting the embedded model when the config says `local`) and the summary
   model, the tokenizer, the session store (`sessions.backend`) — first writing what earlier
   sessions journalled because the store refused it — and its recorder, with a journal of
   its own (`memory.sessions.journal`), settled when the session closes;
3. the transcript, which draws the session id; the empty tool registry and the memory
   manager (built-in layer only); the prompt state over them; the trace file;
4. the model calls — from here on anything may send a request through the session's
   traced, accounted path;
5. the external memory provider (semantic memory learns through those calls), then every
   provider's `initialize`; the built-in tools and the provider's tools join the registry
   (a `subagent` or `cron` session gets no memory tool: it never writes MEMORY.md/USER.md);
6. a task group that owns every background task, and the `Session` composed of the above;
   `session.handles` holds the parts the CLI and the experiments need.

Telemetry (`open_telemetry`, off unless configured) is the first thing on the exit stack, so
it closes after everything else and the spans of closing are exported too; a subagent shares
its parent's.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from harness.config import KeelConfig, resolve_principal
from harness.events import TurnEnded
from harness.loop.groups import single_error
from harness.loop.parts import SessionParts, Spawn, call_path
from harness.loop.session import Session
from harness.loop.settings import SessionSettings
from harness.loop.system_prompt import PromptAssembler
from harness.loop.warnings import WarningSink
from harness.models.base import ModelClient
from harness.telemetry import NO_TELEMETRY, Telemetry, open_telemetry
from harness.tokens import TokenCounter, load_tokenizer
from harness.tools import ToolFunction, ToolRegistry
from harness.tools.deferral import Deferral
from harness.tools.profile import profile_for
from harness.wiring import steps
from harness.wiring.memory_bridge import DbRecorder, ManagerHooks, StoreMemory
from harness.wiring.options import SessionHandles, SessionOptions
from harness.wiring.resume import catch_up_from, prompt_pin, resume_session
from harness.wiring.scoped import shared_memory_store, shared_skill_library
from harness.wiring.slots import SkillsPin, static_slot_gatherer
from harness.wiring.stores import Stores, open_stores
from harness.wiring.tool_port import add_session_tools
from memory import MemoryManager, MemoryStore, MemoryTool, Principal, ProviderContext, SessionStore
from memory.scope import case_collision
from memory.sessions import JOURNAL_DIR_NAME, JournalledWriter, replay_journals
from memory.skills import SkillLibrary

__all__ = ["OpenedSession", "open_session"]


class OpenedSession(Session):
    """A `Session` opened by `open_session`, with the parts it built on `handles`."""

    def __init__(self, parts: SessionParts, handles: SessionHandles) -> None:
        super().__init__(parts)
        self.handles = handles


@asynccontextmanager
async def open_session(
    config: KeelConfig, options: SessionOptions | None = None, *, tools: Sequence[ToolFunction] = ()
) -> AsyncIterator[OpenedSession]:
    """Open a session as the config describes; close everything on exit.

    Args:
        config: the validated configuration.
        options: what to use instead of the configured parts (see `SessionOptions`).
        tools: Python functions the agent may call (added to `options.tools`).

    Raises:
        ConfigError, LocalModelError: the configuration or the embedded model is unusable.
        ModelError, SessionError: raised from the block as themselves, never as a group.
    """
    with single_error():
        opts = options or SessionOptions()
        if tools:
            opts = replace(opts, tools=(*opts.tools, *tools))
        async with _open(config, opts) as session:
            yield session


@dataclass(frozen=True, slots=True)
class _Where:
    """Whose session, and where its files live."""

    home: Path
    principal: Principal


@dataclass(frozen=True, slots=True)
class _Memory:
    """The memory parts built before the model calls (the manager has no provider yet)."""

    curated: tuple[MemoryStore, MemoryTool] | None
    manager: MemoryManager
    skills: SkillLibrary | None
    shared_skills: SkillLibrary | None
    skills_pin: SkillsPin = field(default_factory=SkillsPin)


def _memory(config: KeelConfig, where: _Where, stores: Stores | None) -> _Memory:
    skills = steps.skills(config, where.home, where.principal, stores=stores)
    return _Memory(
        curated=steps.curated(config, where.home, where.principal, place=stores),
        manager=steps.new_manager(config),
        skills=skills,
        shared_skills=None
        if skills is None
        else shared_skill_library(config, where.home, where.principal, stores=stores),
    )


def _assembler(
    config: KeelConfig,
    opts: SessionOptions,
    where: _Where,
    mem: _Memory,
    *,
    registry: ToolRegistry,
    model_name: str,
    counter: TokenCounter,
    warn: WarningSink,
) -> PromptAssembler:
    gather = static_slot_gatherer(
        config,
        home=where.home,
        tools=registry,
        manager=mem.manager,
        skills=mem.skills,
        shared_skills=mem.shared_skills,
        model_name=model_name,
        today=opts.today,
        cwd=opts.cwd or config.prompt.cwd or Path.cwd(),
        warn=warn,
        skills_pin=mem.skills_pin,
    )
    return PromptAssembler(
        order=config.prompt.slot_order,
        static=gather,
        tokenizer=counter.tokenizer,
        memory_after_tools=config.memory_after_tools,
    )


def _writer_tool(mem: _Memory, opts: SessionOptions) -> MemoryTool | None:
    """The memory tool, for a primary session only.

    A subagent must not write its parent's MEMORY.md/USER.md, and a cron run must not shape
    the user model (the seeds' `agent_context`): such a session still sees the memory in its
    prompt but gets no memory tool (so its compression does not flush either).
    """
    if mem.curated is None or opts.agent_context in ("subagent", "cron"):
        return None
    return mem.curated[1]


def _memory_port(
    config: KeelConfig, where: _Where, mem: _Memory, stores: Stores | None
) -> StoreMemory | None:
    if mem.curated is None:
        return None
    shared = shared_memory_store(config, where.home, where.principal, stores=stores)
    return StoreMemory(*mem.curated, shared=shared)


def _recorder(
    db: SessionStore, opts: SessionOptions, where: _Where, mem: _Memory, journal: JournalledWriter
) -> DbRecorder:
    """The session rows, each recording the curated versions and the skills slot its prompt
    was built from (`resume.prompt_pin`)."""
    store = None if mem.curated is None else mem.curated[0]
    return DbRecorder(
        db,
        source=opts.source,
        user_id=where.principal.session_user,
        journal=journal,
        memory_snapshot=lambda: prompt_pin(store, mem.skills_pin),
    )


async def _stores(
    stack: AsyncExitStack, config: KeelConfig, opts: SessionOptions, where: _Where
) -> tuple[Stores | None, SessionStore]:
    """The caller's stores, else its session store (files, no lease), else the configured ones."""
    if opts.stores is not None:
        return opts.stores, opts.stores.sessions
    if opts.session_store is not None:
        return None, opts.session_store
    stores = await stack.enter_async_context(open_stores(config, where.home))
    return stores, stores.sessions


def _provider_context(
    config: KeelConfig, opts: SessionOptions, where: _Where, session_id: str
) -> ProviderContext:
    return ProviderContext(
        session_id=session_id,
        agent_context=opts.agent_context,
        home=where.home,
        platform=config.agent.platform,
        user_id=where.principal.user_id,
    )


async def _journal(db: SessionStore, where: _Where, warnings: WarningSink) -> JournalledWriter:
    """This session's journal in front of the store, after writing what earlier sessions journalled."""
    journal_dir = where.home / JOURNAL_DIR_NAME
    await replay_journals(journal_dir, db, warn=warnings)
    return JournalledWriter(db, journal_dir, warn=warnings)


def _hooks(config: KeelConfig, mem: _Memory, tg: anyio.abc.TaskGroup, telemetry: Telemetry) -> ManagerHooks:
    """The manager as the session's provider hooks (recall is a `search_memory` span)."""
    return ManagerHooks(mem.manager, tg, warm_wait_s=config.recall.warm_wait_s, telemetry=telemetry)


async def _build(
    stack: AsyncExitStack, config: KeelConfig, opts: SessionOptions, where: _Where, warnings: WarningSink
) -> tuple[SessionParts, SessionHandles]:
    """Steps 2–5 of the module docstring; the caller adds the task group and the session."""
    model, summary_model = opts.model, None
    if model is None:
        model, summary_model = await steps.open_models(
            stack, config, home=where.home, env=env_of(opts), warn=warnings
        )
    counter = TokenCounter(opts.tokenizer or await load_tokenizer(config.model.tokenizer))
    stores, db = await _stores(stack, config, opts, where)
    journal = await _journal(db, where, warnings)
    registry = _registry(config, opts)
    mem = _memory(config, where, stores)
    assembler = _assembler(
        config,
        opts,
        where,
        mem,
        registry=registry,
        model_name=model.model_name,
        counter=counter,
        warn=warnings,
    )
    path = call_path(
        model=model,
        summary_model=summary_model,
        recorder=_recorder(db, opts, where, mem, journal),
        counter=counter,
        assembler=assembler,
        memory=_memory_port(config, where, mem, stores),
        trace=lambda session_id: steps.trace_writer(
            config, where.home, where.principal, opts.trace_path, session_id
        ),
        warnings=warnings,
        tools=registry,
        telemetry=registry.telemetry,
    )
    context = _provider_context(config, opts, where, path.transcript.session_id)
    await steps.start_manager(
        stack,
        config,
        mem.manager,
        calls=path.calls,
        provider=opts.provider,
        context=context,
        stores=stores,
        warn=warnings,
    )
    await add_session_tools(
        stack,
        registry,
        config,
        tool=_writer_tool(mem, opts),
        db=db,
        skills=mem.skills,
        shared_skills=mem.shared_skills,
        manager=mem.manager,
        calls=path.calls,
        transcript=path.transcript,
        principal=where.principal,
        functions=opts.tools,
        environ=env_of(opts),
        warn=warnings,
    )
    tg = await stack.enter_async_context(anyio.create_task_group())
    parts = SessionParts(
        settings=SessionSettings.from_config(config),
        path=path,
        tools=registry,
        providers=_hooks(config, mem, tg, registry.telemetry),
        background=tg,
        today=opts.today,
        spawn=_spawner(config, opts, where, model=model, db=db, counter=counter, stores=stores),
        lease=None if stores is None else stores.lease,
        catch_up=None if stores is None else catch_up_from(db),
    )
    trace = None if path.calls.trace is None else path.calls.trace.path
    return parts, _handles(where, mem, db, trace, journal)


def _registry(config: KeelConfig, opts: SessionOptions) -> ToolRegistry:
    """The session's tool registry: its timeout, telemetry, when MCP tools are deferred, and
    what the model is shown of each tool (the compact profile for a local model keel runs)."""
    share = int(config.mcp.defer_share * config.model.context_window)
    return ToolRegistry(
        timeout_s=config.limits.tool_timeout_s,
        telemetry=opts.telemetry or NO_TELEMETRY,
        defer=Deferral(max_tokens=share),
        profile=profile_for(config.tool_profile(own_model=opts.model is None)),
        native_defer=config.mcp.defer_native,
    )


def _handles(
    where: _Where, mem: _Memory, db: SessionStore, trace: Path | None, journal: JournalledWriter | None
) -> SessionHandles:
    store = None if mem.curated is None else mem.curated[0]
    return SessionHandles(
        where.home, where.principal, store, db, mem.skills, mem.manager, trace, journal, mem.skills_pin
    )


def _spawner(
    config: KeelConfig,
    opts: SessionOptions,
    where: _Where,
    *,
    model: ModelClient,
    db: SessionStore,
    counter: TokenCounter,
    stores: Stores | None,
) -> Spawn:
    """How a session starts a subagent: a fresh session on the same model and principal, as `subagent`."""
    child_options = replace(
        opts,
        model=model,
        home=where.home,
        tokenizer=counter.tokenizer,
        source="subagent",
        agent_context="subagent",
        provider=None,
        trace_path=None,
        user_id=where.principal.user_id,
        workspace=where.principal.workspace,
        session_store=db,
        stores=stores,
        resume=None,
    )

    async def spawn(task: str) -> tuple[str, str]:
        async with open_session(config, child_options) as child:
            async with child.run_turn(task) as events:
                ended = [ev async for ev in events if isinstance(ev, TurnEnded)]
            return (ended[-1].final_text if ended else ""), child.session_id

    return spawn


def env_of(opts: SessionOptions) -> Mapping[str, str]:
    return os.environ if opts.environ is None else opts.environ


@asynccontextmanager
async def _open(config: KeelConfig, opts: SessionOptions) -> AsyncIterator[OpenedSession]:
    env = env_of(opts)
    # First, so an unsafe id is refused before anything is created on disk.
    principal = resolve_principal(config, user_id=opts.user_id, workspace=opts.workspace)
    home = (opts.home or config.resolved_home(env)).expanduser()
    await anyio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    await anyio.to_thread.run_sync(case_collision, home, principal)
    warnings = WarningSink()
    async with AsyncExitStack() as stack:
        if opts.telemetry is None:
            # closed last: what the session's close sends is exported before it shuts down
            opts = replace(
                opts, telemetry=await stack.enter_async_context(open_telemetry(config.telemetry, env))
            )
        parts, handles = await _build(stack, config, opts, _Where(home, principal), warnings)
        session = OpenedSession(parts, handles)
        if opts.resume is None:
            await session.start()
        else:
            memory = parts.path.system.memory
            await resume_session(
                session,
                handles.db,
                principal,
                memory if isinstance(memory, StoreMemory) else None,
                opts.resume,
                skills=handles.skills_pin,
            )
        for warning in [] if handles.store is None else steps.memory_warnings(handles.store):
            warnings(warning)
        try:
            yield session
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await session.close()
                finally:
                    if handles.journal is not None:
                        await handles.journal.settle()
                    await parts.path.calls.telemetry.flush(closing=parts.path.calls.stream)
            # Let background provider work (sync, prefetch) finish, but not forever.
            parts.background.cancel_scope.deadline = anyio.current_time() + 5.0
