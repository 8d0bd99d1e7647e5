"""Prefetch rounds: recall computed in the background, read back for exactly its turn.

A round is started for one turn (after the previous turn, or on the spot for a turn with
none); each provider's prefetch runs as a task in the caller's task group and lands in the
round it was started for, so a late result never reaches a newer turn. A provider whose
previous prefetch is still running, or whose breaker is open, is skipped rather than
queued behind itself. A trivial message ("ok", "/usage") starts a round that asks nobody.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import anyio
import anyio.abc

from memory.providers._fanout import Entry, Fanout

__all__ = ["PrefetchRounds", "Recall"]


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
class _Round:
    """The prefetches started for one turn."""

    turn: int
    pending: set[str]
    done: anyio.Event
    trivial: bool = False
    results: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


class PrefetchRounds:
    """The current round, and the tasks that fill it."""

    def __init__(self, fanout: Fanout) -> None:
        self._fanout = fanout
        self._round: _Round | None = None

    def reset(self) -> None:
        """Forget the current round (a session switch or shutdown): nothing in it is read again."""
        self._round = None

    def has_round(self, turn: int) -> bool:
        """Whether providers were asked for `turn` (a trivial message's round asked nobody)."""
        return self._round is not None and self._round.turn == turn and not self._round.trivial

    def start(
        self, tg: anyio.abc.TaskGroup, *, turn: int, query: str, session_id: str, trivial: bool
    ) -> None:
        """Start the round for `turn`, one prefetch task per provider that can be asked.

        `trivial` is the caller's judgement of `query` (made once per turn): a trivial
        round asks nobody.
        """
        current = _Round(turn=turn, pending=set(), done=anyio.Event(), trivial=trivial)
        self._round = current
        if not current.trivial:
            for entry in self._fanout.entries:
                if not entry.implements("prefetch"):
                    continue  # the no-op default recalls nothing: not asked
                if entry.prefetch_running or (entry.breaker is not None and entry.breaker.state == "open"):
                    current.skipped.append(entry.name)
                    continue
                current.pending.add(entry.name)
                entry.prefetch_running = True
                tg.start_soon(self._task, entry, current, query, session_id, name=f"prefetch:{entry.name}")
        if not current.pending:
            current.done.set()

    async def recall(self, *, turn: int, wait_s: float) -> Recall:
        """The round's results for `turn`, waiting at most `wait_s` for providers still running."""
        current = self._round
        if current is None or current.turn != turn:
            return Recall(turn=turn, text="")
        if current.trivial:
            return Recall(turn=turn, text="", trivial=True)
        if current.pending:
            with anyio.move_on_after(wait_s):
                await current.done.wait()
        texts: list[str] = []
        sources: list[str] = []
        missed: list[str] = []
        for entry in self._fanout.entries:
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

    async def _task(self, entry: Entry, current: _Round, query: str, session_id: str) -> None:
        call = partial(entry.provider.prefetch, query, session_id=session_id)
        try:
            outcome = await self._fanout.call(entry, "prefetch", call)
            if outcome.ok:
                if isinstance(outcome.value, str):
                    # Tagged by the round it was started for: a result that arrives after a
                    # newer round began lands in the old round and is never read again.
                    current.results[entry.name] = outcome.value
                else:
                    self._fanout.warn(
                        f"memory provider {entry.name!r} returned a non-string prefetch; ignored"
                    )
        finally:
            entry.prefetch_running = False
            current.pending.discard(entry.name)
            if not current.pending:
                current.done.set()
