"""Learning from a finished turn: extract candidate facts, reconcile each, apply.

`Learner.learn_turn` is what the provider's `sync_turn` runs in the background. Model calls
go through the provider's circuit breaker (5 failures in a row → 2 minutes without model
calls); while it is open, turns are not learned from (search and the tools keep working).
Every candidate passes the write scanner before anything is stored, alone and read beside
the memories it would be recalled with (`neighbour_texts`); an instruction to the assistant
is never learned (`extract.directive`), nor one the user phrased as a preference ("from now
on always ...", "I prefer that you ...": `memory.gate.standing_order`), and a fact must be grounded in the user's own words:
not in text they pasted or quoted (`extract.own_words`), nor in the assistant's reply, which
may carry a tool result, a fetched document or recalled memory (issue 28's provenance rule).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import anyio
import numpy as np
from numpy.typing import NDArray

from memory.errors import SemanticInputError
from memory.gate import standing_order
from memory.grounding import Said, meaning_problem
from memory.providers._breaker import CircuitBreaker
from memory.providers._guard import joined_findings, write_findings
from memory.providers.contract import TurnMessage
from memory.providers.semantic.contract import Memory, SemanticBackend
from memory.providers.semantic.embedder import Embedder
from memory.providers.semantic.extract import (
    Completer,
    Decision,
    Reconciliation,
    contradicts,
    directive,
    grounded,
    negates,
    own_words,
    parse_candidates,
    parse_verdict,
    restates,
)
from memory.providers.semantic.search import Ranker
from memory.scanner import MeaningCheck

__all__ = ["Learned", "Learner", "Learning", "TurnReport", "neighbour_texts"]

_NEIGHBOURS = 3

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Learned:
    """What happened to one candidate fact."""

    candidate: str
    action: Literal["add", "update", "delete", "none", "blocked", "ungrounded"]
    memory_id: int | None
    decided_by: Literal[
        "similarity", "overlap", "model", "fallback", "scanner", "grounding", "meaning", "directive"
    ]
    kind: Literal["learned"] = "learned"


@dataclass
class TurnReport:
    """One turn's learning: candidates, outcomes, model calls and time spent."""

    model_calls: int = 0
    seconds: float = 0.0
    skipped: Literal["", "paused", "model_failed"] = ""
    learned: list[Learned] = field(default_factory=list)


class _ModelDown(Exception):
    """The completer failed or the breaker is open; the rest of the turn is not learned."""


