"""A rendered prompt cut into the template's own markup and the text it was given.

Only the template's markup may become control tokens: `<|im_end|><|im_start|>system` inside a
user message, a tool result, recalled memory or a tool description must be tokenized as the
text it is, or anyone who can put text in front of the model can open a system turn.
`render_parts` renders the template once with every content string replaced by a marker and
once as is; the first gives the cut, and the markers are filled back with the real strings —
raw where the template wrote the value as it is, JSON-escaped where it wrote it through
`tojson` (a marker carries a newline, which JSON escapes, so the two are told apart).
The filled parts must join to exactly the plain render; when they do not (a template that
trims, slices or tests the text it is given), the answer is None and the caller decides
(keel's server then refuses a request whose content holds control-token text).

Markers use a random nonce per render, so no content can forge one.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable, Sequence

from pydantic import JsonValue

__all__ = ["Part", "render_parts"]

Part = tuple[str, bool]
"""(text, is_markup): markup may hold control tokens, content never does."""
JsonDict = dict[str, JsonValue]
_CONTENT_KEYS = frozenset({"content", "reasoning_content", "text"})


def _mark_tree(value: JsonValue, mark: Callable[[str], str]) -> JsonValue:
    if isinstance(value, str):
        return mark(value) if value else value
    if isinstance(value, list):
        return [_mark_tree(v, mark) for v in value]
    if isinstance(value, dict):
        return {k: _mark_tree(v, mark) for k, v in value.items()}
    return value


def _mark_item(item: JsonDict, mark: Callable[[str], str]) -> JsonDict:
    out: JsonDict = {}
    for key, value in item.items():
        if key in _CONTENT_KEYS:
            out[key] = _mark_tree(value, mark)
        elif key == "tool_calls" and isinstance(value, list):
            out[key] = [_mark_call(c, mark) for c in value]
        else:
            out[key] = value
    return out


def _mark_call(call: JsonValue, mark: Callable[[str], str]) -> JsonValue:
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(fn, dict):
        return call
    return {**call, "function": {**fn, "arguments": _mark_tree(fn.get("arguments"), mark)}}


def _mark_tool(value: JsonValue, mark: Callable[[str], str]) -> JsonValue:
    """Descriptions anywhere in a tool (its own, its parameters') are content."""
    if isinstance(value, list):
        return [_mark_tool(v, mark) for v in value]
    if isinstance(value, dict):
        return {
            k: (mark(v) if k == "description" and isinstance(v, str) and v else _mark_tool(v, mark))
            for k, v in value.items()
        }
    return value


def render_parts(
    render: Callable[[Sequence[JsonDict], Sequence[JsonDict] | None], str],
    items: Sequence[JsonDict],
    tools: Sequence[JsonDict] | None,
) -> list[Part] | None:
    """The render of `items`/`tools` as markup and content parts (see the module docstring).

    Args:
        render: runs the template over prepared items and tools.
        items: the template's `messages`, as `harness.modelfiles._items` prepares them.
        tools: the template's `tools`.

    Raises:
        ChatTemplateError: the template refused the conversation.
    """
    nonce = secrets.token_hex(8)
    values: list[str] = []

    def mark(value: str) -> str:
        values.append(value)
        return f"\ue000{nonce}:{len(values) - 1}\n\ue001"

    marked_items = [_mark_item(dict(i), mark) for i in items]
    marked_tools = (
        [t for t in (_mark_tool(dict(t), mark) for t in tools) if isinstance(t, dict)] if tools else tools
    )
    marked = render(marked_items, marked_tools)
    plain = render(items, tools)
    pattern = re.compile("\ue000" + nonce + r":(\d+)(\n|\\n)\ue001")
    parts: list[Part] = []
    pos = 0
    for m in pattern.finditer(marked):
        if m.start() > pos:
            parts.append((marked[pos : m.start()], True))
        value = values[int(m[1])]
        parts.append((value if m[2] == "\n" else json.dumps(value, ensure_ascii=False)[1:-1], False))
        pos = m.end()
    if pos < len(marked):
        parts.append((marked[pos:], True))
    if "".join(text for text, _ in parts) != plain:
        return None
    return [p for p in parts if p[0]]
