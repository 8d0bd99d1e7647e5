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
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Generic, Literal, TypeVar

import anyio
import anyio.abc
from pydantic import JsonValue

from memory.providers._breaker import BreakerState, CircuitBreaker
from memory.providers._trivial import is_trivial
from memory.providers.contract import AgentContext, MemoryProvider, MemoryWrite, SwitchReason, TurnMessage

__all__ = ["CORE_TOOL_NAMES", "MemoryManager", "Recall"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

CORE_TOOL_NAMES: frozenset[str] = frozenset(
    {"memory", "session_search", "skills_list", "skill_view", "skill_manage"}
)
"""Tools the harness itself owns; an external provider may not shadow them."""

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_WARNINGS = 500


@dataclass(frozen=True, slots=True)
class Recall:
    """What the providers recalled for one turn.

    Attributes:
        turn: the turn the text was computed for.
        text: the non-empty recall texts joined by blank lines ("" when nothing came back).
        sources: providers whose text is in `text`, in registration order.
        missed: providers still computing when the bounded wait ran out.
        skipped: providers not asked this turn (previous prefetch still running, or paused).
        trivial: the message was too slight to recall for (see `is_trivial`).
    """

    turn: int
    text: str
    sources: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    trivial: bool = False
    kind: Literal["recall"] = "recall"


@dataclass(eq=False)
class _Entry:
    provider: MemoryProvider
    name: str
    external: bool
    breaker: CircuitBreaker | None
    tools: list[str] = field(default_factory=list)
    # Serializes a provider's writes so turn N's sync lands before turn N+1's (anyio locks
    # wake waiters in FIFO order and tasks start in the order they were started).
    write_lock: anyio.Lock = field(default_factory=anyio.Lock)
    prefetch_running: bool = False


@dataclass(eq=False)
class _Round:
    """The prefetches started for one turn."""

    turn: int
    pending: set[str]
    done: anyio.Event
    results: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Outcome(Generic[T]):
    ok: bool
    value: T | None = None
    reason: Literal["", "paused", "failed", "timed out"] = ""
    detail: str = ""


class MemoryManager:
    """Orchestrates the built-in provider and at most one external provider.

    Args:
        builtin: the provider wrapping the curated store; always first, never paused.
        clock: monotonic seconds, for the circuit breakers.
        recall_wait_s: how long `recall` waits for this turn's prefetches.
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
        builtin: MemoryProvider,
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
        self._call_timeout_s = call_timeout_s
        self._core_tool_names = core_tool_names
        self._warn_callback = warn
        self._warnings: deque[str] = deque(maxlen=_MAX_WARNINGS)
        self._entries: list[_Entry] = []
        self._routes: dict[str, _Entry] = {}
        self._schemas: dict[str, dict[str, JsonValue]] = {}
        self._round: _Round | None = None
        self._session_id = ""
        self._agent_context: AgentContext = "primary"
        self._initialized = False
        self._closed = False
        entry = _Entry(
            provider=builtin, name=_provider_name(builtin) or "builtin", external=False, breaker=None
        )
        self._entries.append(entry)
        for schema in self._load_schemas(entry) or []:
            self._route(entry, schema)

    # ------------------------------------------------------------------ registration

    def add_provider(self, provider: MemoryProvider) -> bool:
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
        existing = self.external
        if existing is not None:
            self._warn(
                f"memory provider {name!r} was refused: {existing!r} is already the external provider "
                "and only one may be active; choose one with memory.provider"
            )
            return False
        if self._initialized or self._closed:
            self._warn(f"memory provider {name!r} was refused: register providers before initialize()")
            return False
        if any(e.name == name for e in self._entries):
            self._warn(f"memory provider {name!r} was refused: the name is already registered")
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
        entry = _Entry(provider=provider, name=name, external=True, breaker=breaker)
        # Read the schemas before touching any state, so a provider whose schema call
        # raises leaves the manager exactly as it was.
        schemas = self._load_schemas(entry)
        if schemas is None:
            return False
        self._entries.append(entry)
        for schema in schemas:
            self._route(entry, schema)
        return True

    @property
    def providers(self) -> tuple[str, ...]:
        """Registered provider names, built-in first."""
        return tuple(e.name for e in self._entries)

    @property
    def external(self) -> str | None:
        """The external provider's name, if one is registered."""
        return next((e.name for e in self._entries if e.external), None)

    @property
    def writing(self) -> tuple[str, ...]:
        """Providers still handling a turn (a `sync_turn` holds or awaits their write lock):
        closing the session waits for them, at most the call bound (`call_timeout_s`)."""
        return tuple(
            e.name for e in self._entries if e.write_lock.locked() or e.write_lock.statistics().tasks_waiting
        )

    @property
    def call_timeout_s(self) -> float:
        return self._call_timeout_s

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every warning so far (the most recent 500), oldest first."""
        return tuple(self._warnings)

    @property
    def agent_context(self) -> AgentContext:
        return self._agent_context

    @contextmanager
    def running_as(self, context: AgentContext) -> Iterator[None]:
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
        entry = self._entry(provider_name)
        return "closed" if entry.breaker is None else entry.breaker.state

    # ------------------------------------------------------------------ tools

    def tool_schemas(self) -> list[dict[str, JsonValue]]:
        """Every routed tool in OpenAI function shape, built-in tools first."""
        return [dict(schema) for schema in self._schemas.values()]

    def tool_owner(self, tool_name: str) -> str | None:
        """The provider that handles `tool_name`, or None."""
        entry = self._routes.get(tool_name)
        return None if entry is None else entry.name

    async def handle_tool_call(self, name: str, arguments: dict[str, JsonValue]) -> str:
        """Route a tool call to its provider; always returns JSON text, never raises."""
        entry = self._routes.get(name)
        if entry is None:
            return _error(f"unknown memory tool {name!r}; available: {sorted(self._routes)!r}")
        if self._closed:
            return _error(f"memory tool {name!r} is unavailable: the memory manager has shut down")
        call = partial(entry.provider.handle_tool_call, name, arguments)
        outcome = await self._call(entry, f"tool {name!r}", call, bound_s=self._call_timeout_s)
        if outcome.ok:
            if isinstance(outcome.value, str):
                return outcome.value
            self._warn(f"memory provider {entry.name!r} returned a non-string result from tool {name!r}")
            return _error(f"Memory tool {name!r} failed: the provider returned no text")
        if outcome.reason == "paused":
            wait = 0.0 if entry.breaker is None else entry.breaker.seconds_until_trial()
            return _error(
                f"Memory tool {name!r} is paused after repeated failures of {entry.name!r}; "
                f"try again in {wait:.0f} s or continue without it"
            )
        return _error(f"Memory tool {name!r} failed: {outcome.detail}")

    # ------------------------------------------------------------------ session lifecycle

    async def initialize(
        self,
        session_id: str,
        *,
        agent_context: AgentContext,
        home: Path,
        platform: str,
        parent_session_id: str | None = None,
        user_id: str | None = None,
    ) -> None:
        """Initialize every provider; an external provider that fails is dropped with a warning."""
        self._session_id = session_id
        self._agent_context = agent_context
        self._initialized = True
        for entry in list(self._entries):
            call = partial(
                entry.provider.initialize,
                session_id,
                agent_context=agent_context,
                home=home,
                platform=platform,
                parent_session_id=parent_session_id,
                user_id=user_id,
            )
            outcome = await self._call(entry, "initialize", call, bound_s=self._call_timeout_s)
            if not outcome.ok and entry.external:
                self._warn(f"memory provider {entry.name!r} did not initialize; continuing without it")
                self._drop(entry)

    def system_prompt_block(self) -> str:
        """The external providers' static blocks joined by blank lines (system-prompt slot 2)."""
        blocks: list[str] = []
        for entry in self._entries:
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
        for entry in list(self._entries):
            call = partial(entry.provider.on_turn_start, turn, message)
            await self._call(entry, "on_turn_start", call, bound_s=self._call_timeout_s)

    def start_prefetch(self, tg: anyio.abc.TaskGroup, *, turn: int, query: str) -> None:
        """Start this turn's recall in `tg`; `recall(turn=...)` collects it.

        Skipped entirely for trivial messages. A provider whose previous prefetch is still
        running, or whose breaker is open, is not asked this turn.
        """
        if self._closed or is_trivial(query):
            self._round = None
            return
        current = _Round(turn=turn, pending=set(), done=anyio.Event())
        self._round = current
        session_id = self._session_id
        for entry in self._entries:
            if entry.prefetch_running or (entry.breaker is not None and entry.breaker.state == "open"):
                current.skipped.append(entry.name)
                continue
            current.pending.add(entry.name)
            entry.prefetch_running = True
            tg.start_soon(
                self._prefetch_task, entry, current, query, session_id, name=f"prefetch:{entry.name}"
            )
        if not current.pending:
            current.done.set()

    def has_round(self, turn: int) -> bool:
        """Whether a prefetch for `turn` was started (after the previous turn, in the background)."""
        return self._round is not None and self._round.turn == turn

    async def recall(self, *, turn: int, query: str, wait_s: float | None = None) -> Recall:
        """The recall computed for `turn`, waiting at most `wait_s` (default `recall_wait_s`) for it.

        Results computed for any other turn are never returned. Providers that have not
        finished in time are listed in `missed`; their late results are discarded.
        """
        if is_trivial(query):
            return Recall(turn=turn, text="", trivial=True)
        current = self._round
        if current is None or current.turn != turn:
            return Recall(turn=turn, text="")
        if current.pending:
            with anyio.move_on_after(self._recall_wait_s if wait_s is None else wait_s):
                await current.done.wait()
        texts: list[str] = []
        sources: list[str] = []
        missed: list[str] = []
        for entry in self._entries:
            if entry.name in current.pending:
                missed.append(entry.name)
                continue
            text = current.results.get(entry.name, "").strip()
            if text:
                texts.append(text)
                sources.append(entry.name)
        return Recall(
            turn=turn,
            text="\n\n".join(texts),
            sources=tuple(sources),
            missed=tuple(missed),
            skipped=tuple(current.skipped),
        )

    def queue_prefetch(self, tg: anyio.abc.TaskGroup, *, query: str) -> None:
        """Let providers warm the next turn's recall, in background tasks owned by `tg`."""
        if self._closed or is_trivial(query):
            return
        session_id = self._session_id
        for entry in self._entries:
            call = partial(entry.provider.queue_prefetch, query, session_id=session_id)
            tg.start_soon(
                self._call,
                entry,
                "queue_prefetch",
                call,
                self._call_timeout_s,
                name=f"queue_prefetch:{entry.name}",
            )

    def sync_turn(self, tg: anyio.abc.TaskGroup, *, user_content: str, assistant_content: str) -> None:
        """Hand the completed turn to the providers in background tasks owned by `tg`.

        Externals receive it only when the agent context is `primary`.
        """
        if self._closed:
            self._warn("sync_turn after shutdown was ignored")
            return
        session_id = self._session_id
        for entry in self._writers():
            call = partial(entry.provider.sync_turn, user_content, assistant_content, session_id=session_id)
            tg.start_soon(self._locked_call, entry, "sync_turn", call, name=f"sync_turn:{entry.name}")

    async def notify_memory_write(self, write: MemoryWrite) -> None:
        """Tell the external providers about a write the built-in store has committed.

        Call it only after the store reported success. Nothing happens unless the agent
        context is `primary`.
        """
        if self._closed:
            return
        for entry in self._writers():
            if not entry.external:
                continue
            await self._locked_call(entry, "on_memory_write", partial(entry.provider.on_memory_write, write))

    async def on_pre_compress(self, messages: Sequence[TurnMessage]) -> str:
        """Collect the providers' notes for the compression summary, joined by blank lines."""
        texts: list[str] = []
        for entry in list(self._entries):
            call = partial(entry.provider.on_pre_compress, messages)
            outcome = await self._call(entry, "on_pre_compress", call, bound_s=self._call_timeout_s)
            if outcome.ok and isinstance(outcome.value, str) and outcome.value.strip():
                texts.append(outcome.value.strip())
        return "\n\n".join(texts)

    async def on_session_switch(
        self, new_session_id: str, *, parent_session_id: str | None, reason: SwitchReason
    ) -> None:
        """The session id rotated (compression, a new conversation, resume, branch)."""
        self._session_id = new_session_id
        self._round = None
        for entry in list(self._entries):
            call = partial(
                entry.provider.on_session_switch,
                new_session_id,
                parent_session_id=parent_session_id,
                reason=reason,
            )
            await self._call(entry, "on_session_switch", call, bound_s=self._call_timeout_s)

    async def on_session_end(self, messages: Sequence[TurnMessage]) -> None:
        """A real session boundary; externals hear it only when the context is `primary`."""
        for entry in self._writers():
            await self._locked_call(entry, "on_session_end", partial(entry.provider.on_session_end, messages))

    async def on_delegation(self, task: str, result: str, *, child_session_id: str) -> None:
        """A subagent finished; tell the providers of the parent session."""
        for entry in list(self._entries):
            call = partial(entry.provider.on_delegation, task, result, child_session_id=child_session_id)
            await self._call(entry, "on_delegation", call, bound_s=self._call_timeout_s)

    async def shutdown(self) -> None:
        """Shut the providers down in reverse registration order, each bounded in time.

        Runs shielded from cancellation (it is clean-up), so the total time is at most
        `shutdown_timeout_s` per provider. Later background submissions are refused.
        """
        self._closed = True
        self._round = None
        for entry in reversed(self._entries):
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

    # ------------------------------------------------------------------ internals

    def _writers(self) -> list[_Entry]:
        if self._agent_context == "primary":
            return list(self._entries)
        return [e for e in self._entries if not e.external]

    async def _prefetch_task(self, entry: _Entry, current: _Round, query: str, session_id: str) -> None:
        call = partial(entry.provider.prefetch, query, session_id=session_id)
        try:
            outcome = await self._call(entry, "prefetch", call, bound_s=self._call_timeout_s)
            if outcome.ok:
                if isinstance(outcome.value, str):
                    # Tagged by the round it was started for: a result that arrives after a
                    # newer round began lands in the old round and is never read again.
                    current.results[entry.name] = outcome.value
                else:
                    self._warn(f"memory provider {entry.name!r} returned a non-string prefetch; ignored")
        finally:
            entry.prefetch_running = False
            current.pending.discard(entry.name)
            if not current.pending:
                current.done.set()

    async def _locked_call(self, entry: _Entry, hook: str, fn: Callable[[], Awaitable[None]]) -> None:
        async with entry.write_lock:
            await self._call(entry, hook, fn, bound_s=self._call_timeout_s)

    async def _call(
        self, entry: _Entry, hook: str, fn: Callable[[], Awaitable[T]], bound_s: float
    ) -> _Outcome[T]:
        """Call one provider hook with a breaker check, a time bound and exception isolation."""
        breaker = entry.breaker
        if breaker is not None and not breaker.acquire():
            return _Outcome(ok=False, reason="paused")
        try:
            with anyio.move_on_after(bound_s) as scope:
                value = await fn()
        except Exception as exc:
            self._failed(entry, hook, f"raised {exc!r}")
            return _Outcome(ok=False, reason="failed", detail=str(exc) or type(exc).__name__)
        except BaseException:
            # Cancelled from outside: no verdict on the provider, but free the trial slot.
            if breaker is not None:
                breaker.abandoned()
            raise
        if scope.cancelled_caught:
            self._failed(entry, hook, f"did not finish within {bound_s:g} s")
            return _Outcome(ok=False, reason="timed out", detail=f"no answer within {bound_s:g} s")
        if breaker is not None:
            breaker.succeeded()
        return _Outcome(ok=True, value=value)

    def _failed(self, entry: _Entry, hook: str, what: str) -> None:
        self._warn(f"memory provider {entry.name!r} {what} in {hook}; skipped")
        if entry.breaker is not None and entry.breaker.failed():
            self._warn(
                f"memory provider {entry.name!r} failed {entry.breaker.consecutive_failures} times in a row; "
                f"pausing it for {self._breaker_pause_s:g} s"
            )

    def _load_schemas(self, entry: _Entry) -> list[dict[str, JsonValue]] | None:
        try:
            raw: object = entry.provider.tool_schemas()
        except Exception as exc:
            self._warn(f"memory provider {entry.name!r} was refused: tool_schemas() raised {exc!r}")
            return None
        if not isinstance(raw, list):
            self._warn(f"memory provider {entry.name!r} was refused: tool_schemas() did not return a list")
            return None
        schemas: list[dict[str, JsonValue]] = []
        for item in raw:
            schema = _normalize_schema(item)
            if schema is None:
                self._warn(f"memory provider {entry.name!r} offered a malformed tool schema; it was skipped")
            else:
                schemas.append(schema)
        return schemas

    def _route(self, entry: _Entry, schema: dict[str, JsonValue]) -> None:
        tool = str(schema["name"])
        if entry.external and tool in self._core_tool_names:
            self._warn(f"tool {tool!r} of memory provider {entry.name!r} shadows a core tool; it was refused")
            return
        owner = self._routes.get(tool)
        if owner is not None:
            self._warn(
                f"tool {tool!r} of memory provider {entry.name!r} is already provided by {owner.name!r}; "
                "the first registration wins"
            )
            return
        self._routes[tool] = entry
        self._schemas[tool] = schema
        entry.tools.append(tool)

    def _drop(self, entry: _Entry) -> None:
        self._entries.remove(entry)
        for tool in entry.tools:
            self._routes.pop(tool, None)
            self._schemas.pop(tool, None)

    def _entry(self, name: str) -> _Entry:
        for entry in self._entries:
            if entry.name == name:
                return entry
        raise KeyError(f"no memory provider named {name!r}; registered: {self.providers!r}")

    def _warn(self, message: str) -> None:
        _log.warning("%s", message)
        self._warnings.append(message)
        if self._warn_callback is not None:
            try:
                self._warn_callback(message)
            except Exception:
                _log.exception("the memory-manager warn callback raised")


def _provider_name(provider: MemoryProvider) -> str | None:
    try:
        name = provider.name
    except Exception as exc:
        _log.warning("memory provider %r: reading its name raised %r; it cannot be registered", provider, exc)
        return None
    return name if isinstance(name, str) and name.strip() else None


def _normalize_schema(raw: object) -> dict[str, JsonValue] | None:
    """Accept `{name, description, parameters}` or the wrapped `{type: function, function: {...}}`."""
    if not isinstance(raw, dict):
        return None
    inner = raw.get("function")
    if raw.get("type") == "function" and isinstance(inner, dict):
        raw = inner
    name = raw.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        return None
    description = raw.get("description", "")
    parameters = raw.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(description, str) or not isinstance(parameters, dict):
        return None
    try:
        json.dumps(parameters)
    except (TypeError, ValueError):
        return None
    return {"name": name, "description": description, "parameters": parameters}


def _error(message: str) -> str:
    return json.dumps({"error": message})
