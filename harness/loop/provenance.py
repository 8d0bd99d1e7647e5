"""Which text in the transcript the user did not write, for judging memory writes.

The transcript already says where every message came from: `tool` messages are tool results
(a fetch tool's are fetched documents; `session_search` and the memory providers' tools
return recalled memory), recall is fenced onto a user message (`api_content`), and what a
user pasted shows in the message itself (fenced, quoted or forwarded text; see
`memory.provenance.own_words`). `transcript_provenance` gathers them, with the user's own
words, into the `TurnProvenance` the memory tool judges a write against — over the whole
transcript, so a fact read in turn 2 and saved in turn 5 (or by the compression flush) is
still known to be someone else's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.types import Message
from memory import MEMORY_TOOL_NAME
from memory.provenance import Origin, TurnProvenance, Untrusted, own_words, untrusted_of

__all__ = ["tool_origin", "transcript_provenance"]

_FETCH = re.compile(r"fetch|browse|web|http|url|download|crawl|scrape|read_page", re.IGNORECASE)
_RECALL = re.compile(r"session_search|semantic_|fact_|memory_search|recall", re.IGNORECASE)


def tool_origin(name: str) -> Origin:
    """What a tool's result is: recalled memory, a fetched document, or a tool result."""
    if _RECALL.search(name):
        return "recalled"
    if _FETCH.search(name):
        return "fetched"
    return "tool_result"


def transcript_provenance(messages: Sequence[Message], *, described: Sequence[str] = ()) -> TurnProvenance:
    """The user's own words and every untrusted text in `messages`, with the descriptions
    of the tools the model was shown that keel did not write (`described`)."""
    own: list[str] = []
    untrusted: list[Untrusted] = []
    for message in messages:
        if message.role == "user" and not message.summary:
            own.append(own_words(message.content))
            recalled = message.wire_content[len(message.content) :] if message.api_content else ""
            untrusted += untrusted_of(message.content, recalled=recalled)
        elif message.role == "tool" and message.name != MEMORY_TOOL_NAME and message.content.strip():
            untrusted.append(Untrusted(tool_origin(message.name or ""), message.content))
    untrusted += (Untrusted("tool_description", d) for d in described if d.strip())
    return TurnProvenance(own="\n".join(own), untrusted=tuple(untrusted))
