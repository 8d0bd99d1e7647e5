"""Replies that hold a tool call the server could not read, or chat-template markup.

A small local model sometimes writes its call as text (`{"name": "memory", "arguments":
...}`, `<tool_call>...`) or leaks template tokens (`<|im_start|>`). Such a reply is never a
final answer: the session turns it into a refused call the model hears about, and the user
never gets the markup as the answer.
"""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["unparsed_call"]

_MARKUP = re.compile(r"<\|im_(?:start|end)\|>|<\|endoftext\|>|</?tool_call>")
_CALL = re.compile(r'\{\s*"name"\s*:\s*"([A-Za-z0-9_-]{1,64})"\s*,\s*"(?:arguments|parameters)"\s*:')


def unparsed_call(text: str, tools: Collection[str]) -> str | None:
    """Why `text` is not an answer (markup, or a call to a known tool written as text), else None."""
    if _MARKUP.search(text):
        return "it contains chat-template markup"
    match = _CALL.search(text)
    if match and match.group(1) in tools:
        return f"it holds a call to {match.group(1)!r} written as text"
    return None
