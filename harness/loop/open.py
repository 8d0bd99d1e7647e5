"""`open_session`: everything a session needs, built from one config and torn down in order.

```python
async with open_session(config) as session:
    async with session.run_turn("hello") as events:
        async for ev in events:
            ...
```

Everything is opened for one principal (`user_id`, `workspace`; `memory.scope` draws the
layout): its curated files, its sessions, its skills, its provider data and its traces.

It opens, in this order (and closes in reverse), one named step each: the model (starting
the embedded model when the config says `local`) and the summary model, the tokenizer, the
curated store and its `memory` tool, the session store (`sessions.backend`: `state.db` or
PostgreSQL), the memory manager with the optional external provider, the skill library,
the tool registry, the trace file, and a task group that owns every background task of
the session.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from harness.config import KeelConfig, resolve_principal
from harness.errors import ConfigError
from harness.events import TurnEnded
from harness.loop._groups import single_error
from harness.loop.memory_bridge import (
    DbRecorder,
    ManagerHooks,
    StoreMemory,
    json_tool,
    memory_tool,
    provider_tools,
)
from harness.loop.scoped import (
    curated_store,
    session_user_ids,
    shared_memory_store,
    shared_skill_library,
    skill_library,
    trace_dir,
)
from harness.loop.semantic_wiring import semantic_provider
from harness.loop.session import Session, Spawn
from harness.loop.settings import SessionSettings
from harness.loop.system_prompt import PromptAssembler, static_slot_gatherer
from harness.loop.transcript import new_session_id
from harness.models.base import ModelClient
from harness.models.factory import open_model
from harness.models.retry import RetryAttempt
from harness.tokens import TokenCounter, Tokenizer, load_tokenizer
from harness.tools import ToolRegistry
from harness.trace import TraceWriter
from harness.types import Message, ModelReply, ModelRequest
from memory import (
    AgentContext,
    MemoryManager,
    MemoryProvider,
    MemoryStore,
    MemoryTarget,
    MemoryTool,
    Principal,
    SessionSearchTool,
    SessionStore,
    memory_tool_schema,
    session_search_schema,
)
from memory.providers.holographic import HolographicProvider
from memory.skills import (
    SkillLibrary,
    SkillManageTool,
    SkillsListTool,
    SkillViewTool,
    skill_manage_schema,
    skill_view_schema,
    skills_list_schema,
)
from prompts import load_text

__all__ = ["SessionHandles", "open_session"]


class _Builtin(MemoryProvider):
    """The built-in layer as seen by the manager: its tool is registered by the harness."""

    name = "builtin"


@dataclass(frozen=True, slots=True)
class SessionHandles:
    """The parts `open_session` built, for callers that need them (CLI, experiments)."""

    home: Path
    principal: Principal
    store: MemoryStore | None
    db: SessionStore
    skills: SkillLibrary | None
    manager: MemoryManager
    trace_path: Path | None


class _SessionRef:
    """The session being built, for the callbacks wired before it exists."""

    def __init__(self, first_id: str) -> None:
        self.first_id = first_id
        self._ids = iter([first_id])
        self.session: Session | None = None

    def next_id(self) -> str:
        return next(self._ids, None) or new_session_id()

    def current_id(self) -> str:
        return self.first_id if self.session is None else self.session.session_id

    async def send(self, request: ModelRequest) -> ModelReply:
        """A side call (semantic memory's learning) through the session's traced model calls."""
        if self.session is None:
            raise ConfigError("the session is not open yet; no model call can be made through it")
        reply, _ = await self.session.calls.send(request)
        return reply

    def on_retry(self, attempt: RetryAttempt) -> None:
        if self.session is not None:
            self.session.warn(
                f"the model call failed ({type(attempt.error).__name__}: {attempt.error}); retrying in "
                f"{attempt.delay_s:.1f} s (attempt {attempt.attempt + 1} of {attempt.max_attempts})"
            )


async def _open_models(
    stack: AsyncExitStack, config: KeelConfig, *, home: Path, env: Mapping[str, str], ref: _SessionRef
) -> tuple[ModelClient, ModelClient | None]:
    """The main model and, when `compression.summary_model` names one, the summary model."""
    name = config.compression.summary_model
    if name and config.model.provider == "local":
        raise ConfigError(
            f"compression.summary_model {name!r} cannot be used with the embedded model (it serves one "
            "model); unset it, or use a remote provider"
        )
    model = await stack.enter_async_context(open_model(config, home=home, environ=env, on_retry=ref.on_retry))
    if not name:
        return model, None
    summary_config = config.model_copy(update={"model": config.model.model_copy(update={"name": name})})
    summary = await stack.enter_async_context(
        open_model(summary_config, home=home, environ=env, on_retry=ref.on_retry)
    )
    return model, summary


def _curated(config: KeelConfig, home: Path, principal: Principal) -> tuple[MemoryStore, MemoryTool] | None:
    m = config.memory
    if not (m.memory_enabled or m.user_profile_enabled):
        return None
    store = curated_store(config, home, principal)
    return store, MemoryTool(store)


def _memory_warnings(store: MemoryStore) -> list[str]:
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


async def _open_manager(
    stack: AsyncExitStack,
    config: KeelConfig,
    *,
    home: Path,
    first_id: str,
    agent_context: AgentContext,
    provider: MemoryProvider | None,
    principal: Principal,
    ref: _SessionRef,
) -> MemoryManager:
    m = config.memory
    # Learning (semantic) runs model calls inside sync_turn: bound hooks by its own limit.
    bound = max(30.0, m.semantic.learn_timeout_s) if m.provider == "semantic" else 30.0
    manager = MemoryManager(
        _Builtin(), clock=time.monotonic, recall_wait_s=config.recall.wait_s, call_timeout_s=bound
    )
    if agent_context == "subagent":
        pass  # subagents run without external providers; the parent hears `on_delegation`
    elif provider is not None:
        manager.add_provider(provider)
    elif m.provider == "holographic":
        h = m.holographic
        manager.add_provider(
            HolographicProvider(
                db_path=h.db_path,
                hrr_dim=h.hrr_dim,
                default_trust=h.default_trust,
                min_trust=h.min_trust,
                prefetch_limit=h.prefetch_limit,
            )
        )
    elif m.provider == "semantic":
        semantic = semantic_provider(config, send=ref.send)
        reason = semantic.unavailable_reason()
        if reason is not None:
            raise ConfigError(f"memory.provider is 'semantic' but {reason}; or set memory.provider: none")
        manager.add_provider(semantic)
    await manager.initialize(
        first_id,
        agent_context=agent_context,
        home=home,
        platform=config.agent.platform,
        user_id=principal.user_id,
    )
    stack.push_async_callback(manager.shutdown)
    return manager


def _tools(
    config: KeelConfig,
    *,
    curated: tuple[MemoryStore, MemoryTool] | None,
    db: SessionStore,
    skills: SkillLibrary | None,
    shared_skills: SkillLibrary | None,
    manager: MemoryManager,
    ref: _SessionRef,
    principal: Principal,
) -> ToolRegistry:
    registry = ToolRegistry(timeout_s=config.limits.tool_timeout_s)
    if curated is not None:
        schema = memory_tool_schema(load_text("tool_memory"))
        registry.add(memory_tool(curated[1], schema, manager=manager, session_id=ref.current_id))
    if config.session_search.enabled:
        ss = config.session_search

        async def summarize(topic: str, transcript: str) -> str:
            prompt = load_text("search_summary").format(topic=topic, transcript=transcript)
            request = ModelRequest(system="", messages=(Message("user", prompt),), purpose="search")
            assert ref.session is not None  # tools run only inside turns
            reply, _ = await ref.session.calls.send(request)
            return reply.message.content

        search = SessionSearchTool(
            db,
            current_session_id=ref.current_id,
            summarizer=summarize,
            summarize=ss.summarize,
            max_concurrency=ss.max_concurrency,
            default_limit=ss.default_limit,
            user_ids=session_user_ids(config, principal),
        )
        registry.add(json_tool(session_search_schema(load_text("tool_session_search")), search.handle))
    if skills is not None:
        shared = shared_skills
        registry.add(
            json_tool(
                skills_list_schema(load_text("tool_skills_list")), SkillsListTool(skills, shared=shared)
            )
        )
        registry.add(
            json_tool(skill_view_schema(load_text("tool_skill_view")), SkillViewTool(skills, shared=shared))
        )
        registry.add(
            json_tool(
                skill_manage_schema(load_text("tool_skill_manage")), SkillManageTool(skills, shared=shared)
            )
        )
    for tool in provider_tools(manager):
        registry.add(tool)
    return registry


def _skills(config: KeelConfig, home: Path, principal: Principal) -> SkillLibrary | None:
    if not config.skills.enabled:
        return None
    return skill_library(config, home, principal)


def _trace(
    config: KeelConfig, home: Path, principal: Principal, trace_path: Path | None, first_id: str
) -> TraceWriter | None:
    if not config.traces.enabled:
        return None
    return TraceWriter(trace_path or trace_dir(config, home, principal) / f"{first_id}.jsonl")


def _spawner(
    config: KeelConfig,
    *,
    model: ModelClient,
    home: Path,
    principal: Principal,
    db: SessionStore,
    tokenizer: Tokenizer,
    cwd: Path | None,
    today: Callable[[], date],
) -> Spawn:
    """How a session starts a subagent: a fresh session on the same model and principal, as `subagent`."""

    async def spawn(task: str) -> tuple[str, str]:
        async with open_session(
            config,
            model=model,
            home=home,
            tokenizer=tokenizer,
            source="subagent",
            cwd=cwd,
            today=today,
            agent_context="subagent",
            user_id=principal.user_id,
            workspace=principal.workspace,
            session_store=db,
        ) as child:
            async with child.run_turn(task) as events:
                ended = [ev async for ev in events if isinstance(ev, TurnEnded)]
            return (ended[-1].final_text if ended else ""), child.session_id

    return spawn


@asynccontextmanager
async def open_session(
    config: KeelConfig,
    *,
    model: ModelClient | None = None,
    home: Path | None = None,
    tokenizer: Tokenizer | None = None,
    environ: Mapping[str, str] | None = None,
    trace_path: Path | None = None,
    source: str = "cli",
    cwd: Path | None = None,
    today: Callable[[], date] = date.today,
    agent_context: AgentContext = "primary",
    provider: MemoryProvider | None = None,
    handles: list[SessionHandles] | None = None,
    user_id: str | None = None,
    workspace: str | None = None,
    session_store: SessionStore | None = None,
) -> AsyncIterator[Session]:
    """Open a session as the config describes; close everything on exit.

    Args:
        model: a client to use instead of the configured one (tests pass a ScriptedModel).
        home: the keel home (default: config `home`, `$KEEL_HOME`, `~/.keel`).
        tokenizer: for prompt-size estimates (default: the config's `model.tokenizer`).
        trace_path: where request traces go (default: `<home>/traces/<session-id>.jsonl`).
        source: recorded on the session row (`cli`, `demo`, `experiment`, ...).
        cwd: where context files are discovered (default: config `prompt.cwd`, else the
            process working directory).
        agent_context: why this agent runs (`primary`; `subagent` or `cron` keep external
            memory providers from writing what this run says).
        provider: an external memory provider to use instead of the one `memory.provider` names.
        handles: if given, receives the parts built (for commands that need the store or db).
        user_id: the user this session runs for (default: config `scope.user`, else the
            deprecated `memory.user_id`, else the default user): their USER.md, sessions,
            provider data and traces.
        workspace: the workspace (default: config `scope.workspace`, else the user's own):
            its MEMORY.md and skills.
        session_store: an open session store to record into and search, shared by many
            sessions of one process (a server); the caller opens and closes it. Default: the
            session opens the configured store itself.

    Raises:
        ConfigError, LocalModelError: the configuration or the embedded model is unusable.
        ModelError, SessionError: raised from the block as themselves, never as a group.
    """
    request = _OpenRequest(
        model=model,
        home=home,
        tokenizer=tokenizer,
        environ=environ,
        trace_path=trace_path,
        source=source,
        cwd=cwd,
        today=today,
        agent_context=agent_context,
        provider=provider,
        handles=handles,
        user_id=user_id,
        workspace=workspace,
        session_store=session_store,
    )
    with single_error():
        async with _open(config, request) as session:
            yield session


@dataclass(frozen=True, slots=True)
class _OpenRequest:
    """`open_session`'s arguments past the config, as one value for the steps below."""

    model: ModelClient | None
    home: Path | None
    tokenizer: Tokenizer | None
    environ: Mapping[str, str] | None
    trace_path: Path | None
    source: str
    cwd: Path | None
    today: Callable[[], date]
    agent_context: AgentContext
    provider: MemoryProvider | None
    handles: list[SessionHandles] | None
    user_id: str | None
    workspace: str | None
    session_store: SessionStore | None


@dataclass(frozen=True, slots=True)
class _Parts:
    """What the steps opened, before the Session that holds them exists."""

    home: Path
    principal: Principal
    model: ModelClient
    summary_model: ModelClient | None
    tokenizer: Tokenizer
    curated: tuple[MemoryStore, MemoryTool] | None
    db: SessionStore
    manager: MemoryManager
    skills: SkillLibrary | None
    shared_skills: SkillLibrary | None
    registry: ToolRegistry
    trace: TraceWriter | None


async def _open_parts(
    stack: AsyncExitStack,
    config: KeelConfig,
    req: _OpenRequest,
    *,
    home: Path,
    principal: Principal,
    ref: _SessionRef,
) -> _Parts:
    """Every step but the session itself, in order; each closes with `stack`."""
    model, summary_model = req.model, None
    if model is None:
        env = os.environ if req.environ is None else req.environ
        model, summary_model = await _open_models(stack, config, home=home, env=env, ref=ref)
    tokenizer = req.tokenizer or await load_tokenizer(config.model.tokenizer)
    curated = _curated(config, home, principal)
    db = req.session_store
    if db is None:
        db = await stack.enter_async_context(config.sessions.open_store(home))
    manager = await _open_manager(
        stack,
        config,
        home=home,
        first_id=ref.first_id,
        agent_context=req.agent_context,
        provider=req.provider,
        principal=principal,
        ref=ref,
    )
    skills = _skills(config, home, principal)
    shared_skills = None if skills is None else shared_skill_library(config, home, principal)
    registry = _tools(
        config,
        curated=curated,
        db=db,
        skills=skills,
        shared_skills=shared_skills,
        manager=manager,
        ref=ref,
        principal=principal,
    )
    trace = _trace(config, home, principal, req.trace_path, ref.first_id)
    return _Parts(
        home,
        principal,
        model,
        summary_model,
        tokenizer,
        curated,
        db,
        manager,
        skills,
        shared_skills,
        registry,
        trace,
    )


def _new_session(
    config: KeelConfig, req: _OpenRequest, parts: _Parts, *, tg: anyio.abc.TaskGroup, ref: _SessionRef
) -> Session:
    gather = static_slot_gatherer(
        config,
        home=parts.home,
        tools=parts.registry,
        manager=parts.manager,
        skills=parts.skills,
        shared_skills=parts.shared_skills,
        model_name=parts.model.model_name,
        today=req.today,
        cwd=req.cwd or config.prompt.cwd or Path.cwd(),
    )
    curated = parts.curated
    return Session(
        settings=SessionSettings.from_config(config),
        model=parts.model,
        summary_model=parts.summary_model,
        counter=TokenCounter(parts.tokenizer),
        tools=parts.registry,
        assembler=PromptAssembler(order=config.prompt.slot_order, static=gather, tokenizer=parts.tokenizer),
        memory=None
        if curated is None
        else StoreMemory(*curated, shared=shared_memory_store(config, parts.home, parts.principal)),
        recorder=DbRecorder(parts.db, source=req.source, user_id=parts.principal.session_user),
        providers=ManagerHooks(parts.manager, tg, warm_wait_s=config.recall.warm_wait_s),
        background=tg,
        trace=parts.trace,
        new_id=ref.next_id,
        today=req.today,
        spawn=_spawner(
            config,
            model=parts.model,
            home=parts.home,
            principal=parts.principal,
            db=parts.db,
            tokenizer=parts.tokenizer,
            cwd=req.cwd,
            today=req.today,
        ),
    )


@asynccontextmanager
async def _open(config: KeelConfig, req: _OpenRequest) -> AsyncIterator[Session]:
    env = os.environ if req.environ is None else req.environ
    # First, so an unsafe id is refused before anything is created on disk.
    principal = resolve_principal(config, user_id=req.user_id, workspace=req.workspace)
    home = (req.home or config.resolved_home(env)).expanduser()
    await anyio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    ref = _SessionRef(new_session_id())
    async with AsyncExitStack() as stack:
        parts = await _open_parts(stack, config, req, home=home, principal=principal, ref=ref)
        tg = await stack.enter_async_context(anyio.create_task_group())
        session = _new_session(config, req, parts, tg=tg, ref=ref)
        ref.session = session
        if req.handles is not None:
            store = None if parts.curated is None else parts.curated[0]
            trace_path = None if parts.trace is None else parts.trace.path
            req.handles.append(
                SessionHandles(home, principal, store, parts.db, parts.skills, parts.manager, trace_path)
            )
        await session.start()
        for warning in [] if parts.curated is None else _memory_warnings(parts.curated[0]):
            session.warn(warning)
        try:
            yield session
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()
            # Let background provider work (sync, prefetch) finish, but not forever.
            tg.cancel_scope.deadline = anyio.current_time() + 5.0
