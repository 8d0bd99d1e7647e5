"""Facts from a finished turn, and what to do with each one: add, update, delete or nothing.

After every turn the provider asks the configured model (a `Completer`, passed in: memory
never imports the harness) to list the durable facts the exchange revealed, one per line
(`parse_candidates`). Each candidate is then reconciled against the stored memories most
similar to it (`Reconciliation`):

- similarity ≥ 0.95 to a stored memory: **nothing** — it is already known. No model call.
- similarity < 0.5 to every stored memory: **add** — nothing related exists. No model call.
- in between: the model reads the candidate and the related memories and answers
  `ADD`, `UPDATE <n>`, `DELETE <n>` or `NONE` (`parse_decision`).

Why the split: with the MiniLM embeddings a paraphrase ("User deploys on Fridays" / "The
user deploys every Friday", 0.91) and a contradiction ("... on Thursdays now", 0.89) are
equally close, so only a reader can tell an update from a duplicate — but near-identical
wording (≥ 0.95) and unrelated facts (< 0.5; "works at Acme" / "prefers tabs" is 0.04,
"has a dog" / "has a cat" already 0.66) are decided by the number alone. Most candidates
fall at the two ends, so most turns cost one model call, not one per fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from memory.providers.contract import TurnMessage

__all__ = [
    "Completer",
    "Decision",
    "Reconciliation",
    "parse_candidates",
    "parse_decision",
    "render_related",
]


class Completer(Protocol):
    """A chat model as the provider needs it: messages in, the reply's text out.

    Raising any exception counts as a failure for the provider's circuit breaker.
    """

    async def complete(self, messages: Sequence[TurnMessage]) -> str: ...


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """Where similarity alone decides (see the module docstring)."""

    duplicate_similarity: float = 0.95
    related_similarity: float = 0.5
    related_limit: int = 5
    kind: Literal["reconciliation"] = "reconciliation"

    def __post_init__(self) -> None:
        if not 0.0 <= self.related_similarity <= self.duplicate_similarity <= 1.0:
            raise ValueError(
                "need 0 ≤ related_similarity ≤ duplicate_similarity ≤ 1, got "
                f"{self.related_similarity!r} and {self.duplicate_similarity!r}"
            )
        if self.related_limit < 1:
            raise ValueError(f"related_limit must be at least 1, got {self.related_limit!r}")


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with one candidate fact; `target` is the 1-based number of a related memory."""

    action: Literal["add", "update", "delete", "none"]
    target: int | None = None
    kind: Literal["decision"] = "decision"


_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)]|fact\s*\d*\s*:)\s*", re.IGNORECASE)
_ROLE_LABEL = re.compile(r"^(?:user|assistant|system)\s*:", re.IGNORECASE)
_NOTHING = re.compile(r"^\W*(?:none|nothing|no (?:new |durable )?facts?)\b", re.IGNORECASE)
_DECISION = re.compile(
    r"\b(ADD|UPDATE|DELETE|NONE)\b(?:\s*(?:#|no\.?|number)?\s*\[?(\d{1,2})\]?)?", re.IGNORECASE
)
MAX_FACT_CHARS = 500
"""A line longer than this is prose, not a fact; it is dropped."""


def parse_candidates(reply: str, *, limit: int = 8) -> list[str]:
    """The facts in an extraction reply: one per line, bullets and numbering stripped.

    "none" (or an empty reply) means nothing; lines that are questions, headings, transcript
    echoes (`User: ...`) or too long to be one fact are dropped; duplicates collapse. At most
    `limit` facts.
    """
    out: dict[str, str] = {}
    for raw in reply.splitlines():
        line = _BULLET.sub("", raw).strip().strip('"').strip()
        if not line or _NOTHING.match(line) or line.endswith(("?", ":")) or line.startswith("#"):
            continue
        if _ROLE_LABEL.match(line):  # the transcript echoed back, not a fact
            continue
        if len(line) > MAX_FACT_CHARS or len(line.split()) < 3:  # "The user" alone says nothing
            continue
        out.setdefault(line.casefold().rstrip("."), line)
        if len(out) >= limit:
            break
    return list(out.values())


def parse_decision(reply: str, *, related: int) -> Decision | None:
    """The first `ADD` / `UPDATE n` / `DELETE n` / `NONE` in the reply, or None when there is none.

    An UPDATE or DELETE must name one of the `related` memories (1-based); one that names
    no valid number is not a decision.
    """
    for match in _DECISION.finditer(reply):
        word = match.group(1).upper()
        number = match.group(2)
        if word == "ADD":
            return Decision("add")
        if word == "NONE":
            return Decision("none")
        if number is not None and 1 <= int(number) <= related:
            return Decision("update" if word == "UPDATE" else "delete", int(number))
    return None


def render_related(memories: Sequence[str]) -> str:
    """The related memories as the reconcile prompt lists them: `[1] text` per line."""
    return "\n".join(f"[{i}] {' '.join(text.split())}" for i, text in enumerate(memories, start=1))
