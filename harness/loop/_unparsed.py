"""Replies that hold a tool call the server could not read, or chat-template markup.

A small local model sometimes writes its call as text (`{"name": "memory", "arguments":
...}`, `<tool_call>...`) or leaks template tokens (`<|im_start|>`). Such a reply is never a
final answer: the session turns it into a refused call the model hears about, and the user
never gets the markup as the answer.

A reply that is nothing but a readable call with an unambiguous intent is run as the call
it means (`salvage_call`), so the transcript shows the model a well-formed call from then on.

Nor does the user see it while the reply streams: `HeldText` passes the text through as it
arrives but holds back, from the first character that could begin markup or a call written
as text, until that possibility resolves. Text that turns out to be ordinary (`a < b`, a
JSON example) is shown as soon as it cannot be markup any more; once markup or a call has
begun, the rest of the reply is held until the session has read the whole reply — shown
then if it is an answer after all, dropped if it is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import Literal

from pydantic import JsonValue

from harness.types import ToolCall, ToolSpec

__all__ = ["HeldText", "salvage_call", "unparsed_call"]

_MARKUP = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>|</?tool_call>")
_CALL = re.compile(r'\{\s*"name"\s*:\s*"([A-Za-z0-9_-]{1,64})"\s*,\s*"(?:arguments|parameters)"\s*:')
_WHOLE_CALL = re.compile(
    r'(?:```[A-Za-z]*\s*)?\{\s*"name"\s*:\s*"([^"\\]{1,64})"\s*,\s*"(?:arguments|parameters)"\s*:.*\}\s*(?:```)?',
    re.DOTALL,
)


def unparsed_call(text: str, tools: Collection[str]) -> str | None:
    """Why `text` is not an answer, else None.

    Not an answer: chat-template markup; a call to a known tool written as text; a reply
    that *is* nothing but a call written as text (one JSON object, perhaps fenced) even to
    a name that is no tool — a small model writes `{"name": "add", ...}` for the memory
    tool's `add` action. The reason names the tools, so the model can correct the call.
    """
    if "<" not in text and "{" not in text:
        return None  # markup needs `<`, a call written as text `{`: most answers have neither
    if _MARKUP.search(text):
        return "it contains chat-template markup"
    match = _CALL.search(text)
    if match and match.group(1) in tools:
        return f"it holds a call to {match.group(1)!r} written as text"
    whole = _WHOLE_CALL.fullmatch(text.strip())
    if whole:
        known = ", ".join(tools) or "none"
        return f"it is a call written as text, to {whole.group(1)!r}, which is not a tool; the tools are: {known}"
    return None


_LONE_BACKSLASH = re.compile(r'\\(?![\\"/bfnrtu])')
_OPENS = re.compile(r'\{+\s*"name"\s*:')
_DECODER = json.JSONDecoder()
_WRAPPING = re.compile(r"```[A-Za-z]*|</?tool_call>|[{}\s]")


def _decode(body: str) -> tuple[JsonValue, int] | None:
    """The JSON value `body` opens with and where it ends, else None (trailing text is allowed)."""
    try:
        return _DECODER.raw_decode(body)
    except ValueError:
        try:  # a lone backslash (`"pricing\.py"` in a regex) is the one slip repaired: it can mean only itself
            return _DECODER.raw_decode(_LONE_BACKSLASH.sub(r"\\\\", body))
        except ValueError:
            return None


def _call_object(data: JsonValue) -> dict[str, JsonValue] | None:
    """`data` as a call (a string `name` and object arguments, nothing else), else None."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    args = data.get("arguments", data.get("parameters"))
    if isinstance(args, str):  # arguments as a JSON string, as the wire format has them
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict) or set(data) - {"name", "arguments", "parameters"}:
        return None
    return {"name": data["name"], "arguments": args}


def _written_calls(text: str) -> list[tuple[dict[str, JsonValue], str]]:
    """Every call object written in `text`, read forgivingly.

    A small model copies the template's example (`{{"name": ..., "arguments": {...}}}`,
    doubled braces), fences the object, wraps it in tags spelled as text, or lets text run
    on after it; each object that opens with `"name"` and decodes is one call, returned
    with the text around it.
    """
    calls = []
    at = 0
    while (found := _OPENS.search(text, at)) is not None:
        braces = len(found.group(0)) - len(found.group(0).lstrip("{"))
        start = found.start() + braces - 1  # the innermost brace opens the object
        decoded = _decode(text[start:])
        if decoded is None:
            at = found.end()
            continue
        data, length = decoded
        call = _call_object(data)
        if call is not None:
            calls.append((call, text[:start] + text[start + length :]))
        at = start + length
    return calls


def _action_owner(name: str, arguments: dict[str, JsonValue], specs: Sequence[ToolSpec]) -> ToolSpec | None:
    """The one tool with an `action` named `name` whose parameters cover `arguments`."""
    owners = []
    for spec in specs:
        props = spec.parameters.get("properties")
        if not isinstance(props, dict):
            continue
        action = props.get("action")
        enum = action.get("enum") if isinstance(action, dict) else None
        if isinstance(enum, list) and name in enum and set(arguments) <= set(props):
            owners.append(spec)
    return owners[0] if len(owners) == 1 else None


