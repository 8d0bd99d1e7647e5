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
    "PlantedFact",
    "fact_in",
    "fact_in_text",
    "has_term",
    "load_facts",
    "units",
]

MAX_UNIT = 300
"""The longest piece of text a fact may be found in (the local-flush entry limit)."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """One planted fact: an id and its match alternatives (lower-cased terms)."""

    id: str
    match: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class FactConversation:
    """One conversation of a facts file: its messages, in order, and the facts it plants."""

    id: str
    messages: tuple[tuple[Literal["user", "assistant"], str], ...]
    facts: tuple[PlantedFact, ...]


def has_term(text: str, term: str) -> bool:
    """`term` occurs in `text` as a whole word, ignoring case."""
    return re.search(r"(?<![\w+#])" + re.escape(term) + r"(?![\w+#])", text, re.I) is not None


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
        out.append(FactConversation(str(c.get("id", n + 1)), messages, _facts(c.get("facts") or [], where)))
    return tuple(out)
