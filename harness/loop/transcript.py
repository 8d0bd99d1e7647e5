"""The transcript and its lineage: one owner for the messages, the session ids and their rows.

A turn's messages (what the user said, the model's replies, tool calls and their results)
wait in order and are written at the turn's end in one transaction, or as soon as the oldest
has waited `SAVE_AFTER_S` (`keep_saved`, which a turn runs beside itself) — so a fast turn
costs one commit, not one per message, and a crash loses at most the turn's last second (the
trace loses at most the turn being run). A row is written at once when something needs its
store id (a capped tool result names it), and before a compression reads the transcript.
Messages appended outside a turn are written at once.
The transcript is rewritten only here: compression continues in a child session (the old
row ends with reason `compression`; the child's messages are copied in one transaction),
a cancelled turn is repaired to its last consistent state, and recall that must not
persist is dropped. `version` counts rewrites, so size estimates anchored on an older
transcript are not trusted.

A store that cannot take a write (state.db locked by another process past every retry, a
full disk) never loses a message and never ends the turn: the rows wait in order in an
unsaved queue, each later write first retries them, and the session shows one warning.

A write the store refuses because this worker lost the session lease to another
(`SessionFencedError`: the lease's connection died and another worker resumed the session)
is the one exception: the turn's unsaved rows are dropped, nothing more of the turn is
written (it would land behind the other worker's turn), and `fenced` tells the session to
reload the transcript from the store before its next turn.

Each message kept in memory carries its store id (`Message.store_id`) once the store took
it. A tool result longer than the transcript's cap is stored whole first, then kept in
memory cut to the cap with a pointer to that stored row (`append_tool_result`): every
later prompt replays the capped text, and the agent reads the rest by id.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace

import anyio

from harness.compress.plan import repair_tool_pairs
from harness.loop.ports import EndReason, Recorder
from harness.tools import capped_result
from harness.types import Message, ToolCall
from memory import MemoryLayerError
from memory.errors import SessionFencedError
from memory.sessions import storable_text

__all__ = ["SAVE_AFTER_S", "Transcript", "new_session_id", "storable"]

_STORE_ERRORS = (MemoryLayerError, OSError)

SAVE_AFTER_S = 1.0
"""A turn's deferred rows are written once the oldest has waited this long (`Transcript.keep_saved`)."""


@dataclass(frozen=True, slots=True, eq=False)
class _Row:
    """A message waiting for the store: the session row it belongs to, the bytes to store,
    when it was said, and the message the transcript keeps for it (to give it its store id)."""

    session_id: str
    message: Message
    timestamp: float
    queued_at: float
    kept: Message | None
    want_id: bool = False
    """Someone waits for this row's store id (`Transcript.append_tool_result`)."""


def storable(message: Message) -> Message:
    """`message` with its text as the session store keeps it (`memory.sessions.storable_text`:
    NUL and lone surrogates → U+FFFD); the same object when nothing changes (nearly always)."""

    def fix(text: str | None) -> str | None:
        return None if text is None else storable_text(text)

    texts = (message.content, message.api_content, message.tool_call_id, message.name)
    call_texts = [t for c in message.tool_calls for t in (c.id, c.name, c.arguments)]
    if all(t is None or storable_text(t) is t for t in (*texts, *call_texts)):
        return message  # storable_text hands back the same string when it changes nothing
    calls = tuple(
        ToolCall(storable_text(c.id), storable_text(c.name), storable_text(c.arguments))
        for c in message.tool_calls
    )
    return Message(
        role=message.role,
        content=storable_text(message.content),
        api_content=fix(message.api_content),
        tool_calls=calls,
        tool_call_id=fix(message.tool_call_id),
        name=fix(message.name),
        summary=message.summary,
        store_id=message.store_id,
    )


def _with_store_id(message: Message, store_id: int | None) -> Message:
    """`message` with its store id (built directly: `dataclasses.replace` introspects every call)."""
    return Message(
        message.role,
        message.content,
        message.api_content,
        message.tool_calls,
        message.tool_call_id,
        message.name,
        message.summary,
        store_id,
    )


def new_session_id() -> str:
    """A new session id: sortable by start time, unique by a random suffix."""
    return time.strftime("%Y%m%d_%H%M%S_") + uuid.uuid4().hex[:6]


