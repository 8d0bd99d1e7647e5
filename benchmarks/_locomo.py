"""Typed reading of a LoCoMo file (CC BY-NC 4.0; read at run time, never copied).

Shape: a list of samples; each has `sample_id`, `conversation` (`speaker_a`, `speaker_b`,
`session_<n>_date_time`, `session_<n>`: a list of turns `{speaker, dia_id, text, ...}`)
and `qa` (`{question, answer, evidence, category}`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter

__all__ = ["Conversation", "LocomoSession", "QAItem", "Turn", "load_locomo"]


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    speaker: str
    dia_id: str
    text: str = ""
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The turn as a transcript keeps it: text, and a shared image as its caption."""
        return f"{self.text} [image: {self.blip_caption}]" if self.blip_caption else self.text


class QAItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: str
    evidence: list[str] = []
    category: int = 0

    def evidence_ids(self) -> set[str]:
        """Evidence dialog ids; a few entries hold several (`D8:6; D9:17`)."""
        return {part for entry in self.evidence for part in re.split(r"[;,\s]+", entry) if part}


class _Sample(BaseModel):
    model_config = ConfigDict(extra="ignore")

    sample_id: str
    conversation: dict[str, JsonValue]
    qa: list[QAItem]


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


_TURNS = TypeAdapter(list[Turn])


def _date(text: str) -> float:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


def load_locomo(path: Path) -> list[Conversation]:
    """Every conversation in the file, sessions in order."""
    samples = TypeAdapter(list[_Sample]).validate_json(path.read_bytes())
    out: list[Conversation] = []
    for sample in samples:
        conv = sample.conversation
        numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
        sessions = tuple(
            LocomoSession(
                number=n,
                started_at=_date(str(conv[f"session_{n}_date_time"])),
                turns=tuple(_TURNS.validate_python(conv[f"session_{n}"])),
            )
            for n in numbers
        )
        out.append(
            Conversation(
                sample_id=sample.sample_id,
                speaker_a=str(conv["speaker_a"]),
                speaker_b=str(conv["speaker_b"]),
                sessions=sessions,
                qa=tuple(sample.qa),
            )
        )
    return out
