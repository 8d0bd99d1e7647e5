"""The tools keel itself gives the agent: memory, session_search, the skills tools, and the
external memory provider's tools — registered in that order (the order is part of the
cached prefix).

They are added after the model calls, the transcript and the manager exist, so each is
handed the real object it calls (no callback into a session still being built).
"""

from __future__ import annotations

from harness.config import KeelConfig
from harness.loop.calls import ModelCalls
from harness.loop.provenance import transcript_provenance
from harness.loop.transcript import Transcript
from harness.tools import ToolRegistry
from harness.types import Message, ModelRequest
from harness.wiring.memory_bridge import json_tool, memory_tool, provider_tools
from harness.wiring.scoped import session_user_ids
from memory import (
    MemoryManager,
    MemoryTool,
    Principal,
    SessionSearchTool,
    SessionStore,
    memory_tool_schema,
    session_search_schema,
)
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

__all__ = ["add_builtin_tools"]


def _session_search(
    config: KeelConfig, db: SessionStore, *, calls: ModelCalls, transcript: Transcript, principal: Principal
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
    )


def _add_skills(registry: ToolRegistry, skills: SkillLibrary, shared: SkillLibrary | None) -> None:
    registry.add(
        json_tool(skills_list_schema(load_text("tool_skills_list")), SkillsListTool(skills, shared=shared))
    )
    registry.add(
        json_tool(skill_view_schema(load_text("tool_skill_view")), SkillViewTool(skills, shared=shared))
    )
    registry.add(
        json_tool(skill_manage_schema(load_text("tool_skill_manage")), SkillManageTool(skills, shared=shared))
    )


def add_builtin_tools(
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
) -> None:
    """Register keel's own tools in `registry`, as the config enables them."""
    if tool is not None:
        schema = memory_tool_schema(load_text("tool_memory"))
        registry.add(
            memory_tool(
                tool,
                schema,
                manager=manager,
                provenance=lambda: transcript_provenance(transcript.messages),
                telemetry=calls.telemetry,
            )
        )
    if config.session_search.enabled:
        search = _session_search(config, db, calls=calls, transcript=transcript, principal=principal)
        registry.add(json_tool(session_search_schema(load_text("tool_session_search")), search.handle))
    if skills is not None:
        _add_skills(registry, skills, shared_skills)
    for t in provider_tools(manager):
        registry.add(t)