@dataclass(eq=False)
class Transcript:
    """The messages of the current session row, which row that is, and how many turns it has seen."""

    recorder: Recorder
    _: KW_ONLY
    new_id: Callable[[], str]
    model_name: str
    count: Callable[[Message], int]
    warn: Callable[[str], None]
    clock: Callable[[], float] = time.time
    """When a message was said (its row's timestamp)."""
    monotonic: Callable[[], float] = time.monotonic
    """How long a deferred row has waited (`keep_saved`)."""
    save_after_s: float = SAVE_AFTER_S
    session_id: str = field(init=False)
    parent_session_id: str | None = field(default=None, init=False)
    lineage_root: str = field(init=False)
    """The first session of this lineage: compression continues a session in a child with
    a new id but the same root, so the session lease is keyed by it (one turn at a time
    across the whole lineage, on every worker)."""
    version: int = field(default=0, init=False)
    turn: int = field(default=0, init=False)
    """User turns begun in this conversation (kept across compression; a new conversation resets it)."""
    fenced: bool = field(default=False, init=False)
    """The store refused a write because another worker took the session's lease: nothing
    is written until the session reloads from the store (the session's next turn)."""
    _messages: list[Message] = field(default_factory=list, init=False)
    _unsaved: list[_Row] = field(default_factory=list, init=False)
    _unopened: set[str] = field(default_factory=set, init=False)
    _ids: dict[_Row, int | None] = field(default_factory=dict, init=False)
    """Store ids of rows written with `want_id`, until their owner takes them."""
    _saving: anyio.Lock | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.session_id = self.new_id()
        self.lineage_root = self.session_id

    def begin_turn(self) -> int:
        """Count a new user turn; returns its number (from 1)."""
        self.turn += 1
        return self.turn

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    async def open(self) -> None:
        """Create the current session row."""
        await self.recorder.start_session(
            self.session_id, model=self.model_name, parent_session_id=self.parent_session_id
        )

    @property
    def unsaved(self) -> int:
        """Messages not yet in the session store (a turn's deferred rows, or rows it refused)."""
        return len(self._unsaved)

    async def end(self, reason: EndReason) -> None:
        """Save what is unsaved, then end the current session row."""
        if await self._save_unsaved():
            try:
                await self.recorder.end_session(self.session_id, reason=reason)
            except _STORE_ERRORS as exc:
                self.warn(f"could not end session {self.session_id!r} in the session store ({exc})")

    async def append(
        self, message: Message, *, stored: Message | None = None, defer: bool = False
    ) -> Message:
        """Append `message` and persist it (or `stored`, the bytes a resumed session must replay).

        With `defer` the row waits for `save` (the turn's end, or `keep_saved`) instead of
        being written now.
        Returns the message as kept: its text in the form the store keeps (NUL and lone
        surrogates → U+FFFD), so the live transcript and the stored row never differ, and its
        store id when the store took it now.
        """
        message = storable(message)
        self._messages.append(message)
        self._queue(storable(stored) if stored is not None else message, kept=message)
        if not defer:
            await self._save_unsaved()
        return self._messages[-1]  # with its store id when it was written now

    async def append_tool_result(self, message: Message, *, cap: int, defer: bool = False) -> Message:
        """Append a tool result; one longer than `cap` characters is kept capped (see the module doc).

        The full output is stored first, so the capped text can name its id (a deferred turn's
        rows are written with it); if the store refuses it now, it waits in the unsaved queue
        like any row, and the capped text says the cut part is not kept (it cannot point at a
        row that has no id yet).
        """
        if len(message.content) <= cap:
            return await self.append(message, defer=defer)
        message = storable(message)
        row = self._queue(message, kept=None, want_id=True)
        await self._save_unsaved()
        store_id = self._ids.pop(row, None)  # written now, or by `keep_saved` meanwhile
        kept = replace(
            message, content=capped_result(message.content, cap, message_id=store_id), store_id=store_id
        )
        self._messages.append(kept)
        return kept

    async def save(self) -> bool:
        """Write the rows waiting for the store; False (with a warning) when it refused them."""
        return await self._save_unsaved() if self._unsaved else True

    async def keep_saved(self) -> None:
        """Until cancelled: write the waiting rows whenever the oldest has waited `save_after_s`
        (a turn runs this beside itself, so a slow turn loses at most its last second)."""
        while True:
            oldest = self._unsaved[0].queued_at if self._unsaved else self.monotonic()
            await anyio.sleep(max(0.0, oldest + self.save_after_s - self.monotonic()))
            if self._unsaved and self._unsaved[0].queued_at <= oldest:
                with anyio.CancelScope(shield=True):  # a write begun is finished, not torn
                    saved = await self._save_unsaved()
                if not saved:
                    await anyio.sleep(self.save_after_s)  # the store refused: retry later

    def _queue(self, row: Message, *, kept: Message | None, want_id: bool = False) -> _Row:
        queued = _Row(self.session_id, row, self.clock(), self.monotonic(), kept, want_id)
        self._unsaved.append(queued)
        return queued

    async def _save_unsaved(self) -> bool:
        """Write the queued rows in order, each session's run of them in one transaction;
        False (with a warning) when the store refused one. One save at a time (`keep_saved`
        may run beside the turn)."""
        if self._saving is None:
            self._saving = anyio.Lock()
        async with self._saving:
            return await self._save_queued()

    async def _save_queued(self) -> bool:
        if self.fenced:
            self._unsaved.clear()  # this worker's turn lost the session: never behind another's
            return False
        while self._unsaved:
            session_id = self._unsaved[0].session_id
            run = next(
                (i for i, r in enumerate(self._unsaved) if r.session_id != session_id), len(self._unsaved)
            )
            rows = self._unsaved[:run]
            try:
                if session_id in self._unopened:
                    await self.recorder.start_session(
                        session_id, model=self.model_name, parent_session_id=self.parent_session_id
                    )
                    self._unopened.discard(session_id)
                ids = await self._write(session_id, rows)
            except SessionFencedError as exc:
                self.warn(f"{exc} {len(self._unsaved)} message(s) of this turn were not saved.")
                self.fenced = True
                self._unsaved.clear()
                return False
            except _STORE_ERRORS as exc:
                self.warn(
                    f"the session store refused a write ({exc}); {len(self._unsaved)} message(s) are kept in "
                    "memory and will be saved with the next message — nothing is lost while this session runs"
                )
                return False
            del self._unsaved[:run]
            self._give_ids(rows, ids)
        return True

    async def _write(self, session_id: str, rows: Sequence[_Row]) -> Sequence[int | None]:
        """One transaction for `rows` (all of `session_id`); their store ids, or () when the recorder keeps none."""
        if len(rows) == 1:
            row = rows[0].message
            return (await self.recorder.append_message(session_id, row, token_count=self.count(row)),)
        messages = [r.message for r in rows]
        ids = await self.recorder.append_messages(
            session_id,
            messages,
            token_counts=[self.count(m) for m in messages],
            timestamps=[r.timestamp for r in rows],
        )
        return () if ids is None or len(ids) != len(rows) else ids

    def _give_ids(self, rows: Sequence[_Row], ids: Sequence[int | None]) -> None:
        """Put the store ids of rows just written on the messages the transcript keeps for them."""
        for row, store_id in zip(rows, ids, strict=False):
            if row.want_id:
                self._ids[row] = store_id
            if row.kept is None or store_id is None:
                continue
            for i in range(len(self._messages) - 1, -1, -1):
                if self._messages[i] is row.kept:
                    self._messages[i] = _with_store_id(row.kept, store_id)
                    break

    def resume(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        turns: int,
        parent_session_id: str | None = None,
        lineage_root: str | None = None,
    ) -> None:
        """Continue the recorded session `session_id` (its row exists) holding `messages`;
        `lineage_root` is its first ancestor (itself when None)."""
        self.session_id = session_id
        self.parent_session_id = parent_session_id
        self.lineage_root = lineage_root or session_id
        self.turn = turns
        self.replace(messages)

    async def restart(self) -> str:
        """End this row (`new_session`) and start an empty, unrelated one; returns the old id."""
        old = self.session_id
        await self.end("new_session")
        self.session_id = self.new_id()
        self.parent_session_id = None
        self.lineage_root = self.session_id
        self.turn = 0
        self.replace([])
        await self.open()
        return old

    async def continue_as_child(self, messages: Sequence[Message]) -> str:
        """End this row (`compression`) and continue in a child holding `messages`; returns the old id."""
        old = self.session_id
        await self.end("compression")
        self.parent_session_id = old
        self.session_id = self.new_id()
        self.replace(messages)
        opened = False
        if not self._unsaved:
            try:
                await self.open()
                opened = True
                await self.recorder.append_messages(
                    self.session_id, list(messages), token_counts=[self.count(m) for m in messages]
                )
                return old
            except _STORE_ERRORS as exc:
                self.warn(f"the session store refused the compressed session ({exc}); it will be retried")
        if not opened:  # a row made already is not made twice: its messages alone are retried
            self._unopened.add(self.session_id)
        for m in messages:  # they keep the ids of the rows they were copied from
            self._queue(m, kept=None)
        return old

    def replace(self, messages: Sequence[Message]) -> None:
        """Swap the in-memory messages for a rewritten list (not persisted: the caller's job)."""
        self._messages = list(messages)
        self.version += 1

    def repair(self) -> None:
        """Drop tool calls without results and results without calls (after a cancelled turn)."""
        repaired = repair_tool_pairs(self._messages)
        if repaired != self._messages:
            self.replace(repaired)

    def drop_recall(self, user: Message) -> None:
        """Send `user` (as `append` returned it) without its recall from now on (`recall.persist: false`)."""
        for i in range(len(self._messages) - 1, -1, -1):
            m = self._messages[i]
            if m is user or m == user:  # equal: it was given its store id since (ids do not compare)
                self._messages[i] = Message(role="user", content=user.content, store_id=m.store_id)
                self.version += 1
                return
