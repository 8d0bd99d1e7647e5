"""Query routing and rank fusion: when meaning helps, and how much.

Routing (`route_query`) reads only the query's surface:

- `lexical` — the query names something exact: a quoted string, a date, a path or URL, an
  identifier (`snake_case`, `camelCase`, `dotted.name`, a token mixing letters and digits,
  a long hex or number). Words are the right tool, and dense search is not asked at all:
  a recovery pointer's identifiers find exactly the rows they found before.
- `temporal` — a question about when (`when`, `what date`, `how long ago`, ...): the answer
  sits in a dated turn whose words match the question's; words alone (see below).
- `hybrid` — everything else, paraphrase-like questions above all.

Fusion (`fuse`) is a weighted sum over sessions of two normalized scores: the lexical
window score (`best`'s ranking) divided by the query's top one, plus `dense_weight` times
the session's best message cosine (the maximum over its turns, not a pooled session
vector), min-max scaled over the sessions the dense search found. A session only the
dense search found needs a message above `DENSE_FLOOR`. A result is anchored where the
words found it, else on its closest message.

How the rule was fixed (`benchmarks/search_locomo.py --conversations tuning`: conv-26 and
conv-30 only; conv-41 and conv-42 were only scored to check the rule once chosen). Tried: reciprocal
rank fusion (k 10 and 60, weights 0.3–2), the weighted sum, a session's dense score as
its best turn, as a decayed window mass, or best plus its neighbours; each message
embedded alone, with the previous turn, with both neighbours, or with the speaker's name;
per-message fusion before the window scoring; the top 1–3 lexical results kept in place.
Nothing beat the plain sum with weight 0.5 and the best turn: tuning recall@5 0.877 →
0.889, every category at or above words alone (RRF lost Hit@1: 0.70 → 0.62–0.66). For
questions about when, any dense weight cost temporal recall on tuning, so they go to
words alone (the same finding as published: BM25 alone beat fusion on temporal questions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from memory.sessions._records import SearchHit

if TYPE_CHECKING:  # the index (and numpy) loads when dense search is used
    from memory.sessions.dense.index import DenseHit

__all__ = [
    "DENSE_CANDIDATES",
    "DENSE_FLOOR",
    "HYBRID_DENSE_WEIGHT",
    "TEMPORAL_DENSE_WEIGHT",
    "Fused",
    "Route",
    "Routing",
    "fuse",
    "route_query",
]

Route: TypeAlias = Literal["lexical", "temporal", "hybrid"]

HYBRID_DENSE_WEIGHT = 0.5
"""The dense score's weight against the lexical score's 1.0 for paraphrase-like queries."""

TEMPORAL_DENSE_WEIGHT = 0.0
"""The dense score's weight for questions about when: none (words alone did best)."""

DENSE_FLOOR = 0.3
"""A session only the dense search found must have a message at least this close (cosine):
unrelated MiniLM sentences score about 0 to 0.2, so a query about nothing in the history
still finds nothing. (On the tuning conversations the floor changes no result.)"""

DENSE_CANDIDATES = 100
"""Messages the dense search returns per query before grouping by session."""


@dataclass(frozen=True, slots=True)
class Routing:
    """Which route a query takes, why, and the dense list's weight (0: not searched)."""

    route: Route
    reason: str
    dense_weight: float


_QUOTED = re.compile(r"\"[^\"]{2,}\"|“[^”]{2,}”|`[^`]+`|(?<![A-Za-z])'[^']{2,}'(?![A-Za-z])")
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}(-\d{1,2})?\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b|"
    r"\b\d{1,2}(st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|"
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,4}\b",
    re.IGNORECASE,
)
_PATH = re.compile(
    r"(^|\s)(~|\.{1,2})?/\S+|\b\w+\.(py|md|json|yaml|yml|toml|txt|js|ts|rs|go|sh|sql|csv|log)\b|https?://"
)
_IDENTIFIER = re.compile(
    r"\b[a-z]+_[a-z0-9_]+\b|\b[A-Za-z][a-z]+[A-Z][A-Za-z0-9]*\b|\b\w+\.\w+\(|\b[A-Za-z]*\d+[A-Za-z]+\w*\b|"
    r"\b[A-Za-z]+\d+\w*\b|\b[0-9a-f]{7,}\b|#\d+\b|\b\d{3,}\b|\b[A-Z]{2,}[_-][A-Z0-9_-]+\b|\S+@\S+\.\w+"
)
_TEMPORAL = re.compile(
    r"\b(when|what (date|day|time|year|month)|which (date|day|year|month)|how long ago|"
    r"what (week|weekend)|since when)\b",
    re.IGNORECASE,
)


def route_query(query: str) -> Routing:
    """The route `query` takes (see the module docstring)."""
    for pattern, reason in (
        (_QUOTED, "a quoted string"),
        (_DATE, "a date"),
        (_PATH, "a path or URL"),
        (_IDENTIFIER, "an identifier"),
    ):
        found = pattern.search(query)
        if found:
            return Routing("lexical", f"{reason} ({found.group(0).strip()!r}): words only", 0.0)
    if _TEMPORAL.search(query):
        return Routing("temporal", "a question about when: words only", TEMPORAL_DENSE_WEIGHT)
    return Routing("hybrid", "plain words: words and meaning fused", HYBRID_DENSE_WEIGHT)


@dataclass(frozen=True, slots=True)
class Fused:
    """One session's fused result: where to anchor its window, its score, and its rank in each list."""

    session_id: str
    message_id: int
    seq: int
    score: float
    lexical_rank: int | None
    dense_rank: int | None


def _dense_sessions(hits: Sequence[DenseHit]) -> list[DenseHit]:
    """Each session's best-matching message, best first."""
    best: dict[str, DenseHit] = {}
    for hit in hits:
        current = best.get(hit.row.session_id)
        if current is None or hit.score > current.score:
            best[hit.row.session_id] = hit
    return sorted(best.values(), key=lambda h: (-h.score, -h.row.message_id))


def fuse(
    lexical: Sequence[tuple[SearchHit, float]], dense: Sequence[DenseHit], *, dense_weight: float
) -> list[Fused]:
    """Sessions ranked by the weighted sum of their normalized lexical and dense scores."""
    scores: dict[str, float] = {}
    lexical_rank: dict[str, int] = {}
    dense_rank: dict[str, int] = {}
    anchors: dict[str, tuple[int, int]] = {}
    top = max((score for _, score in lexical), default=0.0)
    for rank, (hit, score) in enumerate(lexical, 1):
        if hit.session_id in lexical_rank:
            continue
        lexical_rank[hit.session_id] = rank
        scores[hit.session_id] = score / top if top > 0 else 0.0
        anchors[hit.session_id] = (hit.message_id, hit.seq)
    sessions = _dense_sessions(dense)
    if sessions:
        high, low = sessions[0].score, sessions[-1].score
        for rank, dhit in enumerate(sessions, 1):
            sid = dhit.row.session_id
            if sid not in lexical_rank and dhit.score < DENSE_FLOOR:
                continue
            dense_rank[sid] = rank
            scaled = (dhit.score - low) / (high - low) if high > low else 1.0
            scores[sid] = scores.get(sid, 0.0) + dense_weight * scaled
            anchors.setdefault(sid, (dhit.row.message_id, dhit.row.seq))
    fused = [
        Fused(sid, anchors[sid][0], anchors[sid][1], score, lexical_rank.get(sid), dense_rank.get(sid))
        for sid, score in scores.items()
    ]
    fused.sort(key=lambda f: (-f.score, -f.message_id))
    return fused
