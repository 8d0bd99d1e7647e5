"""LoCoMo as the search benchmarks read it: `harness.experiments.locomo`'s typed reading
(the one parser; CC BY-NC 4.0, read at run time, never copied) with each session's start as
a timestamp, which the session store records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from harness.experiments.locomo import LocomoQuestion as QAItem
from harness.experiments.locomo import LocomoTurn as Turn
from harness.experiments.locomo import load_locomo as _load

__all__ = ["Conversation", "LocomoSession", "QAItem", "Turn", "load_locomo"]


@dataclass(frozen=True, slots=True)
class LocomoSession:
    number: int
    started_at: float
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    qa: tuple[QAItem, ...]


def _date(text: str) -> float:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


def load_locomo(path: Path) -> list[Conversation]:
    """Every conversation in the file, sessions in order."""
    return [
        Conversation(
            sample_id=c.sample_id,
            speaker_a=c.speaker_a,
            speaker_b=c.speaker_b,
            sessions=tuple(LocomoSession(s.number, _date(s.date_time), s.turns) for s in c.sessions),
            qa=c.questions,
        )
        for c in _load(path)
    ]
