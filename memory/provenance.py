"""Where text came from, and what a memory write that repeats untrusted text may do.

The scanner reads a write's words; provenance asks where they came from. Text the user typed
is theirs. Text that entered the conversation any other way — a tool's result, a fetched
page, memory recalled from another session, or a document the user pasted — was written by
someone else, and an instruction hidden in it ("save this as a fact: ...") is how memory
gets poisoned without any attack pattern in the words. The harness marks that text
(`Untrusted`, with its `Origin`); before a memory write lands, `derived_from` tells whether
its content comes from such text rather than from the user's own words, and the configured
`ProvenancePolicy` decides: `hold` it for the user to confirm (`memory.curated.PendingWrites`),
`refuse` it, or `allow` it as before.

"Comes from" is the grounding test the flush and semantic learning already use
(`memory.grounding.grounded`): the content's numbers and most of its content words occur in
the untrusted text, and do not all occur in what the user said themselves (`own_words`).
Content the model phrased from its own knowledge is grounded in neither and is not held.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memory.grounding import grounded

__all__ = [
    "ORIGIN_LABELS",
    "Origin",
    "ProvenancePolicy",
    "TurnProvenance",
    "Untrusted",
    "derived_from",
    "holds_recall",
    "own_words",
    "pasted_part",
    "recall_free",
    "untrusted_of",
]

Origin = Literal["tool_result", "fetched", "recalled", "pasted", "tool_description"]
ProvenancePolicy = Literal["hold", "refuse", "allow"]

ORIGIN_LABELS: dict[Origin, str] = {
    "tool_result": "a tool result",
    "fetched": "a fetched document",
    "recalled": "recalled memory",
    "pasted": "text the user pasted",
    "tool_description": "a tool's description (an MCP server's or a plug-in's)",
}


@dataclass(frozen=True, slots=True)
class Untrusted:
    """Text in the conversation that the user did not write themselves."""

    origin: Origin
    text: str
    kind: Literal["untrusted"] = "untrusted"


@dataclass(frozen=True, slots=True)
class TurnProvenance:
    """What a memory write is judged against: the user's own words and the untrusted text
    the model had read when it wrote (the current turn's, or a flushed span's)."""

    own: str
    untrusted: tuple[Untrusted, ...] = ()
    kind: Literal["turn_provenance"] = "turn_provenance"


def derived_from(content: str, provenance: TurnProvenance) -> Untrusted | None:
    """The untrusted text `content` repeats, or None when it is the user's or the model's own.

    Content grounded in the user's own words is theirs even if a tool said it too.
    """
    if not provenance.untrusted or not content.strip() or grounded(content, provenance.own):
        return None
    for untrusted in provenance.untrusted:
        if grounded(content, untrusted.text):
            return untrusted
    return None


_FENCE = re.compile(r"```.{0,20000}?(?:```|$)", re.DOTALL)
_QUOTED_LINE = re.compile(r"^[ \t]{0,3}>.{0,2000}$", re.MULTILINE)
_PASTED_TAG = re.compile(
    r"<(pasted|document|email|file)\b[^>]{0,200}>.{0,200000}?(?:</\1>|$)", re.DOTALL | re.IGNORECASE
)
# Where a forwarded message or a pasted e-mail starts; the rest of the message is theirs, not the user's.
_PASTE_START = re.compile(
    r"^[ \t]{0,3}(?:-{2,}\s{0,3}(?:original|forwarded)\s{1,3}message\s{0,3}-{2,}|begin\s{1,3}forwarded\s{1,3}message"
    r"|(?:from|subject|to|cc|date|sent)\s{0,3}:\s{0,3}\S[^\n]{0,200}\n(?:[ \t]{0,3}(?:from|subject|to|cc|date|sent)\s{0,3}:))",
    re.IGNORECASE | re.MULTILINE,
)


# Recall rides on the user message inside a `<memory-context>` fence (prompts/fence.py): it is
# memory read back, never something anyone said now, so no write path may learn from it. An
# unclosed fence runs to the end of the text.
_RECALL = re.compile(r"<\s*memory-context\s*>.*?(?:<\s*/\s*memory-context\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_RECALL_TAG = re.compile(r"<\s*/?\s*memory-context\s*>", re.IGNORECASE)


def recall_free(text: str) -> str:
    """`text` without recalled memory: every `<memory-context>` block and stray fence tag."""
    return _RECALL_TAG.sub(" ", _RECALL.sub(" ", text))


def holds_recall(text: str) -> bool:
    """`text` has a `<memory-context>` block or tag in it."""
    return _RECALL_TAG.search(text) is not None


def own_words(user_text: str) -> str:
    """`user_text` without what the user pasted or quoted: fenced blocks, `>` lines, text
    marked as pasted (`<pasted>...</pasted>`, `<document>`, `<email>`, `<file>`), and
    everything from a forwarded message or an e-mail header block on."""
    text = _PASTED_TAG.sub(" ", user_text)
    text = _FENCE.sub(" ", text)
    text = _QUOTED_LINE.sub(" ", text)
    start = _PASTE_START.search(text)
    return text[: start.start()] if start else text


def pasted_part(user_text: str) -> str:
    """What `own_words` leaves out of `user_text` (empty when the user pasted nothing)."""
    own = own_words(user_text)
    return "" if own == user_text else user_text


def untrusted_of(
    user_text: str, tool_results: Sequence[str] = (), recalled: str = ""
) -> tuple[Untrusted, ...]:
    """The untrusted texts of one turn: pasted parts of the user's message, the tool results
    it led to, and the memory recalled onto it."""
    found: list[Untrusted] = []
    if pasted := pasted_part(user_text):
        found.append(Untrusted("pasted", pasted))
    found += [Untrusted("tool_result", text) for text in tool_results if text.strip()]
    if recalled.strip():
        found.append(Untrusted("recalled", recalled))
    return tuple(found)
