"""Claude Code session transcripts → `MeterRequest`s, one per API response.

Claude Code keeps one JSONL file per session under `~/.claude/projects/<project>/`.
Anthropic documents where the files live and calls the line format internal and subject to
change; this reader follows the public descriptions of it. Each line is a JSON object tagged by
`type`: `user` and `assistant` lines wrap a Messages API `message` in an envelope (`uuid`,
`parentUuid`, `sessionId`, `timestamp`, `isSidechain`); other types (`summary`, `system`,
`file-history-snapshot`, ...) are bookkeeping and are passed over. One API response is
written as one assistant line per content block, each repeating `message.id` and
`message.usage`.

Each response is one request. Its prompt is the conversation that led to it: the chain of
`parentUuid` links from its first line back to the root (edits, retries and `/compact` start
new chains, so the chain is what was sent), the lines of one response merged into one
message. Its model is `message.model`, its time the line's `timestamp`, its reported usage
`message.usage` (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`;
`cache_creation.ephemeral_1h_input_tokens` above zero marks a 1-hour TTL). Sidechain lines
(subagents) are their own conversation. Lines of model `<synthetic>` (API errors that never
reached the API) are not requests.

What a transcript does not carry — the reader says so in a note: the system prompt, the tool
definitions (together often over 10,000 tokens) and where Claude Code put its cache_control
breakpoints. The simulated prompt is the messages only, so simulated prompt tokens fall short
of the reported ones; a change of the system prompt or the tools cannot be seen, so it is
never attributed; the Anthropic simulator runs in automatic mode. Thinking blocks are
rendered as the transcript holds them, though the API drops earlier turns' thinking.

A line that is not JSON, not an object, or a user/assistant line without a usable `message`
is skipped and named (file and line) in the notes; it never stops the reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import JsonValue

from harness.cachemeter._request import MeterMessage, MeterRequest
from harness.cachemeter.traces._chat import content_text, scalar, timestamp_of
from harness.cachemeter.traces._lines import log_lines
from harness.types import JsonObject
from harness.usage import normalize_usage

__all__ = ["CLAUDE_CODE_LIMITS", "is_claude_code", "read_claude_code"]

CLAUDE_CODE_LIMITS = (
    "Claude Code transcripts carry neither the system prompt nor the tool definitions (often "
    "over 10,000 tokens together) nor the cache_control breakpoints: the simulated prompt is the "
    "messages only, so simulated prompt tokens fall short of the reported ones, a change of the "
    "system prompt or tools cannot be attributed, and the anthropic simulator runs in automatic mode"
)
_BOOKKEEPING = frozenset({"summary", "system", "file-history-snapshot", "attachment", "queue-operation"})


def is_claude_code(obj: JsonObject) -> bool:
    """A line of a Claude Code transcript (judged from the first line of a file)."""
    kind = obj.get("type")
    if kind in ("user", "assistant"):
        return "sessionId" in obj or "parentUuid" in obj
    return kind in _BOOKKEEPING and ("sessionId" in obj or "leafUuid" in obj or "uuid" in obj)


@dataclass(slots=True)
class _Line:
    parent: str | None
    role: str
    response: str | None  # message.id of an assistant line
    content: str | list[JsonValue] | None


def _chain(lines: dict[str, _Line], start: str | None) -> tuple[MeterMessage, ...]:
    """The messages from the root down to `start`, a response's lines merged into one."""
    picked: list[_Line] = []
    seen: set[str] = set()
    node = start
    while node is not None and node in lines and node not in seen:
        seen.add(node)  # a parent loop in a broken file must not spin forever
        picked.append(lines[node])
        node = lines[node].parent
    picked.reverse()
    out: list[MeterMessage] = []
    last_response: str | None = None
    for line in picked:
        text, calls, _ = content_text(line.content)
        if line.role == "assistant" and line.response is not None and line.response == last_response and out:
            prev = out[-1]
            joined = prev.content + ("\n" if prev.content and text else "") + text
            out[-1] = MeterMessage("assistant", joined, prev.tool_calls + tuple(calls))
        else:
            out.append(MeterMessage("assistant" if line.role == "assistant" else "user", text, tuple(calls)))
        last_response = line.response if line.role == "assistant" else None
    return tuple(out)


def _message(obj: JsonObject) -> JsonObject | None:
    message = obj.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return None
    return message


def read_claude_code(path: Path, notes: list[str]) -> Iterator[MeterRequest]:
    """Yield one request per API response of a Claude Code transcript (see the module doc).

    Problems are appended to `notes` (one per skipped line, naming it), as is, once, what the
    format does not carry.

    Raises:
        MeterInputError: the file is missing or unreadable.
    """
    notes.append(f"{path}: {CLAUDE_CODE_LIMITS}")
    lines: dict[str, _Line] = {}
    answered: set[str] = set()
    synthetic = 0
    for lineno, obj in log_lines(path, notes):
        kind = obj.get("type")
        if kind not in ("user", "assistant"):
            continue  # bookkeeping
        message = _message(obj)
        uuid = obj.get("uuid")
        if message is None or not isinstance(uuid, str):
            notes.append(f"{path}:{lineno}: skipped: a {kind} line without a uuid and a message object")
            continue
        parent = obj.get("parentUuid")
        response = message.get("id") if kind == "assistant" else None
        content = message.get("content")
        assert content is None or isinstance(content, str | list)
        lines[uuid] = _Line(
            parent if isinstance(parent, str) else None,
            str(kind),
            response if isinstance(response, str) else None,
            content,
        )
        if kind != "assistant":
            continue
        model = message.get("model")
        if model == "<synthetic>":
            synthetic += 1
            continue
        key = response if isinstance(response, str) else uuid
        if key in answered:
            continue  # a later content block of a response already counted
        answered.add(key)
        usage = message.get("usage")
        session = obj.get("sessionId")
        sid = session if isinstance(session, str) else None
        if sid is not None and obj.get("isSidechain") is True:
            sid += "/sidechain"
        try:
            when = timestamp_of(scalar(obj.get("timestamp")))
        except ValueError as exc:
            notes.append(f"{path}:{lineno}: timestamp ignored: {exc}")
            when = None
        reported = normalize_usage(usage) if isinstance(usage, dict) else None
        yield MeterRequest(
            kind="chat",
            model=model if isinstance(model, str) else "unknown",
            messages=_chain(lines, parent if isinstance(parent, str) else None),
            timestamp=when,
            session_id=sid,
            line=lineno,
            cache_ttl=_ttl(usage),
            usage=reported,
        )
    if synthetic:
        notes.append(f"{path}: {synthetic} synthetic assistant line(s) (API errors) are not requests")


def _ttl(usage: JsonValue) -> Literal["1h"] | None:
    if not isinstance(usage, dict):
        return None
    split = usage.get("cache_creation")
    if isinstance(split, dict):
        long = split.get("ephemeral_1h_input_tokens")
        if isinstance(long, int) and long > 0:
            return "1h"
    return None
