"""Typed reading of LoCoMo files (CC BY-NC 4.0: read at run time, never stored in keel).

Shape (Maharana et al., ACL 2024): a list of samples; each has `sample_id`, `conversation`
(`speaker_a`, `speaker_b`, `session_<n>_date_time`, `session_<n>`: turns
`{speaker, dia_id, text, blip_caption?}`) and `qa` (`{question, answer, evidence, category}`;
category 5 is adversarial: no `answer`, an `adversarial_answer` instead).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter, ValidationError

from harness.errors import ConfigError, validation_problems

__all__ = [
    "LOCOMO_CATEGORIES",
    "LocomoConversation",
    "LocomoQuestion",
    "LocomoSession",
    "LocomoTurn",
    "load_locomo",
    "pick_conversation",
]

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's question categories, as the dataset numbers them."""


class LocomoTurn(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    speaker: str
    dia_id: str
    text: str = ""
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The utterance as a transcript keeps it: its text, and a shared photo as its caption."""
        return f"{self.text} [shares a photo: {self.blip_caption}]" if self.blip_caption else self.text


class LocomoQuestion(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    question: str
    answer: str | int | None = None
    evidence: tuple[str, ...] = ()
    category: int = 0
    adversarial_answer: str | None = None

    @property
    def gold(self) -> str:
        """The gold answer as text (empty for adversarial questions)."""
        return "" if self.answer is None else str(self.answer)

    def evidence_ids(self) -> frozenset[str]:
        """Evidence dialog ids; a few entries hold several (`D8:6; D9:17`)."""
        return frozenset(p for e in self.evidence for p in re.split(r"[;,\s]+", e) if p)


class _Sample(BaseModel):
    model_config = ConfigDict(extra="ignore")

    sample_id: str
    conversation: dict[str, JsonValue]
    qa: list[LocomoQuestion] = []


@dataclass(frozen=True, slots=True)
class LocomoSession:
    number: int
    date_time: str
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]


_TURNS = TypeAdapter(list[LocomoTurn])
_SAMPLES = TypeAdapter(list[_Sample])


def _conversation(sample: _Sample) -> LocomoConversation:
    conv = sample.conversation
    numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
    sessions = tuple(
        LocomoSession(
            number=n,
            date_time=str(conv.get(f"session_{n}_date_time") or ""),
            turns=tuple(_TURNS.validate_python(conv[f"session_{n}"])),
        )
        for n in numbers
    )
    return LocomoConversation(
        sample_id=sample.sample_id,
        speaker_a=str(conv.get("speaker_a") or "A"),
        speaker_b=str(conv.get("speaker_b") or "B"),
        sessions=sessions,
        questions=tuple(sample.qa),
    )


def load_locomo(path: Path) -> list[LocomoConversation]:
    """Every conversation in a LoCoMo-format file, sessions in order (a blocking read).

    Raises:
        ConfigError: the file cannot be read or is not LoCoMo-shaped.
    """
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read LoCoMo data {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        samples = _SAMPLES.validate_json(raw)
        return [_conversation(s) for s in samples]
    except ValidationError as exc:
        problems = validation_problems(exc, most=4, depth=4)
        raise ConfigError(
            f"{str(path)!r} is not a LoCoMo-format file (a list of samples with sample_id, "
            f"conversation and qa): {problems}"
        ) from exc


def pick_conversation(conversations: list[LocomoConversation], sample_id: str | None) -> LocomoConversation:
    """The conversation named `sample_id`, or the first one.

    Raises:
        ConfigError: no such conversation, or the file holds none.
    """
    if not conversations:
        raise ConfigError("the LoCoMo file holds no conversations")
    if sample_id is None:
        return conversations[0]
    for conv in conversations:
        if conv.sample_id == sample_id:
            return conv
    ids = ", ".join(c.sample_id for c in conversations)
    raise ConfigError(f"conversation {sample_id!r} is not in the file; it holds {ids}")
