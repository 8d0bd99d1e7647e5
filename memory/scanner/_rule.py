"""`Rule`: one pattern, the views it runs on, and what else must (or must not) be there."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memory.scanner._normalize import Views
from memory.scanner._types import FindingCategory, ScanScope

__all__ = ["ENGLISH", "Rule", "ViewName", "imperative", "rule"]

ViewName = Literal["lowered", "folded", "joined", "compact", "leet"]
ENGLISH: tuple[ViewName, ...] = ("folded", "joined", "leet")

_FLAGS = re.IGNORECASE | re.MULTILINE

# Where an instruction starts: the start of the text or a clause, a bullet, a comma (after
# a trigger such as "when you see X,"), or a connective/adverb. Then up to two adverbs.
_ADVERB = (
    r"(?:please|always|just|quietly|silently|secretly|then|also|immediately|now|first|simply|automatically)"
)
_CLAUSE = (
    rf"(?:^|[.;:!?\n(\[\"'`>•*,—–]|\b(?:then|and|also|next|afterwards|{_ADVERB})\b)\s{{0,3}}"
    rf"(?:{_ADVERB}\s{{1,3}}){{0,2}}"
)
# ...or addressed to the agent: "you must", "the assistant should always".
_MODAL = (
    r"\b(?:you|agent|assistant|model|ai)\W{1,3}(?:must|should|shall|will|need\W{1,3}to|have\W{1,3}to"
    r"|are\W{1,3}to|'ll|’ll)\W{1,3}(?:always\W{1,3}|quietly\W{1,3}|silently\W{1,3}|also\W{1,3})?"
)


def imperative(verbs: str) -> str:
    """A regex for one of `verbs` used as an instruction (clause-initial or after "you must")."""
    return rf"(?:{_CLAUSE}|{_MODAL})(?:{verbs})\b"


@dataclass(frozen=True, slots=True)
class Rule:
    """One detection rule.

    Attributes:
        id: the stable finding id.
        category: the threat family reported.
        scope: `context` rules run in both scopes; `strict` rules only on memory writes.
        description: the short human explanation in findings.
        regex: the pattern; it hits when found in any of `views`.
        views: which normalized texts it runs on (see `memory.scanner._normalize`).
        before: for anchored rules, a verb that must precede a `regex` hit on the same line
            within `lookback` characters (the rare part is found first; linear work).
        requires: a second pattern that must also be found in the same view: the
            instruction to the agent (an imperative) that turns a topic into an attack.
        unless: a pattern that, found in the same view, means the text is not an instruction
            to the agent (e.g. "by hand").
        negation: a pattern that, ending right where a `regex` hit starts, cancels that hit
            ("don't ignore the instructions", "never ignore ..."): an instruction *not* to
            do it. Other hits in the same text still count.
    """

    id: str
    category: FindingCategory
    scope: ScanScope
    description: str
    regex: re.Pattern[str]
    views: tuple[ViewName, ...] = ("folded",)
    before: re.Pattern[str] | None = None
    lookback: int = 120
    requires: re.Pattern[str] | None = None
    unless: re.Pattern[str] | None = None
    negation: re.Pattern[str] | None = None

    def hits(self, v: Views) -> bool:
        """Whether the rule fires on any of its views."""
        texts = dict.fromkeys(getattr(v, name) for name in self.views)  # a view equal to another adds nothing
        return any(self._hits(text) for text in texts)

    def _hits(self, text: str) -> bool:
        if not self._found(text):
            return False
        if self.requires is not None and self.requires.search(text) is None:
            return False
        return self.unless is None or self.unless.search(text) is None

    def _found(self, text: str) -> bool:
        if self.before is None and self.negation is None:
            return self.regex.search(text) is not None
        pos = 0
        while (match := self.regex.search(text, pos)) is not None:
            start = match.start()
            # A negated hit must not swallow a later one inside its span: go on from the next
            # character. Each retry starts further on, so the work stays bounded.
            pos = start + 1 if self.negation is not None else max(match.end(), start + 1)
            if self.negation is not None and self.negation.search(text, max(0, start - 40), start):
                continue
            if self.before is None:
                return True
            low = max(0, start - self.lookback)
            low = max(low, text.rfind("\n", low, start) + 1)
            if self.before.search(text, low, start):
                return True
        return False


def rule(
    rid: str,
    category: FindingCategory,
    scope: ScanScope,
    description: str,
    regex: str,
    *,
    views: tuple[ViewName, ...] = ("folded",),
    before: str | None = None,
    lookback: int = 120,
    requires: str | None = None,
    unless: str | None = None,
    negation: str | None = None,
) -> Rule:
    """Compile a `Rule` (case-insensitive, `^` matching at line starts)."""

    def compiled(pattern: str | None) -> re.Pattern[str] | None:
        return None if pattern is None else re.compile(pattern, _FLAGS)

    return Rule(
        rid,
        category,
        scope,
        description,
        re.compile(regex, _FLAGS),
        views,
        compiled(before),
        lookback,
        compiled(requires),
        compiled(unless),
        # anchored at the hit: `$` matches at `endpos`, the hit's start
        compiled(None if negation is None else rf"(?:{negation})\W{{0,5}}$"),
    )
