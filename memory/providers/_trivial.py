"""Which user messages are too slight to recall memory for.

Recall costs a provider round-trip and tokens on the user message; an acknowledgement such
as "ok" or "thanks!" carries no topic to search for. The list is anchored: the whole
message must be acknowledgements plus punctuation or emoji, so "k8s" or "no, use postgres"
still get recall.
"""

from __future__ import annotations

import re

__all__ = ["is_trivial"]

_ACKS = (
    "yes|no|ok|okay|sure|thanks|thank you|thx|ty|y|n|yep|yup|nope|yeah|nah|hi|hey|hello|yo|sup|"
    "continue|go ahead|go on|do it|proceed|got it|cool|nice|great|done|next|lgtm|k|kk|alright|fine"
)
# Acknowledgements separated and followed only by whitespace, punctuation or emoji
# (anything that is not a word character).
_TRIVIAL = re.compile(rf"^(?:{_ACKS})(?:[\W_]+(?:{_ACKS}))*[\W_]*$", re.IGNORECASE)


def is_trivial(text: str) -> bool:
    """True for messages that skip recall: empty, a `/command`, or only acknowledgements."""
    stripped = text.strip()
    if not stripped or stripped.startswith("/"):
        return True
    return _TRIVIAL.match(stripped) is not None
