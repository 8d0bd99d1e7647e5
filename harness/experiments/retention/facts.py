"""Durable facts as a retention source: the local-flush conversations format and its matcher.

A facts file (`benchmarks/local_flush_conversations.yaml`, the set the flush is tuned on;
`benchmarks/facts_heldout.yaml` and `benchmarks/facts_heldout2.yaml`, written apart and
measured only) holds short conversations, each planting durable facts about the user, and for each fact
its `match` alternatives: lists of terms. The rule is the local-flush benchmark's, kept in
one place so both measure the same thing:

- a fact is *in* a piece of text when one of its alternatives has every term in it as a
  whole word (case-insensitive; `c++` and `c#` count as words);
- the piece must be at most `MAX_UNIT` characters: a memory entry, a line of the summary, a
  sentence of a kept message — a fact scattered over a whole page is not one fact, and
  neither is a long list (the summary's identifier index is one line, cut only at sentence
  ends: a name in a list of forty identifiers does not say who the user is).

`units` cuts what the model sees into such pieces (lines, and long lines into sentences).

A conversation may also list `must_not`: what a memory must never say (`{id, match, unless}`).
A saved entry is a *wrong memory* when it has every term of one `match` alternative as whole
words and none of the `unless` texts (plain lower-case substrings, so `n't` and `if ` work):
"exam board uses 9.81" where the user said never 9.81. So is an entry that copies a chat line
whole with its speaker ("Caroline: The support group has made me…"): a line of talk is not
a fact (`copied_line`). `wrong_memory` applies both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from harness.errors import ConfigError

__all__ = [
    "MAX_UNIT",
    "FactConversation",
    "MustNot",
    "PlantedFact",
    "chat_lines",
    "copied_line",
    "fact_in",
    "fact_in_text",
    "has_term",
    "load_facts",
    "units",
    "wrong_memory",
]

MAX_UNIT = 300
"""The longest piece of text a fact may be found in (the local-flush entry limit)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SPEAKER = re.compile(r"^[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)?: ")
_COPIED = 60
"""Characters of a chat line (with its speaker) an entry must hold to count as a copy of it."""
_SHORTEST = 30
"""A chat line shorter than this ("user: ok, thanks") is too short to tell a copy by."""
# scripts written without spaces between words: a term in them is found as a substring, and
# a Latin term next to them ("用Figma做") still stands as a word
_UNSPACED_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]")
_WORD_CHAR = f"[^\\W{_UNSPACED_CHARS}]|[+#]"


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """One planted fact: an id and its match alternatives (lower-cased terms)."""

    id: str
    match: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class MustNot:
    """What no memory entry may say: every term of one `match` alternative, none of `unless`."""

    id: str
    match: tuple[tuple[str, ...], ...]
    unless: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FactConversation:
    """One conversation of a facts file: its messages, in order, the facts it plants, and
    what a memory of it must not say."""

    id: str
    messages: tuple[tuple[Literal["user", "assistant"], str], ...]
    facts: tuple[PlantedFact, ...]
    must_not: tuple[MustNot, ...] = ()


def has_term(text: str, term: str) -> bool:
    """`term` occurs in `text` as a whole word, ignoring case (in Chinese or Japanese, which
    put no space between words, anywhere)."""
    if _UNSPACED.search(term):
        return term.lower() in text.lower()
    return re.search(f"(?<!{_WORD_CHAR})" + re.escape(term) + f"(?!{_WORD_CHAR})", text, re.I) is not None


def _flat(text: str) -> str:
    return " ".join(text.lower().split())


