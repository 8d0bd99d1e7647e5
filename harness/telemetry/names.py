"""The names keel's spans, attributes and metrics carry (no OpenTelemetry import here).

The `gen_ai.*` and `mcp.*` names follow the OpenTelemetry GenAI semantic conventions as
published in `open-telemetry/semantic-conventions-genai` at revision `SEMCONV_REVISION`
(schema `SEMCONV_SCHEMA_URL`, status "Development"): the first revision that carries
`gen_ai.usage.cache_write.input_tokens` (renamed from `cache_creation`, PR #440) and
`gen_ai.conversation.compacted`. Where that revision names no span for something keel does
(a conversation turn, the steps of a compression) keel names it, and says so here.

`keel.*` names are keel's own, documented in README "Telemetry".
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = [
    "CACHE_CREATION_ALIAS",
    "COMPRESSION_STEPS",
    "SEMCONV_REVISION",
    "SEMCONV_SCHEMA_URL",
    "TURN_SPAN",
    "CompressionStep",
    "MemoryOperation",
]

SEMCONV_REVISION: Final = "fee465db333bdd6a7d2faa320edab5cf3101a4f4"
SEMCONV_SCHEMA_URL: Final = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"

# ---------------------------------------------------------------- span names
TURN_SPAN: Final = "handle_conversation_turn"
"""One user turn. The pinned conventions define no framework-turn span; a turn is an
in-process agent invocation (`gen_ai.operation.name = invoke_agent`), and frameworks may name
their spans (the conventions allow it), so keel uses the name its users search for."""
COMPRESSION_SPAN: Final = "keel.compression"

CompressionStep: TypeAlias = Literal["flush", "summary", "reload", "rebuild"]
COMPRESSION_STEPS: tuple[CompressionStep, ...] = ("flush", "summary", "reload", "rebuild")

MemoryOperation: TypeAlias = Literal["search_memory", "create_memory", "update_memory", "delete_memory"]
"""Memory spans are named by their operation (the conventions' `{gen_ai.operation.name}`)."""

# ---------------------------------------------------------------- gen_ai.* (the conventions)
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
CONVERSATION_COMPACTED: Final = "gen_ai.conversation.compacted"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
REQUEST_STREAM: Final = "gen_ai.request.stream"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT: Final = "gen_ai.usage.input_tokens"
"""Inclusive: the whole prompt, cache reads and writes included."""
USAGE_OUTPUT: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE: Final = "gen_ai.usage.cache_write.input_tokens"
USAGE_REASONING: Final = "gen_ai.usage.reasoning.output_tokens"
CACHE_CREATION_ALIAS: Final = "gen_ai.usage.cache_creation.input_tokens"
"""The name before #440, emitted as well with `telemetry.cache_creation_alias` (opt-in)."""
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
MEMORY_STORE_ID: Final = "gen_ai.memory.store.id"
MEMORY_RECORD_COUNT: Final = "gen_ai.memory.record.count"
MEMORY_QUERY_TEXT: Final = "gen_ai.memory.query.text"
MCP_METHOD: Final = "mcp.method.name"
ERROR_TYPE: Final = "error.type"

# ---------------------------------------------------------------- keel.* (keel's own)
KEEL_SESSION_ID: Final = "keel.session.id"
"""The session row (changes at each compression; `gen_ai.conversation.id` does not)."""
KEEL_TURN: Final = "keel.turn"
KEEL_PURPOSE: Final = "keel.request.purpose"
"""turn, flush, summary, search: why keel sent the request."""
KEEL_USAGE_REPORTED: Final = "keel.usage.reported"
"""False when the provider reported no usage and the counts are keel's estimate."""
KEEL_STOP_REASON: Final = "keel.turn.stop_reason"
KEEL_ITERATIONS: Final = "keel.turn.iterations"
KEEL_CACHE_REUSABLE: Final = "keel.cache.reusable_tokens"
KEEL_CACHE_MISS_CAUSE: Final = "keel.cache.miss_cause"
KEEL_PHASE: Final = "keel.phase"
KEEL_MEMORY_OUTCOME: Final = "keel.memory.outcome"
"""saved, refused or held (for the user's confirmation)."""
KEEL_MEMORY_REFUSAL: Final = "keel.memory.refusal"
"""Why a write was refused: the store's reason (`scan_blocked`, `store_full`, ...)."""
KEEL_COMPRESSION_MANUAL: Final = "keel.compression.manual"
KEEL_COMPRESSION_OUTCOME: Final = "keel.compression.outcome"
KEEL_COMPRESSION_PIECE: Final = "keel.compression.piece"
KEEL_TOKENS_BEFORE: Final = "keel.compression.tokens_before"
KEEL_TOKENS_AFTER: Final = "keel.compression.tokens_after"

# ---------------------------------------------------------------- metrics
METRIC_INPUT: Final = "keel.tokens.input"
"""Prompt tokens sent (inclusive), by `keel.phase` and `keel.cache.miss_cause`."""
METRIC_CACHED: Final = "keel.tokens.cached"
"""Prompt tokens the provider served from its cache (`cache_read`)."""
METRIC_WRITTEN: Final = "keel.tokens.written"
"""Prompt tokens the provider wrote to its cache (`cache_write`)."""
METRIC_TURN_DURATION: Final = "keel.turn.duration"
"""Seconds from the user's message to the turn's end."""
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
