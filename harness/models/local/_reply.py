"""The embedded model's replies: native tool calls read back out of generated text.

The prompt side (the model's own Jinja template, tools spelled out for a template without
tool support) is `harness.modelfiles.TemplateRenderer` in the `keel` dialect, shared with the
cache meter so the meter predicts exactly what this server renders.

`parse_reply` turns generated text into content plus tool calls. It accepts what small
models really write — tagged blocks, an unclosed last block, a bare JSON object or a fenced
```json block naming a known tool, `arguments` as an object or as a JSON string,
`parameters` for `arguments` — and never raises: a block it cannot read becomes a call whose
arguments are the raw text, with the reason, so the harness answers it with a tool error
(a refused call the caller can show) instead of crashing or silently dropping it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pydantic import JsonValue

from harness.modelfiles import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

__all__ = ["INVALID_CALL_NAME", "ParsedCall", "ParsedReply", "parse_reply"]

INVALID_CALL_NAME = "invalid_tool_call"

JsonDict = dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One tool call read from the model's text. `error` is set when it could not be read."""

    name: str
    arguments: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedReply:
    content: str
    calls: tuple[ParsedCall, ...] = ()


_BLOCK = re.compile(re.escape(TOOL_CALL_OPEN) + r"(.*?)(?:" + re.escape(TOOL_CALL_CLOSE) + r"|$)", re.S)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)
_NAME = re.compile(r'"name"\s*:\s*"([^"]+)"')


def _call_from_json(text: str, *, tagged: bool) -> ParsedCall | None:
    """A call from one JSON object's text; None when an untagged text is not a call."""
    body = text.strip()
    try:
        data: JsonValue = json.loads(body)
    except ValueError as exc:
        if not tagged:
            return None
        found = _NAME.search(body)
        return ParsedCall(
            found.group(1) if found else INVALID_CALL_NAME,
            body,
            f"the tool call is not valid JSON ({exc}); it was not run",
        )
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(name, str) or not name:
        if not tagged:
            return None
        return ParsedCall(INVALID_CALL_NAME, body, "the tool call names no function; it was not run")
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):
        try:
            decoded: JsonValue = json.loads(args)
        except ValueError:
            return ParsedCall(name, args, "the tool call's arguments are not valid JSON; it was not run")
        args = decoded
    if not isinstance(args, dict):
        return ParsedCall(
            name, json.dumps(args, ensure_ascii=False), "the tool call's arguments are not a JSON object"
        )
    return ParsedCall(name, json.dumps(args, ensure_ascii=False))


def parse_reply(text: str, tool_names: frozenset[str]) -> ParsedReply:
    """Split generated text into its prose and its tool calls (never raises)."""
    if TOOL_CALL_OPEN in text:
        calls = tuple(
            call
            for call in (_call_from_json(m.group(1), tagged=True) for m in _BLOCK.finditer(text))
            if call is not None
        )
        prose = _BLOCK.sub("", text).strip()
        return ParsedReply(prose, calls)
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    candidate = fenced.group(1) if fenced else stripped
    if candidate.startswith("{"):
        call = _call_from_json(candidate, tagged=False)
        if call is not None and call.name in tool_names:
            return ParsedReply("", (call,))
    return ParsedReply(text)