def _tool_named(name: str, specs: Sequence[ToolSpec]) -> ToolSpec | None:
    """The tool `name` means: its own name, or the one tool whose name ends in `__<name>` (an
    MCP tool without its server's prefix: `read_file` for `proj__read_file`)."""
    exact = [spec for spec in specs if spec.name == name]
    if exact:
        return exact[0]
    suffixed = [spec for spec in specs if spec.name.endswith(f"__{name}")]
    return suffixed[0] if len(suffixed) == 1 else None


def salvage_call(text: str, specs: Sequence[ToolSpec], *, call_id: str) -> ToolCall | None:
    """The call a reply made as text, when it can be read and its intent is unambiguous.

    The reply holds exactly one JSON call object (fenced or not, in tags spelled as text or
    in the template's doubled braces, with prose around it or text run on after it). It
    names a tool, a tool of an MCP server without the server's prefix (when only one tool
    has that name), or an action of exactly one tool (`{"name": "add", "arguments":
    {"target": ...}}` is the memory tool's `add`: a small model mistakes the action for the
    tool) whose parameters cover the arguments, when the reply is nothing but the call.
    Anything else — two calls, a name no tool
    has, an object cut short — is None: refused, not guessed at.
    """
    if "{" not in text:
        return None
    calls = _written_calls(text)
    if len(calls) != 1:
        return None
    ((call, around),) = calls
    name, arguments = call["name"], call["arguments"]
    assert isinstance(name, str) and isinstance(arguments, dict)
    tool = _tool_named(name, specs)
    if tool is not None:
        return ToolCall(call_id, tool.name, json.dumps(arguments, ensure_ascii=False))
    owner = _action_owner(name, arguments, specs)
    # an action's name is a guess: only in a reply that is nothing but the call
    if owner is None or "action" in arguments or _WRAPPING.sub("", around):
        return None
    return ToolCall(call_id, owner.name, json.dumps({"action": name, **arguments}, ensure_ascii=False))


_State = Literal["no", "maybe", "yes"]
"""Does markup (or a call written as text) begin here: cannot, could still, does."""

_TAGS = ("<tool_call>", "</tool_call>")
_TOKEN = re.compile(r"<\|[A-Za-z0-9_]{1,40}\|>")
_TOKEN_PREFIX = re.compile(r"<(?:\|[A-Za-z0-9_]{0,40}\|?)?")
_CALL_OPEN = '{"name":"'
_CALL_SPACE_BEFORE = (1, 7, 8)  # whitespace may come after `{`, after `"name"`, after `:`
_FENCE = re.compile(r"```[A-Za-z]*\s*")
_STARTS = re.compile(r"[<{`]")


def _markup(rest: str) -> _State:
    if any(rest.startswith(t) for t in _TAGS) or _TOKEN.match(rest):
        return "yes"
    if any(t.startswith(rest) for t in _TAGS) or _TOKEN_PREFIX.fullmatch(rest):
        return "maybe"
    return "no"


def _call(rest: str) -> _State:
    """Whether `rest` opens a JSON object whose first key is "name" (a call written as text)."""
    j = 0
    for ch in rest:
        if j == len(_CALL_OPEN):
            return "yes"
        if (ch.isspace() and j in _CALL_SPACE_BEFORE) or (ch == "{" and j == 1):
            continue  # `{{"name"`: the template's doubled braces, copied
        if ch != _CALL_OPEN[j]:
            return "no"
        j += 1
    return "yes" if j == len(_CALL_OPEN) else "maybe"


def _fenced_call(rest: str) -> _State:
    if len(rest) < 3:
        return "maybe" if "```".startswith(rest) else "no"
    fence = _FENCE.match(rest)
    if fence is None:
        return "no"
    after = rest[fence.end() :]
    return "maybe" if not after else _call(after)


def _begins(rest: str) -> _State:
    first = rest[0]
    if first == "<":
        return _markup(rest)
    if first == "{":
        return _call(rest)
    return _fenced_call(rest)


class HeldText:
    """One streamed reply's text, minus what could be markup or a call written as text.

    `feed` each delta and show what it returns; when the reply is complete and turned out to
    be an answer, show `release()` too; when it is refused, show nothing more.
    """

    def __init__(self) -> None:
        self._text = ""
        self._shown = 0
        self._blocked = False

    def feed(self, delta: str) -> str:
        """Add a delta; returns the text that can be shown now (maybe empty)."""
        self._text += delta
        if self._blocked:
            return ""
        start = self._shown
        at = self._shown
        while (found := _STARTS.search(self._text, at)) is not None:
            state = _begins(self._text[found.start() :])
            if state == "no":
                at = found.start() + 1
                continue
            self._blocked = state == "yes"
            self._shown = found.start()
            return self._text[start : self._shown]
        self._shown = len(self._text)
        return self._text[start:]

    def release(self) -> str:
        """The held text, for a reply that is an answer after all (a JSON example, a lone `<`)."""
        held = self._text[self._shown :]
        self._shown = len(self._text)
        return held
