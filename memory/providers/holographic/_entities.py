"""Pulling entity names out of a fact, without a model.

Three patterns, in this order: quoted strings (straight or curly double quotes, curly
single quotes — straight single quotes are apostrophes far too often), "X aka Y" / "X also
known as Y" (Y becomes an alias of X), and runs of two or more Capitalized Words. A
capitalized run that starts a sentence and is made only of generic words ("Project Status",
"Next Steps") is a heading, not a name, and is skipped; so is one that starts with No/Not.
Names are NFKC-normalised, at most 80 characters and 8 words, with a trailing possessive
removed, and de-duplicated case-insensitively.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

__all__ = ["ExtractedEntity", "extract_entities"]

_MAX_CHARS = 80
_MAX_WORDS = 8

_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|“([^”\n]{2,80})”|‘([^’\n]{2,80})’")
_CAP_WORD = r"[A-Z][\w&'’.-]*"
_CAP_PHRASE = re.compile(rf"\b{_CAP_WORD}(?:[ \t]+{_CAP_WORD})+")
_CAP_RUN = rf"{_CAP_WORD}(?:[ \t]+{_CAP_WORD})*"
_AKA = re.compile(rf"({_CAP_RUN})\s*,?\s*(?:aka|a\.k\.a\.|also known as)\s+({_CAP_RUN})")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
_POSSESSIVE = re.compile(r"['’]s$")

# Words that are capitalized at the start of a sentence or in a heading without naming
# anything. A capitalized run made only of these, at a sentence start, is not an entity.
_GENERIC_TEXT = """
    a an the this that these those my our your his her their its we i you he she they it
    project status update updates note notes meeting meetings summary plan plans task tasks todo
    issue issues bug bugs feature features team today tomorrow yesterday next last new old first
    final weekly daily monthly general important key action actions item items open question
    questions overview details background context goal goals decision decisions follow up also
    then so but and or when after before if hey hi hello thanks yes ok well just please step
    steps current recent main other some all every each more most
"""
_GENERIC = frozenset(_GENERIC_TEXT.split())


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    """A name found in a fact, with the aliases the fact gave it."""

    name: str
    aliases: tuple[str, ...] = ()
    kind: Literal["extracted_entity"] = "extracted_entity"


def _clean(name: str) -> str | None:
    name = _POSSESSIVE.sub("", " ".join(name.split())).strip(" \t.,;:-")
    if not name or len(name) > _MAX_CHARS or len(name.split()) > _MAX_WORDS:
        return None
    return name


def _at_sentence_start(text: str, index: int) -> bool:
    return _SENTENCE_START.search(text[:index]) is not None


def extract_entities(text: str) -> list[ExtractedEntity]:
    """The entities named in `text`, in order of first appearance."""
    text = unicodedata.normalize("NFKC", text)
    found: dict[str, ExtractedEntity] = {}

    def keep(name: str | None, aliases: tuple[str, ...] = ()) -> None:
        if name is None:
            return
        key = name.casefold()
        previous = found.get(key)
        if previous is None:
            found[key] = ExtractedEntity(name=name, aliases=aliases)
        elif aliases:
            merged = tuple(dict.fromkeys(previous.aliases + aliases))
            found[key] = ExtractedEntity(name=previous.name, aliases=merged)

    for match in _QUOTED.finditer(text):
        keep(_clean(next(group for group in match.groups() if group is not None)))
    aliased: set[str] = set()
    for match in _AKA.finditer(text):
        name, alias = _clean(match.group(1)), _clean(match.group(2))
        if name is None:
            continue
        keep(name, (alias,) if alias and alias.casefold() != name.casefold() else ())
        if alias:
            aliased.add(alias.casefold())
    for match in _CAP_PHRASE.finditer(text):
        phrase = match.group(0)
        tokens = phrase.split()
        if tokens[0] in ("No", "Not"):
            continue
        if _at_sentence_start(text, match.start()):
            if all(t.strip("'’.,").lower() in _GENERIC for t in tokens):
                continue
            # "Yesterday Alice Smith": the sentence-initial generic word is not part of the name.
            while tokens and tokens[0].lower() in _GENERIC:
                tokens = tokens[1:]
            if len(tokens) < 2:
                continue
        name = _clean(" ".join(tokens))
        if name is not None and name.casefold() not in aliased:
            keep(name)
    return list(found.values())
