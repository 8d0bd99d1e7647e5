"""What the retention eval replays: a conversation as transcript lines, and its questions.

A LoCoMo conversation is two people talking, not a user and an agent. It is replayed as a
chat in which the first speaker is the *user* and the second speaker's lines stand as the
*assistant's*: consecutive utterances of one speaker become one message, each utterance
prefixed with the speaker's name, and the first message of every dated LoCoMo session
starts with a line giving its date (temporal questions need it). A shared photo is kept as
its caption. The roles are stated once in the system prompt (`agent.system_message`).

A built-in synthetic scenario (`keel scenario list`) replays its user turns and scripted
replies (tool calls left out), and its fact probes become single-hop questions.

Lines carry the dialog ids they hold, so the eval can tell which questions have their
evidence in the part a compression removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.errors import ConfigError
from harness.experiments.locomo import LocomoConversation, load_locomo, pick_conversation
from harness.experiments.scenarios.builtin import BUILTIN_SCENARIOS, builtin_scenario
from harness.experiments.scenarios.spec import Scenario, load_scenario
from prompts import load_text

__all__ = [
    "Question",
    "RetentionReplay",
    "ScriptLine",
    "load_replay",
    "question_prompt",
    "replay_locomo",
    "replay_scenario",
]


@dataclass(frozen=True, slots=True)
class ScriptLine:
    """One transcript message to replay, and the dialog ids it holds."""

    role: Literal["user", "assistant"]
    content: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """One question of the conversation, with its gold answer and evidence."""

    index: int
    """Its position in the source's question list."""
    question: str
    gold: str
    category: int
    evidence: frozenset[str]
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class RetentionReplay:
    """A conversation ready to replay."""

    name: str
    lines: tuple[ScriptLine, ...]
    questions: tuple[Question, ...]
    system_note: str
    """Who is who, for the system prompt (empty when the roles need no explaining)."""


def _merge(lines: list[ScriptLine]) -> list[ScriptLine]:
    out: list[ScriptLine] = []
    for line in lines:
        if out and out[-1].role == line.role:
            last = out[-1]
            out[-1] = ScriptLine(line.role, f"{last.content}\n{line.content}", last.dia_ids + line.dia_ids)
        else:
            out.append(line)
    return out


def replay_locomo(conv: LocomoConversation) -> RetentionReplay:
    """A LoCoMo conversation as transcript lines (first speaker = user) and its questions."""
    raw: list[ScriptLine] = []
    for session in conv.sessions:
        for i, turn in enumerate(session.turns):
            text = f"{turn.speaker}: {turn.content}"
            if i == 0:
                text = f"(Session {session.number} — {session.date_time})\n{text}"
            role: Literal["user", "assistant"] = "user" if turn.speaker == conv.speaker_a else "assistant"
            raw.append(ScriptLine(role, text, (turn.dia_id,)))
    if raw and raw[0].role == "assistant":
        raw.insert(0, ScriptLine("user", f"{conv.speaker_a}: Hi!", ()))
    questions = tuple(
        Question(
            index=i,
            question=q.question,
            gold=q.gold,
            category=q.category,
            evidence=q.evidence_ids(),
            adversarial_answer=q.adversarial_answer,
        )
        for i, q in enumerate(conv.questions)
    )
    note = load_text("retention_roles").format(user=conv.speaker_a, assistant=conv.speaker_b)
    return RetentionReplay(f"locomo-{conv.sample_id}", tuple(_merge(raw)), questions, note)


def replay_scenario(scenario: Scenario) -> RetentionReplay:
    """A scenario's user turns and scripted replies; its probes become questions."""
    lines: list[ScriptLine] = []
    for n, turn in enumerate(scenario.turns, 1):
        lines.append(ScriptLine("user", turn.user, (f"T{n}",)))
        said = " ".join(r.say for r in turn.replies if r.say).strip()
        lines.append(ScriptLine("assistant", said or "OK.", (f"T{n}",)))
    questions = tuple(
        Question(index=i, question=p.question, gold=p.keyword, category=4, evidence=frozenset({f"T{p.turn}"}))
        for i, p in enumerate(scenario.probes)
    )
    return RetentionReplay(scenario.name, tuple(_merge(lines)), questions, "")


def _is_locomo(path: Path) -> bool:
    """A JSON file whose top level is a list (a scenario file is a mapping)."""
    if path.suffix != ".json":
        return False
    with path.open("rb") as fh:
        head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"[")


def load_replay(source: str, *, data: Path | None = None, conversation: str | None = None) -> RetentionReplay:
    """The replay a SOURCE names (a blocking read; run it in a worker thread).

    SOURCE is a LoCoMo-format file (`conversation` picks one; default the first), a LoCoMo
    conversation id looked up in `data`, a built-in scenario name, or a scenario file.

    Raises:
        ConfigError: nothing readable by that name; the message says what would be.
    """
    scenario = builtin_scenario(source)
    if scenario is not None:
        return replay_scenario(scenario)
    path = Path(source)
    if path.is_file():
        if _is_locomo(path):
            return replay_locomo(pick_conversation(load_locomo(path), conversation))
        return replay_scenario(load_scenario(path))
    if data is not None:
        return replay_locomo(pick_conversation(load_locomo(data), source))
    names = ", ".join(sorted(BUILTIN_SCENARIOS))
    raise ConfigError(
        f"no retention source {source!r}: give a LoCoMo-format file (e.g. ../shared/data/locomo-dev.json), "
        f"a conversation id together with --data PATH, a scenario file, or a built-in scenario ({names})"
    )


def question_prompt(q: Question) -> str:
    """The user message that asks one question (LoCoMo's short-answer style)."""
    hint = ""
    if q.category == 2:
        hint = load_text("retention_hint_date")
    elif q.category == 5 and q.adversarial_answer:
        options = ["Not mentioned in the conversation", q.adversarial_answer]
        if q.index % 2:  # alternate the order, so "(a)" is not always right
            options.reverse()
        hint = load_text("retention_hint_choice").format(first=options[0], second=options[1])
    return load_text("retention_question").format(question=q.question, hint=hint)
