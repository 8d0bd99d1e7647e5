"""Codex CLI rollout files → `MeterRequest`s, one per model response.

Codex CLI writes one rollout per session, `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
(the format is defined by the open-source CLI's `RolloutLine`): every line is
`{"timestamp", "type", "payload"}`. `session_meta` opens the file (`id`, and in its payload the
instructions when the version records them); `turn_context` carries the model of the turn;
`response_item` lines are the protocol log — the items the model sees (`message` with
`input_text`/`output_text` parts, `reasoning`, `function_call` / `function_call_output`,
`custom_tool_call` / `..._output`, ...); `event_msg` lines are the display log, among them
`token_count`, whose `info.last_token_usage` is the usage of one model response
(`input_tokens` includes `cached_input_tokens`); `compacted` replaces the history with its
`replacement_history` (or a summary `message`).

Each `token_count` with usage is one request. Its prompt is the session's instructions (as the
system prompt) and every history item before the response it reports: the run of model
output items (assistant messages, reasoning, tool calls) just before the `token_count` is
that response, so it is left out. A `token_count` whose cumulative total repeats the previous
one is a repeated snapshot and is passed over. Its model is the latest `turn_context` model,
its time the line's timestamp.

What a rollout does not carry — the reader says so in a note: the tool definitions; the base
system prompt in versions that record only the user's instructions; and reasoning items are
sent back encrypted, so their token count here is a guess. Simulated prompt tokens therefore
differ from the reported ones, and a change of tools cannot be attributed.

A line that is not JSON, not an object, or lacks `type`/`payload` is skipped and named (file
and line) in the notes; it never stops the reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import JsonValue

from harness.cachemeter._request import MeterMessage, MeterRequest, MeterToolCall, ReportedUsage
from harness.cachemeter.traces._chat import dumps, scalar, timestamp_of
from harness.cachemeter.traces._lines import log_lines
from harness.types import JsonObject

__all__ = ["CODEX_LIMITS", "is_codex", "read_codex"]

CODEX_LIMITS = (
    "Codex rollouts carry no tool definitions, older ones not the base instructions, and reasoning "
    "is sent back encrypted (its token count here is a guess): simulated prompt tokens differ from "
    "the reported ones, and a change of tools cannot be attributed"
)
_KINDS = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
_OUTPUTS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)


def is_codex(obj: JsonObject) -> bool:
    """A line of a Codex rollout (judged from the first line of a file)."""
    return obj.get("type") in _KINDS and isinstance(obj.get("payload"), dict)


def _text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                text = part["text"]
                assert isinstance(text, str)
                parts.append(text)
            else:
                parts.append(dumps(part))
        return "\n".join(parts)
    return "" if content is None else dumps(content)


def _is_output(item: JsonObject) -> bool:
    kind = item.get("type")
    return kind in _OUTPUTS or (kind == "message" and item.get("role") == "assistant")


def _message(item: JsonObject) -> MeterMessage:
    """One history item as the meter's message."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        text = _text(item.get("content"))
        if role == "assistant":
            return MeterMessage("assistant", text)
        return MeterMessage("system" if role in ("developer", "system") else "user", text)
    if kind in ("function_call", "custom_tool_call"):
        args = item.get("arguments", item.get("input", ""))
        call = MeterToolCall(
            str(item.get("call_id", "")),
            str(item.get("name", "")),
            args if isinstance(args, str) else dumps(args),
        )
        return MeterMessage("assistant", "", (call,))
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        return MeterMessage("tool", _text(output), tool_call_id=str(item.get("call_id", "")))
    shown = {k: v for k, v in item.items() if k != "id"}
    return MeterMessage("assistant" if _is_output(item) else "user", dumps(shown))


def _instructions(payload: JsonObject) -> str:
    base = payload.get("base_instructions")
    parts: list[str] = []
    if isinstance(base, dict) and isinstance(base.get("text"), str):
        text = base["text"]
        assert isinstance(text, str)
        parts.append(text)
    elif isinstance(base, str):
        parts.append(base)
    user = payload.get("instructions")
    if isinstance(user, str) and user:
        parts.append(user)
    return "\n\n".join(parts)


def _usage(info: JsonValue) -> tuple[ReportedUsage, JsonValue] | None:
    if not isinstance(info, dict):
        return None
    last = info.get("last_token_usage")
    if not isinstance(last, dict):
        return None
    counts = {k: v for k, v in last.items() if isinstance(v, int) and not isinstance(v, bool)}
    cached = counts.get("cached_input_tokens", 0)
    usage = ReportedUsage(
        input=max(0, counts.get("input_tokens", 0) - cached),
        cache_read=cached,
        output=counts.get("output_tokens", 0),
    )
    return usage, info.get("total_token_usage")


def read_codex(path: Path, notes: list[str]) -> Iterator[MeterRequest]:
    """Yield one request per model response of a Codex rollout (see the module doc).

    Problems are appended to `notes` (one per skipped line, naming it), as is, once, what the
    format does not carry.

    Raises:
        MeterInputError: the file is missing or unreadable.
    """
    notes.append(f"{path}: {CODEX_LIMITS}")
    system = ""
    session: str | None = None
    model = "unknown"
    items: list[JsonObject] = []
    outputs_from = 0  # where the run of model outputs since the last input item starts
    last_total: JsonValue = None
    for lineno, obj in log_lines(path, notes):
        kind, payload = obj.get("type"), obj.get("payload")
        if kind not in _KINDS or not isinstance(payload, dict):
            notes.append(
                f"{path}:{lineno}: skipped: not a rollout line (needs 'type' and a 'payload' object)"
            )
            continue
        if kind == "session_meta":
            system = _instructions(payload)
            sid = payload.get("id")
            session = sid if isinstance(sid, str) else session
        elif kind == "turn_context":
            name = payload.get("model")
            model = name if isinstance(name, str) else model
        elif kind == "compacted":
            history = payload.get("replacement_history")
            if isinstance(history, list):
                items = [h for h in history if isinstance(h, dict)]
            else:
                items = [{"type": "message", "role": "user", "content": payload.get("message", "")}]
            outputs_from = len(items)
        elif kind == "response_item":
            if not _is_output(payload):
                outputs_from = len(items) + 1
            items.append(payload)
        elif payload.get("type") == "token_count":
            found = _usage(payload.get("info"))
            if found is None or (found[1] is not None and found[1] == last_total):
                continue  # no usage (rate limits only), or a repeated snapshot
            last_total = found[1]
            try:
                when = timestamp_of(scalar(obj.get("timestamp")))
            except ValueError as exc:
                notes.append(f"{path}:{lineno}: timestamp ignored: {exc}")
                when = None
            yield MeterRequest(
                kind="chat",
                model=model,
                system=system,
                messages=tuple(_message(item) for item in items[: min(outputs_from, len(items))]),
                timestamp=when,
                session_id=session,
                line=lineno,
                usage=found[0],
            )
            outputs_from = len(items)