def chat_lines(lines: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """Each line of talk as `Speaker: words` (a line without a speaker's name gets its role)."""
    out: list[str] = []
    for role, text in lines:
        for line in text.splitlines():
            line = line.strip()
            said = _flat(line if _SPEAKER.match(line) else f"{role}: {line}")
            if len(said) >= _SHORTEST and not line.startswith("("):
                out.append(said)
    return tuple(out)


def copied_line(entry: str, lines: Iterable[str]) -> str | None:
    """The chat line (from `chat_lines`) `entry` copies whole with its speaker, if any: its
    first `_COPIED` characters, speaker included, as they were said."""
    flat = _flat(entry)
    return next((line for line in lines if line[:_COPIED] in flat), None)


def wrong_memory(entry: str, rules: Iterable[MustNot], lines: Iterable[str]) -> str | None:
    """Why `entry` is a wrong memory (the `must_not` id, or `copied line`), or None."""
    low = entry.lower()
    for rule in rules:
        if any(all(has_term(entry, t) for t in alt) for alt in rule.match) and not any(
            u in low for u in rule.unless
        ):
            return rule.id
    return "copied line" if copied_line(entry, lines) is not None else None


def fact_in(unit: str, fact: PlantedFact) -> bool:
    """Every term of one of the fact's alternatives is in `unit` (at most `MAX_UNIT` chars)."""
    return len(unit) <= MAX_UNIT and any(all(has_term(unit, t) for t in alt) for alt in fact.match)


def units(text: str) -> list[str]:
    """The pieces a fact is looked for in: lines, and lines over `MAX_UNIT` as sentences."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        out.extend([line] if len(line) <= MAX_UNIT else [s for s in _SENTENCE.split(line) if s])
    return out


def fact_in_text(text: str, fact: PlantedFact) -> bool:
    """The fact is in one of the text's units."""
    return any(fact_in(u, fact) for u in units(text))


def _role(value: object, where: str) -> Literal["user", "assistant"]:
    if value == "user":
        return "user"
    if value == "assistant":
        return "assistant"
    raise ConfigError(f"{where}: role {value!r} is not 'user' or 'assistant'")


def _facts(raw: Iterable[object], where: str) -> tuple[PlantedFact, ...]:
    out: list[PlantedFact] = []
    for f in raw:
        if not isinstance(f, dict) or "id" not in f or not isinstance(f.get("match"), list):
            raise ConfigError(f"{where}: each fact needs an `id` and a `match` list of term lists")
        alts = tuple(tuple(str(t).lower() for t in alt) for alt in f["match"] if isinstance(alt, list))
        out.append(PlantedFact(str(f["id"]), alts))
    return tuple(out)


def _must_not(raw: Iterable[object], where: str) -> tuple[MustNot, ...]:
    out: list[MustNot] = []
    for f in raw:
        unless = f.get("unless", []) if isinstance(f, dict) else None
        if not isinstance(f, dict) or "id" not in f or not isinstance(f.get("match"), list):
            raise ConfigError(f"{where}: each `must_not` needs an `id` and a `match` list of term lists")
        if not isinstance(unless, list):
            raise ConfigError(f"{where}: `must_not` {f['id']!r}: `unless` must be a list of texts")
        alts = tuple(tuple(str(t).lower() for t in alt) for alt in f["match"] if isinstance(alt, list))
        out.append(MustNot(str(f["id"]), alts, tuple(str(u).lower() for u in unless)))
    return tuple(out)


def load_facts(path: Path) -> tuple[FactConversation, ...]:
    """Read a facts file (a blocking read; run it in a worker thread).

    Raises:
        ConfigError: the file is missing or not in the local-flush conversations format.
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read facts file {str(path)!r}: {exc}") from exc
    convs = raw.get("conversations") if isinstance(raw, dict) else None
    if not isinstance(convs, list) or not convs:
        raise ConfigError(
            f"{str(path)!r} has no `conversations` list; see benchmarks/local_flush_conversations.yaml"
        )
    out: list[FactConversation] = []
    for n, c in enumerate(convs):
        where = f"{path.name}: conversation {n + 1}"
        if not isinstance(c, dict) or not isinstance(c.get("messages"), list):
            raise ConfigError(f"{where} needs `id`, `messages` and `facts`")
        messages = tuple((_role(m.get("role"), where), str(m.get("content", ""))) for m in c["messages"])
        out.append(
            FactConversation(
                str(c.get("id", n + 1)),
                messages,
                _facts(c.get("facts") or [], where),
                _must_not(c.get("must_not") or [], where),
            )
        )
    return tuple(out)
