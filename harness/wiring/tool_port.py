"""The port that joins the tools (`harness.tools`) to a session being built.

keel's own tools are handed the real objects they call — the model calls, the transcript,
the manager — which exist only once `open_session` has built them; this module makes the
handlers from those objects and runs the one registration (`harness.tools.register`), so
the session and `keel tools list` register the same tools in the same order. For the
listing, `listing_manager` builds the manager with the configured provider and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from functools import partial

import anyio
from pydantic import JsonValue

from harness.config import KeelConfig
from harness.loop.calls import ModelCalls
from harness.loop.provenance import transcript_provenance
from harness.loop.transcript import Transcript
from harness.telemetry import Telemetry
from harness.tools import ToolFunction, ToolRegistry
from harness.tools.builtin import BuiltinHandlers, JsonHandler, WriteGuard, guarded, memory_handler
from harness.tools.register import register_tools
from harness.types import Message, ModelReply, ModelRequest
from harness.wiring.dense import start_dense
from harness.wiring.scoped import provenance_gate, session_user_ids
from harness.wiring.semantic import semantic_provider
from harness.wiring.steps import new_manager
from memory import MemoryManager, MemoryTool, Principal, SessionSearchTool, SessionStore
from memory.gate import ProvenanceGate, written_texts
from memory.provenance import TurnProvenance
from memory.providers.holographic import HolographicProvider
from memory.sessions import DenseIndex
from memory.skills import SkillLibrary, SkillManageTool, SkillsListTool, SkillViewTool
from prompts import load_text

__all__ = ["add_session_tools", "listing_manager", "write_guard"]


def _session_search(
    config: KeelConfig,
    db: SessionStore,
    *,
    calls: ModelCalls,
    transcript: Transcript,
    principal: Principal,
    dense: DenseIndex | None = None,
) -> SessionSearchTool:
    ss = config.session_search

    async def summarize(topic: str, text: str) -> str:
        prompt = load_text("search_summary").format(topic=topic, transcript=text)
        request = ModelRequest(system="", messages=(Message("user", prompt),), purpose="search")
        # A summary, like compression's: `compression.summary_model` answers it when set.
        reply, _ = await calls.send(request, summary=True)
        return reply.message.content

    return SessionSearchTool(
        db,
        current_session_id=lambda: transcript.session_id,
        summarizer=summarize,
        summarize=ss.summarize,
        max_concurrency=ss.max_concurrency,
        default_limit=ss.default_limit,
        user_ids=session_user_ids(config, principal),
        # A page must fit the transcript's cap on tool results with room for the reply's fields.
        page_chars=config.limits.tool_result_chars - 600,
        dense=dense,
    )


def _traced_search(handler: JsonHandler, telemetry: Telemetry) -> JsonHandler:
    """`session_search` as a `search_memory` span over the `sessions` store (with the number
    of results it found)."""

    async def run(arguments: JsonValue) -> str:
        query = arguments.get("query") if isinstance(arguments, dict) else None
        with telemetry.memory(
            "search_memory", store="sessions", query=query if isinstance(query, str) else None
        ) as span:
            reply = await handler(arguments)
            if telemetry.enabled:
                span.found(_result_count(reply))
        return reply

    return run


def _result_count(reply: str) -> int:
    try:
        payload = json.loads(reply)
    except json.JSONDecodeError:
        return 0
    count = payload.get("count") if isinstance(payload, dict) else None
    return count if isinstance(count, int) else 0


async def add_session_tools(
    stack: AsyncExitStack,
    registry: ToolRegistry,
    config: KeelConfig,
    *,
    tool: MemoryTool | None,
    db: SessionStore,
    skills: SkillLibrary | None,
    shared_skills: SkillLibrary | None,
    manager: MemoryManager,
    calls: ModelCalls,
    transcript: Transcript,
    principal: Principal,
    functions: Sequence[ToolFunction],
    environ: Mapping[str, str],
    warn: Callable[[str], None],
) -> None:
    """Register the session's tools: keel's own (as the config enables them), then the user's and MCP servers'.

    Every tool that writes memory — `memory` (and the flush and review through it),
    `skill_manage`, the provider's `fact_store` / `semantic_save` — passes one provenance gate
    (`memory.gate`) against the transcript's untrusted text and the descriptions of the tools
    keel did not write.
    """

    def provenance() -> TurnProvenance:
        return transcript_provenance(transcript.messages, described=_described(registry))

    guard = write_guard(tool.gate if tool is not None else provenance_gate(config), provenance)
    search = None
    if config.session_search.enabled:
        dense = await start_dense(stack, config, db)
        search = _session_search(
            config, db, calls=calls, transcript=transcript, principal=principal, dense=dense
        )
    handlers = BuiltinHandlers(
        memory=None
        if tool is None
        else memory_handler(
            tool,
            manager=manager,
            provenance=provenance,
            telemetry=calls.telemetry,
        ),
        session_search=None if search is None else _traced_search(search.handle, calls.telemetry),
        skills=None
        if skills is None
        else (
            SkillsListTool(skills, shared=shared_skills),
            SkillViewTool(skills, shared=shared_skills),
            guarded("skill_manage", SkillManageTool(skills, shared=shared_skills), guard),
        ),
        provider=manager,
        write_guard=guard,
    )
    await register_tools(
        stack, registry, config, builtin=handlers, functions=functions, environ=environ, warn=warn
    )


def _described(registry: ToolRegistry) -> list[str]:
    """The descriptions of the registered tools keel did not write (plug-ins', MCP servers')."""
    origins = dict(registry.origins())
    return [
        spec.description
        for spec in registry.specs()
        if not (
            origins.get(spec.name, "") == "keel" or origins.get(spec.name, "").startswith("memory provider")
        )
    ]


def write_guard(gate: ProvenanceGate, provenance: Callable[[], TurnProvenance]) -> WriteGuard:
    """The gate as a guard of the tools with no confirmation flow: a derived write is refused
    with a reason the model can act on."""

    async def guard(name: str, arguments: Mapping[str, JsonValue]) -> str | None:
        texts = written_texts(name, arguments)
        if not texts:
            return None
        judge = partial(gate.judge, texts, provenance(), can_hold=False)
        verdict = await anyio.to_thread.run_sync(judge)  # blocking: embeddings
        if verdict.action == "allow":
            return None
        return json.dumps({"success": False, "error": verdict.refusal(f"this {name} text")})

    return guard


def listing_manager(config: KeelConfig) -> MemoryManager:
    """The manager a session of `config` would route provider tools through, for listing them only."""
    m = config.memory
    manager = new_manager(config)
    if m.provider == "holographic":
        manager.add_provider(HolographicProvider(db_path=m.holographic.db_path))
    elif m.provider == "semantic":

        async def never(request: ModelRequest) -> ModelReply:  # listing only: no model call is made
            raise AssertionError("no model call while listing tools")

        manager.add_provider(semantic_provider(config, send=never))
    return manager
