"""`open_session`: everything a session needs, built from one config and torn down in order.

```python
async with open_session(config) as session:
    async with session.run_turn("hello") as events:
        async for ev in events:
            ...
```

It opens (in this order, and closes in reverse): the model (starting the embedded model
when the config says `local`), the tokenizer, the curated store and its `memory` tool, the
session store `state.db` with `session_search`, the skill library and its tools, the memory
manager with the optional external provider, the trace file, and a task group that owns
every background task of the session.
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
import anyio.to_thread

from harness.config import KeelConfig
from harness.loop.memory_bridge import (
    DbRecorder,
    ManagerHooks,
    StoreMemory,
    json_tool,
    memory_tool,
    provider_tools,
)
from harness.loop.session import Session, new_session_id
from harness.loop.system_prompt import PromptAssembler, StaticSlots
from harness.models.base import ModelClient
from harness.models.factory import open_model
from harness.tokens import TokenCounter, Tokenizer, load_tokenizer
from harness.tools import ToolRegistry
from harness.trace import TraceWriter
from harness.types import Message, ModelRequest
from memory import (
    MemoryManager,
    MemoryProvider,
    MemoryStore,
    MemoryTool,
    memories_dir,
    memory_tool_schema,
    scan,
)
from memory.providers.holographic import HolographicProvider
from memory.sessions.search import SessionSearchTool, session_search_schema
from memory.sessions.store import SessionDB
from memory.skills import (
    SkillLibrary,
    SkillManageTool,
    SkillsListTool,
    SkillViewTool,
    load_skills_index,
    skill_manage_schema,
    skill_view_schema,
    skills_list_schema,
)
from prompts._text import load_text
from prompts.context_files import discover_context_files, render_context_files
from prompts.session_line import session_line
from prompts.slots import SlotId

__all__ = ["SessionHandles", "open_session", "static_slot_gatherer"]


class _Builtin(MemoryProvider):
    """The built-in layer as seen by the manager: its tool is registered by the harness."""

    name = "builtin"


@dataclass(frozen=True, slots=True)
class SessionHandles:
    """The parts `open_session` built, for callers that need them (CLI, experiments)."""

    home: Path
    store: MemoryStore | None
    db: SessionDB
    skills: SkillLibrary | None
    manager: MemoryManager
    trace_path: Path | None


def _context_scan(text: str) -> list[str]:
    return [f.id for f in scan(text, "context")]


def static_slot_gatherer(
    config: KeelConfig,
    *,
    home: Path,
    tools: ToolRegistry,
    manager: MemoryManager,
    skills: SkillLibrary | None,
    model_name: str,
    today: Callable[[], date],
    cwd: Path,
) -> StaticSlots:
    """The function that gathers every non-memory slot (runs at each prompt build)."""

    async def gather() -> Mapping[SlotId, str]:
        soul = home / "SOUL.md"

        def read_identity() -> tuple[str, bool]:
            if soul.is_file():
                text = soul.read_text(encoding="utf-8-sig", errors="replace").strip()
                hits = _context_scan(text)
                if hits:
                    return (
                        f"[BLOCKED: SOUL.md matched threat pattern(s) {', '.join(hits)}; not loaded.]\n\n"
                        + load_text("identity")
                    ), True
                if text:
                    return text, True
            return load_text("identity"), False

        identity, soul_used = await anyio.to_thread.run_sync(read_identity)
        guidance = [
            load_text(f"guidance_{name}")
            for name in ("memory", "session_search", "skills")
            if (name == "skills" and "skill_view" in tools) or name in tools
        ]
        context = ""
        if config.prompt.context_files:
            include_soul = not (soul_used and (cwd / "SOUL.md").resolve() == soul.resolve())
            files = await anyio.to_thread.run_sync(
                lambda: discover_context_files(
                    cwd,
                    scan=_context_scan,
                    max_chars=config.prompt.context_file_max_chars,
                    include_soul=include_soul,
                )
            )
            context = render_context_files(files)
        skills_index = ""
        if skills is not None and "skill_view" in tools:
            skills_index = await load_skills_index(skills, load_text("skills_index"))
        return {
            "identity": identity,
            "tool_guidance": "\n\n".join(guidance),
            "provider": manager.system_prompt_block(),
            "system_message": config.agent.system_message,
            "skills": skills_index,
            "context_files": context,
            "session": session_line(today(), platform=config.agent.platform, model=model_name),
        }

    return gather


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
    handles: list[SessionHandles] | None = None,
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
        handles: if given, receives the parts built (for commands that need the store or db).

    Raises:
        ConfigError, LocalModelError: the configuration or the embedded model is unusable.
    """
    env = os.environ if environ is None else environ
    home = (home or config.resolved_home(env)).expanduser()
    await anyio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    cwd = cwd or config.prompt.cwd or Path.cwd()
    first_id = new_session_id()

    async with AsyncExitStack() as stack:
        if model is None:
            model = await stack.enter_async_context(open_model(config, home=home, environ=env))
        tokenizer = tokenizer or await load_tokenizer(config.model.tokenizer)
        mem_cfg = config.memory

        store: MemoryStore | None = None
        mtool: MemoryTool | None = None
        if mem_cfg.memory_enabled or mem_cfg.user_profile_enabled:
            store = MemoryStore(
                memories_dir(home, user_id=mem_cfg.user_id),
                memory_char_limit=mem_cfg.memory_char_limit,
                user_char_limit=mem_cfg.user_char_limit,
                policy=mem_cfg.snapshot_policy,
                overflow=mem_cfg.overflow,
                lock_timeout_s=mem_cfg.lock_timeout_s,
                memory_enabled=mem_cfg.memory_enabled,
                user_profile_enabled=mem_cfg.user_profile_enabled,
            )
            mtool = MemoryTool(store)

        db = await SessionDB.open(home / "state.db")
        stack.push_async_callback(db.aclose)

        manager = MemoryManager(_Builtin(), clock=time.monotonic, recall_wait_s=config.recall.wait_s)
        if mem_cfg.provider == "holographic":
            h = mem_cfg.holographic
            manager.add_provider(
                HolographicProvider(
                    db_path=h.db_path,
                    hrr_dim=h.hrr_dim,
                    default_trust=h.default_trust,
                    min_trust=h.min_trust,
                    prefetch_limit=h.prefetch_limit,
                )
            )
        await manager.initialize(
            first_id,
            agent_context="primary",
            home=home,
            platform=config.agent.platform,
            user_id=mem_cfg.user_id,
        )
        stack.push_async_callback(manager.shutdown)

        skills: SkillLibrary | None = None
        if config.skills.enabled:
            skills = SkillLibrary(home / "skills", guard_agent_created=config.skills.guard_agent_created)

        tg = await stack.enter_async_context(anyio.create_task_group())
        ids = iter([first_id])
        session_ref: list[Session] = []

        def next_id() -> str:
            return next(ids, None) or new_session_id()

        def current_id() -> str:
            return session_ref[0].session_id if session_ref else first_id

        registry = ToolRegistry(timeout_s=config.limits.tool_timeout_s)
        if mtool is not None:
            registry.add(
                memory_tool(
                    mtool,
                    memory_tool_schema(load_text("tool_memory")),
                    manager=manager,
                    session_id=current_id,
                )
            )
        if config.session_search.enabled:
            ss = config.session_search

            async def summarize(topic: str, transcript: str) -> str:
                prompt = load_text("search_summary").format(topic=topic, transcript=transcript)
                request = ModelRequest(system="", messages=(Message("user", prompt),), purpose="search")
                reply, _ = await session_ref[0].send_request(request, slots=[])
                return reply.message.content

            search = SessionSearchTool(
                db,
                current_session_id=current_id,
                summarizer=summarize,
                summarize=ss.summarize,
                max_concurrency=ss.max_concurrency,
                default_limit=ss.default_limit,
            )
            registry.add(json_tool(session_search_schema(load_text("tool_session_search")), search.handle))
        if skills is not None:
            registry.add(json_tool(skills_list_schema(load_text("tool_skills_list")), SkillsListTool(skills)))
            registry.add(json_tool(skill_view_schema(load_text("tool_skill_view")), SkillViewTool(skills)))
            registry.add(
                json_tool(skill_manage_schema(load_text("tool_skill_manage")), SkillManageTool(skills))
            )
        for tool in provider_tools(manager):
            registry.add(tool)

        trace: TraceWriter | None = None
        if config.traces.enabled:
            trace_dir = config.traces.dir or home / "traces"
            trace = TraceWriter(trace_path or trace_dir / f"{first_id}.jsonl")

        gather = static_slot_gatherer(
            config,
            home=home,
            tools=registry,
            manager=manager,
            skills=skills,
            model_name=model.model_name,
            today=today,
            cwd=cwd,
        )
        session = Session(
            config=config,
            model=model,
            counter=TokenCounter(tokenizer),
            tools=registry,
            assembler=PromptAssembler(order=config.prompt.slot_order, static=gather, tokenizer=tokenizer),
            memory=StoreMemory(store, mtool) if store is not None and mtool is not None else None,
            recorder=DbRecorder(db, source=source),
            providers=ManagerHooks(manager, tg),
            background=tg,
            trace=trace,
            new_id=next_id,
            today=today,
        )
        session_ref.append(session)
        if handles is not None:
            handles.append(
                SessionHandles(
                    home=home,
                    store=store,
                    db=db,
                    skills=skills,
                    manager=manager,
                    trace_path=None if trace is None else trace.path,
                )
            )
        await session.start()
        try:
            yield session
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()
            # Let background provider work (sync, prefetch) finish, but not forever.
            tg.cancel_scope.deadline = anyio.current_time() + 5.0
