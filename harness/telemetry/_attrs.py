"""Span names and attributes from records (pure: no OpenTelemetry import, no I/O).

One function per kind of record; `capture` adds message content (`telemetry.capture_content`),
which is JSON text in the conventions' message shape (`role`, `parts` of `text`, `tool_call`,
`tool_call_response`). Token counts follow the conventions: `gen_ai.usage.input_tokens` is
the whole prompt, cache reads and writes included (keel's `Usage.input` is the uncached
part only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeAlias

from harness.telemetry import names as n
from harness.telemetry._record import (
    CompressionRecord,
    MemoryRecord,
    RequestRecord,
    StepRecord,
    ToolRecord,
    TurnRecord,
)
from harness.types import Message, Usage

__all__ = [
    "AttrValue",
    "Attributes",
    "compression_attributes",
    "memory_attributes",
    "request_attributes",
    "step_attributes",
    "tool_attributes",
    "turn_attributes",
    "usage_attributes",
]

AttrValue: TypeAlias = str | bool | int | float | Sequence[str]
Attributes: TypeAlias = dict[str, AttrValue]
AGENT_NAME = "keel"


def usage_attributes(usage: Usage, *, alias: bool) -> Attributes:
    """The conventions' token counts (input inclusive of cache reads and writes)."""
    out: Attributes = {
        n.USAGE_INPUT: usage.input + usage.cache_read + usage.cache_write,
        n.USAGE_OUTPUT: usage.output,
        n.USAGE_CACHE_READ: usage.cache_read,
        n.USAGE_CACHE_WRITE: usage.cache_write,
    }
    if usage.reasoning:
        out[n.USAGE_REASONING] = usage.reasoning
    if alias:
        out[n.CACHE_CREATION_ALIAS] = usage.cache_write
    return out


def turn_attributes(r: TurnRecord, *, usage: Usage, provider: str, alias: bool) -> Attributes:
    """`usage` and `provider`: the sum and the provider of the turn's requests."""
    out: Attributes = {
        n.OPERATION: "invoke_agent",
        n.AGENT_NAME: AGENT_NAME,
        n.CONVERSATION_ID: r.conversation_id,
        n.KEEL_SESSION_ID: r.session_id,
        n.KEEL_TURN: r.turn,
        n.KEEL_ITERATIONS: r.iterations,
        **usage_attributes(usage, alias=alias),
    }
    if provider:
        out[n.PROVIDER] = provider
    if r.stop_reason is not None:
        out[n.KEEL_STOP_REASON] = r.stop_reason
    return out


def _parts(m: Message) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = []
    if m.role == "tool":
        return [{"type": "tool_call_response", "id": m.tool_call_id or "", "result": m.wire_content}]
    if m.wire_content:
        parts.append({"type": "text", "content": m.wire_content})
    for c in m.tool_calls:
        parts.append(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": _json_or_text(c.arguments)}
        )
    return parts


def _json_or_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def request_attributes(r: RequestRecord, *, alias: bool, capture: bool) -> Attributes:
    req, info = r.request, r.info
    out: Attributes = {
        n.OPERATION: "chat",
        n.PROVIDER: info.provider,
        n.REQUEST_MODEL: info.model,
        n.REQUEST_STREAM: True,
        n.CONVERSATION_ID: info.conversation_id,
        n.KEEL_SESSION_ID: info.session_id,
        n.KEEL_PURPOSE: req.purpose,
    }
    if req.max_tokens is not None:
        out[n.REQUEST_MAX_TOKENS] = req.max_tokens
    if req.temperature is not None:
        out[n.REQUEST_TEMPERATURE] = req.temperature
    if info.compacted:  # the conventions: set it true, never false
        out[n.CONVERSATION_COMPACTED] = True
    if r.first_chunk_ns:
        out[n.RESPONSE_TIME_TO_FIRST_CHUNK] = (r.first_chunk_ns - r.start_ns) / 1e9
    reply = r.reply
    if reply is not None:
        out[n.RESPONSE_MODEL] = reply.model or info.model
        finish = reply.finish_reason or ("tool_calls" if reply.message.tool_calls else "stop")
        out[n.RESPONSE_FINISH_REASONS] = (finish,)
    if r.usage is not None:
        out.update(usage_attributes(r.usage, alias=alias))
        out[n.KEEL_USAGE_REPORTED] = r.reported
    if r.error is not None:
        out[n.ERROR_TYPE] = r.error
    if capture:
        if req.system:
            out[n.SYSTEM_INSTRUCTIONS] = _dump([{"type": "text", "content": req.system}])
        out[n.INPUT_MESSAGES] = _dump([{"role": m.role, "parts": _parts(m)} for m in req.messages])
        if reply is not None:
            output = {"role": "assistant", "parts": _parts(reply.message), "finish_reason": finish}
            out[n.OUTPUT_MESSAGES] = _dump([output])
    return out


def tool_attributes(r: ToolRecord, *, capture: bool) -> Attributes:
    out: Attributes = {
        n.OPERATION: "execute_tool",
        n.TOOL_NAME: r.call.name,
        n.TOOL_CALL_ID: r.call.id,
        n.TOOL_TYPE: "extension" if r.mcp else "function",
    }
    if r.mcp:
        out[n.MCP_METHOD] = "tools/call"
    if r.error is not None:
        out[n.ERROR_TYPE] = r.error
    elif r.is_error:
        out[n.ERROR_TYPE] = "tool_error"
    if capture:
        out[n.TOOL_CALL_ARGUMENTS] = r.call.arguments
        if r.content is not None and not r.is_error:
            out[n.TOOL_CALL_RESULT] = r.content
    return out


def memory_attributes(r: MemoryRecord, *, capture: bool) -> Attributes:
    out: Attributes = {n.OPERATION: r.operation, n.MEMORY_STORE_ID: r.store}
    if r.count is not None:
        out[n.MEMORY_RECORD_COUNT] = r.count
    if r.outcome_value is not None:
        out[n.KEEL_MEMORY_OUTCOME] = r.outcome_value
    if r.reason is not None:
        out[n.KEEL_MEMORY_REFUSAL] = r.reason
    if r.error is not None:
        out[n.ERROR_TYPE] = r.error
    if capture and r.query is not None:
        out[n.MEMORY_QUERY_TEXT] = r.query
    return out


def compression_attributes(r: CompressionRecord) -> Attributes:
    out: Attributes = {n.KEEL_COMPRESSION_MANUAL: r.manual}
    if r.outcome is not None:
        out[n.KEEL_COMPRESSION_OUTCOME] = r.outcome
        out[n.KEEL_TOKENS_BEFORE] = r.tokens_before
        out[n.KEEL_TOKENS_AFTER] = r.tokens_after
    if r.error is not None:
        out[n.ERROR_TYPE] = r.error
    return out


def step_attributes(r: StepRecord) -> Attributes:
    out: Attributes = {}
    if r.piece is not None:
        out[n.KEEL_COMPRESSION_PIECE] = r.piece
    if r.error is not None:
        out[n.ERROR_TYPE] = r.error
    return out
