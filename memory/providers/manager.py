"""The memory manager: the built-in provider plus at most one external one, behind one façade.

The session talks to memory only through `MemoryManager`. It registers the built-in curated
store first and at most one external provider (a second is refused: two recall sources would
double the tokens on every turn and disagree with each other), routes tool calls by name,
and fans every lifecycle hook out to the providers with per-provider isolation — a provider
that raises, hangs or returns garbage is logged, recorded in `warnings` and skipped; it never
takes the session down.

Background work belongs to the session. `start_prefetch`, `queue_prefetch` and `sync_turn`
start tasks in the `anyio.abc.TaskGroup` the caller passes in, so they are cancelled with the
session and nothing outlives it. Recall results carry the turn they were computed for; `recall`
only ever returns results for the turn it is asked about, waits for them at most
`recall_wait_s`, and a provider whose previous prefetch is still running is skipped rather
than queued behind itself.

Each external provider sits behind a circuit breaker (`memory._breaker`). `agent_context`
gates writes: only a `primary` agent calls `sync_turn`, `on_memory_write` and
`on_session_end` on externals.

The manager is a façade over three concerns, one private module each: `_fanout.py` (the
providers and the one isolated way to call a hook), `_routes.py` (which provider owns which
tool) and `_rounds.py` (background prefetch rounds and the bounded recall).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

import anyio
import anyio.abc
from pydantic import JsonValue

from memory.curated import MEMORY_TOOL_NAME
from memory.providers import contract
from memory.providers._breaker import BreakerState, CircuitBreaker
from memory.providers._fanout import Entry, Fanout
from memory.providers._rounds import PrefetchRounds, Recall
from memory.providers._routes import ToolRoutes
from memory.providers._trivial import is_trivial
from memory.sessions.search import SESSION_SEARCH_TOOL_NAME
from memory.skills import SKILL_TOOL_NAMES

__all__ = ["CORE_TOOL_NAMES", "MemoryManager", "Recall"]

_log = logging.getLogger(__name__)

CORE_TOOL_NAMES: frozenset[str] = frozenset({MEMORY_TOOL_NAME, SESSION_SEARCH_TOOL_NAME, *SKILL_TOOL_NAMES})
"""Tools the harness itself owns; an external provider may not shadow them."""


class MemoryManager:
    """Orchestrates the built-in provider and at most one external provider.

    Args:
        builtin: the provider wrapping the curated store; always first, never paused.
        clock: monotonic seconds, for the circuit breakers.
        recall_wait_s: how long `recall` waits for this turn's prefetches by default.
        breaker_failures: consecutive failures that pause an external provider.
        breaker_pause_s: how long a paused provider is left alone before one trial call.
        shutdown_timeout_s: the bound on each provider's `shutdown`.
        call_timeout_s: the bound on every other provider call (background ones included);
            a call that exceeds it is cancelled and counts as a failure.
        core_tool_names: tool names external providers may not use.
        warn: called with each warning as it happens (they are also kept in `warnings`).
    """

    def __init__(
        self,
        builtin: contract.MemoryProvider,
        *,
        clock: Callable[[], float],
        recall_wait_s: float = 8.0,
        breaker_failures: int = 5,
        breaker_pause_s: float = 120.0,
        shutdown_timeout_s: float = 5.0,
        call_timeout_s: float = 30.0,
        core_tool_names: frozenset[str] = CORE_TOOL_NAMES,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self._clock = clock
        self._recall_wait_s = recall_wait_s
        self._breaker_failures = breaker_failures
        self._breaker_pause_s = breaker_pause_s
        self._shutdown_timeout_s = shutdown_timeout_s
        self._fanout = Fanout(call_timeout_s=call_timeout_s, breaker_pause_s=breaker_pause_s, warn=warn)
        self._tools = ToolRoutes(self._fanout, core_tool_names=core_tool_names)
        self._rounds = PrefetchRounds(self._fanout)
        self._session_id = ""
        self._agent_context: contract.AgentContext = "primary"
        self._initialized = False
        self._closed = False
        entry = Entry(
            provider=builtin, name=_provider_name(builtin) or "builtin", external=False, breaker=None
        )
        self._fanout.entries.append(entry)
        for schema in self._tools.load(entry) or []:
            self._tools.add(entry, schema)

    # ------------------------------------------------------------------ registration

    def add_provider(self, provider: contract.MemoryProvider) -> bool:
        """Register the external provider; False (with a warning) when refused.

        Refused when an external provider is already registered, when the provider says it
        is unavailable, when its name is taken, when its tool schemas cannot be read, or
        after `initialize`. Tools that shadow core tools or another provider's tools are
        dropped individually (first wins).
        """
        name = _provider_name(provider)
        if name is None:
            self._warn(f"memory provider {provider!r} has no usable name; it was not registered")
            return False
        refused = self._refusal(name)
        if refused is not None:
            self._warn(f"memory provider {name!r} was refused: {refused}")
            return False
        try:
            available = provider.is_available()
        except Exception as exc:
            self._warn(f"memory provider {name!r} was refused: is_available() raised {exc!r}")
            return False
        if not available:
            self._warn(f"memory provider {name!r} is not available here; continuing without it")
            return False
        breaker = CircuitBreaker(
            failures=self._breaker_failures, pause_s=self._breaker_pause_s, clock=self._clock
        )
        entry = Entry(provider=provider, name=name, external=True, breaker=breaker)
        # Read the schemas before touching any state, so a provider whose schema call
        # raises leaves the manager exactly as it was.
        schemas = self._tools.load(entry)
        if schemas is None:
            return False
        self._fanout.entries.append(entry)
        for schema in schemas:
            self._tools.add(entry, schema)
        return True

    def _refusal(self, name: str) -> str | None:
        existing = self.external
        if existing is not None:
            return (
                f"{existing!r} is already the external provider and only one may be active; "
                "choose one with memory.provider"
            )
        if self._initialized or self._closed:
            return "register providers before initialize()"
        if name in self.providers:
            return "the name is already registered"
        return None

    @property
    def providers(self) -> tuple[str, ...]:
        """Registered provider names, built-in first."""
        return tuple(e.name for e in self._fanout.entries)

    @property
    def external(self) -> str | None:
        """The external provider's name, if one is registered."""
        return next((e.name for e in self._fanout.entries if e.external), None)

    @property
    def writing(self) -> tuple[str, ...]:
        """Providers still handling a turn (a `sync_turn` holds or awaits their write lock):
        closing the session waits for them, at most the call bound (`call_timeout_s`)."""
        return tuple(
            e.name
            for e in self._fanout.entries
            if e.write_lock.locked() or e.write_lock.statistics().tasks_waiting
        )

    @property
    def call_timeout_s(self) -> float:
        return self._fanout.call_timeout_s

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning so far (the most recent 500), oldest first."""
        return self._fanout.warnings

    @property
    def agent_context(self) -> contract.AgentContext:
        return self._agent_context

    @contextmanager
    def running_as(self, context: contract.AgentContext) -> Iterator[None]:
        """Run a block under another agent context (the compression flush runs as `flush`).

        Writes to external providers are gated on the context, so a flush, a subagent or a
        cron job inside the block cannot reshape what they believe about the user.
        """
        previous = self._agent_context
        self._agent_context = context
        try:
            yield
        finally:
            self._agent_context = previous

    @property
    def session_id(self) -> str:
        return self._session_id

    def breaker_state(self, provider_name: str) -> BreakerState:
        """The circuit-breaker state of a provider (the built-in one is always `closed`)."""
        entry = self._fanout.entry(provider_name)
        return "closed" if entry.breaker is None else entry.breaker.state

    # ------------------------------------------------------------------ tools

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        """Every routed tool in OpenAI function shape, built-in tools first."""
        return self._tools.schemas()

    def tool_owner(self, tool_name: str) -> str | None:
        """The provider that handles `tool_name`, or None."""
        return self._tools.owner(tool_name)

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        """Route a tool call to its provider; always returns JSON text, never raises."""
        return await self._tools.call(name, arguments, closed=self._closed)

    # ------------------------------------------------------------------ recall

    def start_prefetch(
        self, tg: anyio.abc.TaskGroup, *, turn: int, query: str, trivial: bool | None = None
    ) -> None:
        """Start this turn's recall in `tg`; `recall(turn=...)` collects it.

        A trivial message asks nobody. A provider whose previous prefetch is still
        running, or whose breaker is open, is not asked this turn.

        Args:
            trivial: whether `query` is too slight to recall for, when the caller has
                already judged it (the session does, once per turn); None: judged here
                with `is_trivial`.
        """
        if self._closed:
            self._rounds.reset()
            return
        self._rounds.start(
            tg, turn=turn, query=query, session_id=self._session_id, trivial=_judged(query, trivial)
        )

    def has_round(self, turn: int) -> bool:
        """Whether providers were asked for `turn` (after the previous turn, in the background)."""
        return self._rounds.has_round(turn)

    async def recall(self, *, turn: int, wait_s: float | None = None) -> Recall:
        """The recall computed for `turn`, waiting at most `wait_s` (default `recall_wait_s`) for it.

        This is the one bound on the recall wait. Results computed for any other turn are
        never returned. Providers that have not finished in time are listed in `missed`;
        their late results are discarded.
        """
        return await self._rounds.recall(turn=turn, wait_s=self._recall_wait_s if wait_s is None else wait_s)

    def queue_prefetch(self, tg: anyio.abc.TaskGroup, *, query: str, trivial: bool | None = None) -> None:
        """Let providers warm the next turn's recall, in background tasks owned by `tg`.

        Nothing is queued for a trivial `query` (`trivial` as in `start_prefetch`).
        """
        if self._closed or _judged(query, trivial):
            return
        session_id = self._session_id
        for entry in self._fanout.entries:
            if not entry.implements("queue_prefetch"):
                continue
            call = partial(entry.provider.queue_prefetch, query, session_id=session_id)
            tg.start_soon(
                self._fanout.call, entry, "queue_prefetch", call, name=f"queue_prefetch:{entry.name}"
            )

    # ------------------------------------------------------------------ session lifecycle

    async def initialize(self, context: contract.ProviderContext) -> None:
        """Initialize every provider; an external provider that fails is dropped with a warning."""
        self._session_id = context.session_id
        self._agent_context = context.agent_context
        self._initialized = True
        for entry in list(self._fanout.entries):
            outcome = await self._fanout.call(
                entry, "initialize", partial(entry.provider.initialize, context)
            )
            if not outcome.ok and entry.external:
                self._warn(f"memory provider {entry.name!r} did not initialize; continuing without it")
                self._fanout.entries.remove(entry)
                self._tools.drop(entry)

    def system_prompt_block(self) -> str:
        """The external providers' static blocks joined by blank lines (system-prompt slot 2)."""
        blocks: list[str] = []
        for entry in self._fanout.entries:
            if not entry.external:
                continue
            try:
                block = entry.provider.system_prompt_block()
            except Exception as exc:
                self._warn(f"memory provider {entry.name!r} failed in system_prompt_block: {exc!r}")
                continue
            if isinstance(block, str) and block.strip():
                blocks.append(block.strip())
        return "\n\n".join(blocks)

    async def on_turn_start(self, turn: int, message: str) -> None:
        """Tell every provider a user turn begins."""
        for entry in list(self._fanout.entries):
            if not entry.implements("on_turn_start"):
                continue
            await self._fanout.call(
                entry, "on_turn_start", partial(entry.provider.on_turn_start, turn, message)
            )

    def sync_turn(self, tg: anyio.abc.TaskGroup, *, user_content: str, assistant_content: str) -> None:
        """Hand the completed turn to the providers in background tasks owned by `tg`.

        Externals receive it only when the agent context is `primary`.
        """
        if self._closed:
            self._warn("sync_turn after shutdown was ignored")
            return
        session_id = self._session_id
        for entry in self._fanout.writers(self._agent_context):
            if not entry.implements("sync_turn"):
                continue
            call = partial(entry.provider.sync_turn, user_content, assistant_content, session_id=session_id)
            tg.start_soon(self._fanout.locked_call, entry, "sync_turn", call, name=f"sync_turn:{entry.name}")

    async def notify_memory_write(self, write: contract.MemoryWrite) -> None:
        """Tell the external providers about a write the built-in store has committed.

        Call it only after the store reported success. Nothing happens unless the agent
        context is `primary`.
        """
        if self._closed:
            return
        for entry in self._fanout.writers(self._agent_context):
            if entry.external:
                call = partial(entry.provider.on_memory_write, write)
                await self._fanout.locked_call(entry, "on_memory_write", call)

    async def on_pre_compress(self, messages: Sequence[contract.TurnMessage]) -> str:
        """Collect the providers' notes for the compression summary, joined by blank lines."""
        texts: list[str] = []
        for entry in list(self._fanout.entries):
            call = partial(entry.provider.on_pre_compress, messages)
            outcome = await self._fanout.call(entry, "on_pre_compress", call)
            if outcome.ok and isinstance(outcome.value, str) and outcome.value.strip():
                texts.append(outcome.value.strip())
        return "\n\n".join(texts)

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: contract.SwitchReason
    ) -> None:
        """The session id rotated (compression, a new conversation, resume, branch)."""
        self._session_id = new_session_id
        self._rounds.reset()
        for entry in list(self._fanout.entries):
            call = partial(
                entry.provider.on_session_switch,
                new_session_id,
                parent_session_id=parent_session_id,
                reason=reason,
            )
            await self._fanout.call(entry, "on_session_switch", call)

    async def on_session_end(self, messages: Sequence[contract.TurnMessage]) -> None:
        """A real session boundary; externals hear it only when the context is `primary`."""
        for entry in self._fanout.writers(self._agent_context):
            await self._fanout.locked_call(
                entry, "on_session_end", partial(entry.provider.on_session_end, messages)
            )

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        """A subagent finished; tell the providers of the parent session."""
        for entry in list(self._fanout.entries):
            call = partial(entry.provider.on_delegation, task, result, child_session_id=child_session_id)
            await self._fanout.call(entry, "on_delegation", call)

    async def shutdown(self) -> None:
        """Shut the providers down in reverse registration order, each bounded in time.

        Runs shielded from cancellation (it is clean-up), so the total time is at most
        `shutdown_timeout_s` per provider. Later background submissions are refused.
        """
        self._closed = True
        self._rounds.reset()
        for entry in reversed(self._fanout.entries):
            with anyio.move_on_after(self._shutdown_timeout_s, shield=True) as scope:
                try:
                    await entry.provider.shutdown()
                except Exception as exc:
                    self._warn(f"memory provider {entry.name!r} failed to shut down: {exc!r}")
            if scope.cancelled_caught:
                self._warn(
                    f"memory provider {entry.name!r} did not shut down within "
                    f"{self._shutdown_timeout_s:g} s; it was abandoned"
                )

    def _warn(self, message: str) -> None:
        self._fanout.warn(message)


def _judged(query: str, trivial: bool | None) -> bool:
    """The caller's judgement of `query` when it made one, else `is_trivial`'s."""
    return is_trivial(query) if trivial is None else trivial


def _provider_name(provider: contract.MemoryProvider) -> str | None:
    try:
        name = provider.name
    except Exception as exc:
        _log.warning("memory provider %r: reading its name raised %r; it cannot be registered", provider, exc)
        return None
    return name if isinstance(name, str) and name.strip() else None