@dataclass(frozen=True, slots=True)
class Learning:
    """How the provider learns: the model, its two prompt templates (`{user}`, `{assistant}`;
    `{existing}`, `{candidate}`), where similarity alone decides, how much of each side of an
    exchange the model reads, and the meaning check every candidate passes (None: rules only)."""

    completer: Completer
    prompts: tuple[str, str]
    reconciliation: Reconciliation
    max_turn_chars: int
    meaning: MeaningCheck | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Learner:
    """Turns exchanges into stored memories. Owned by the provider; one turn at a time."""

    store: SemanticBackend
    ranker: Ranker
    embedder: Embedder
    breaker: CircuitBreaker
    how: Learning

    async def _ask(self, prompt: str, report: TurnReport) -> str:
        if not self.breaker.acquire():
            raise _ModelDown("paused")
        report.model_calls += 1
        try:
            reply = await self.how.completer.complete([TurnMessage("user", prompt)])
        except Exception as exc:
            opened = self.breaker.failed()
            _log.warning(
                "semantic memory: the extraction model failed (%r)%s", exc, "; pausing" if opened else ""
            )
            raise _ModelDown("model_failed") from exc
        except BaseException:
            self.breaker.abandoned()
            raise
        self.breaker.succeeded()
        return reply

    async def learn_turn(self, user: str, assistant: str, *, session_id: str) -> TurnReport:
        """Extract, reconcile and apply the facts of one exchange; never raises for model trouble."""
        report = TurnReport()
        started = time.perf_counter()
        try:
            extract, _ = self.how.prompts
            prompt = extract.format(
                user=_clip(user, self.how.max_turn_chars),
                assistant=_clip(assistant, self.how.max_turn_chars),
            )
            candidates = parse_candidates(await self._ask(prompt, report))
            for candidate in candidates:
                # Grounded in what the user said themselves: not in what they pasted (see `own_words`),
                # and not in the reply, which may repeat a tool result, a fetched page or recalled memory.
                report.learned.append(await self._reconcile(candidate, own_words(user), report, session_id))
        except _ModelDown as down:
            report.skipped = "paused" if str(down) == "paused" else "model_failed"
        report.seconds = time.perf_counter() - started
        return report

    async def _reconcile(self, candidate: str, exchange: str, report: TurnReport, session_id: str) -> Learned:
        if write_findings(candidate):
            _log.warning("semantic memory: an extracted fact was refused by the write scanner")
            return Learned(candidate, "blocked", None, "scanner")
        if directive(candidate) or standing_order(candidate, exchange):
            # An instruction to the assistant is not a fact about the user (issue 28, N3).
            _log.info("semantic memory: an extracted instruction was not learned: %r", candidate[:80])
            return Learned(candidate, "blocked", None, "directive")
        if not grounded(candidate, exchange):
            return Learned(candidate, "ungrounded", None, "grounding")
        if meaning_problem(candidate, Said(exchange)) is not None:
            # the words were said, but not so: denied, someone else's, hypothetical, corrected
            return Learned(candidate, "ungrounded", None, "meaning")
        vector = await anyio.to_thread.run_sync(lambda: self.embedder.embed([candidate])[0])
        meaning = self.how.meaning
        if meaning is not None and meaning.findings_for(meaning.score_vector(vector)):
            _log.warning("semantic memory: an extracted fact was refused by the meaning check")
            return Learned(candidate, "blocked", None, "scanner")
        nearest = await anyio.to_thread.run_sync(partial(self.ranker.nearest, vector, limit=_NEIGHBOURS))
        beside = await anyio.to_thread.run_sync(partial(neighbour_texts, self.store, nearest))
        if joined_findings(candidate, beside):
            _log.warning("semantic memory: an extracted fact completes a threat with the memories beside it")
            return Learned(candidate, "blocked", None, "scanner")
        superseded = _superseded(candidate, nearest, self.how.reconciliation.superseding_similarity)
        if superseded is not None:
            return await self._apply(candidate, vector, superseded[0], superseded[1], "overlap", session_id)
        if nearest and nearest[0][1] >= self.how.reconciliation.duplicate_similarity:
            return Learned(candidate, "none", nearest[0][0].memory_id, "similarity")
        if not nearest or nearest[0][1] < self.how.reconciliation.related_similarity:
            return await self._apply(candidate, vector, Decision("add"), None, "similarity", session_id)
        memory = nearest[0][0]
        overlap = restates(candidate, memory.content)
        if overlap in ("same", "narrower"):
            return Learned(candidate, "none", memory.memory_id, "overlap")
        if overlap == "wider":
            decision = Decision("update", memory.memory_id)
            return await self._apply(candidate, vector, decision, memory, "overlap", session_id)
        _, reconcile = self.how.prompts
        prompt = reconcile.format(existing=" ".join(memory.content.split()), candidate=candidate)
        both_true = parse_verdict(await self._ask(prompt, report))
        if both_true is None:
            # An answer we cannot read must not lose the fact: keep it beside the other.
            return await self._apply(candidate, vector, Decision("add"), None, "fallback", session_id)
        if both_true:
            return await self._apply(candidate, vector, Decision("add"), None, "model", session_id)
        action: Literal["update", "delete"] = "delete" if negates(candidate, memory.content) else "update"
        return await self._apply(
            candidate, vector, Decision(action, memory.memory_id), memory, "model", session_id
        )

    async def _apply(
        self,
        candidate: str,
        vector: NDArray[np.float32],
        decision: Decision,
        target: Memory | None,
        decided_by: Literal["similarity", "overlap", "model", "fallback"],
        session_id: str,
    ) -> Learned:
        store, model_id = self.store, self.embedder.model_id
        try:
            if decision.action == "add":
                memory, _ = await anyio.to_thread.run_sync(
                    partial(
                        store.add,
                        candidate,
                        vector,
                        model_id=model_id,
                        origin="extracted",
                        session_id=session_id,
                    )
                )
                return Learned(candidate, "add", memory.memory_id, decided_by)
            if decision.action == "update" and target is not None:
                await anyio.to_thread.run_sync(
                    partial(
                        store.update,
                        target.memory_id,
                        candidate,
                        vector,
                        model_id=model_id,
                        session_id=session_id,
                    )
                )
                return Learned(candidate, "update", target.memory_id, decided_by)
            if decision.action == "delete" and target is not None:
                await anyio.to_thread.run_sync(partial(store.delete, target.memory_id, session_id=session_id))
                return Learned(candidate, "delete", target.memory_id, decided_by)
        except SemanticInputError as exc:
            # e.g. the update would duplicate another memory, or the target is gone already
            _log.info("semantic memory: %s; the candidate was left out", exc)
        return Learned(candidate, "none", None if target is None else target.memory_id, decided_by)


def _superseded(
    candidate: str, nearest: list[tuple[Memory, float]], floor: float
) -> tuple[Decision, Memory] | None:
    """A related memory the candidate makes untrue, and what to do with it.

    Decided before the duplicate line: "no longer lives in Porto" is 0.951 from "lives in
    Porto now" and would otherwise be dropped as already known. A negation deletes the
    memory; a new value for a fact held one value at a time replaces it (the latest wins).
    """
    for memory, similarity in nearest:
        if similarity < floor:
            break
        if negates(candidate, memory.content):
            return Decision("delete", memory.memory_id), memory
        if contradicts(candidate, memory.content):
            return Decision("update", memory.memory_id), memory
    return None


def neighbour_texts(store: SemanticBackend, nearest: list[tuple[Memory, float]]) -> list[str]:
    """The memories a new one is likely recalled beside: the most similar and the newest.

    Blocking (SQLite): call it in a worker thread.
    """
    seen: dict[int, str] = {m.memory_id: m.content for m, _ in nearest}
    for memory in store.recent(limit=_NEIGHBOURS):
        seen.setdefault(memory.memory_id, memory.content)
    return list(seen.values())


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " […]"
