"""The memory-provider contract: one base class whose hooks all default to doing nothing.

A provider is a source of long-term memory beside the built-in curated store: it may put a
static block in the system prompt, recall text for each turn, expose tools, and hear about
the session's lifecycle. Only `name` is required. Every other hook has a no-op default, so a
hook added to this class later never breaks a provider written before it existed — the
manager calls the new hook and the old provider inherits the default.

Hooks that may do I/O are `async`. A provider must not block the event loop: SQLite, files
and CPU-heavy work go through `anyio.to_thread.run_sync`. Providers may raise; the manager
(`memory.providers.manager.MemoryManager`) isolates every call, logs the failure and carries on.
"""

# The empty hooks below are deliberate no-op defaults, not forgotten abstract methods.
# ruff: noqa: B027

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import JsonValue

__all__ = [
    "AgentContext",
    "MemoryProvider",
    "MemoryWrite",
    "ProviderContext",
    "SwitchReason",
    "TurnMessage",
    "WriteAction",
    "WriteTarget",
]

AgentContext: TypeAlias = Literal["primary", "subagent", "cron", "flush"]
"""Why an agent runs. Only `primary` may write to external memory: a cron job's or a
subagent's transcript must not reshape what the provider believes about the user."""

SwitchReason: TypeAlias = Literal["compression", "new", "resume", "branch"]
"""Why the session id changed without tearing the providers down."""

WriteAction: TypeAlias = Literal["add", "replace", "remove"]
WriteTarget: TypeAlias = Literal["memory", "user"]


@dataclass(frozen=True, slots=True)
class TurnMessage:
    """One message of a transcript handed to providers (session end, pre-compress)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    kind: Literal["turn_message"] = "turn_message"


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """A write the built-in curated store has already committed to disk.

    Attributes:
        action: what the store did.
        target: which file (`memory` → MEMORY.md, `user` → USER.md).
        content: the new entry text (empty for `remove`).
        old_text: the substring the model used to locate the entry (`replace`/`remove`).
        previous_content: the full entry as it was before a `replace`/`remove`, taken
            from the store's committed result, never from the model's argument.
        session_id: the session that made the write.
    """

    action: WriteAction
    target: WriteTarget
    content: str
    old_text: str | None
    previous_content: str | None
    session_id: str
    kind: Literal["memory_write"] = "memory_write"


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """The session a provider is initialized for: one value every provider receives.

    Attributes:
        session_id: the session starting now.
        agent_context: why the agent runs; skip writes unless it is `primary`.
        home: the keel home directory (the place for on-disk state).
        platform: where the user talks to the agent (`cli`, `cron`, ...).
        parent_session_id: the parent's id for a child session, else None.
        user_id: the user when keel scopes memory per user, else None.
    """

    session_id: str
    agent_context: AgentContext
    home: Path
    platform: str
    parent_session_id: str | None = None
    user_id: str | None = None
    kind: Literal["provider_context"] = "provider_context"


class MemoryProvider(ABC):
    """Base class for memory providers; subclass it and define `name`.

    Override only the hooks you need. The manager calls the hooks in this order over a
    session: `is_available` (at registration), `tool_schemas`, `initialize`,
    `system_prompt_block`, then per turn `on_turn_start` → `prefetch` → tool calls →
    `sync_turn` and `queue_prefetch` in the background; around compression
    `on_pre_compress` and `on_session_switch`; at the end `on_session_end` and `shutdown`.
    """

    @property
    @abstractmethod
    def name(self) -> str:
        """A short, unique id such as `builtin` or `holographic`.

        A plain class attribute (`name = "mine"`) satisfies this.
        """

    def is_available(self) -> bool:
        """Whether the provider can run here: config and dependencies only, no network.

        Called at registration; it must be fast. A provider that says no is not registered.
        """
        return True

    async def initialize(self, context: ProviderContext) -> None:
        """Open connections and create resources for the session `context` describes."""

    def system_prompt_block(self) -> str:
        """Static text for the system prompt, or "" for none.

        It is built into the cached prefix once per session: it must not change from turn
        to turn (no counters, no clocks). Per-turn recall belongs in `prefetch`.
        """
        return ""

    async def prefetch(self, query: str, *, session_id: str) -> str:
        """Recalled text relevant to `query` for the current turn, or "" for nothing."""
        return ""

    async def queue_prefetch(self, query: str, *, session_id: str) -> None:
        """Warm whatever cache `prefetch` will read on the next turn."""

    async def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str) -> None:
        """Persist a completed turn (only called for `primary` agents)."""

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        """Tools in OpenAI function shape: `{"name", "description", "parameters"}`."""
        return []

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        """Run one of this provider's tools; returns JSON text (errors included)."""
        return json.dumps({"error": f"tool {name!r} is not provided by memory provider {self.name!r}"})

    async def on_turn_start(self, turn: int, message: str) -> None:
        """A user turn begins; `turn` counts from 1 within the session."""

    async def on_session_end(self, messages: Sequence[TurnMessage]) -> None:
        """A real session boundary (exit, new conversation); only for `primary` agents."""

    async def on_pre_compress(self, messages: Sequence[TurnMessage]) -> str:
        """The conversation is about to be compressed; returned text joins the summary prompt."""
        return ""

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        """The session id rotated without tearing the provider down."""

    async def on_memory_write(self, write: MemoryWrite) -> None:
        """The built-in store committed a write; mirror it if useful (only for `primary`)."""

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        """A subagent finished `task` with `result`; told to the parent's providers."""

    async def shutdown(self) -> None:
        """Flush queues and close connections."""
