"""A turn's events as run events: the names and payloads of the stream (docs/serve.md).

`run_event` maps one `harness.events` event to `(type, data)` or None (events a client of the
API does not see: warnings, recall, memory writes, the flush); `Totals` adds up a run's usage.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.events import (
    CompressionFinished,
    CompressionStarted,
    Event,
    TextDelta,
    ToolCallStarted,
    ToolResultReady,
    UsageReported,
)

__all__ = ["END_TYPES", "Totals", "run_event"]

END_TYPES = frozenset({"run.completed", "run.failed"})
"""The last event of every run."""


@dataclass(slots=True)
class Totals:
    """A run's token usage over every model call (keel's convention: `input_tokens` uncached)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, ev: UsageReported) -> None:
        self.input_tokens += ev.input
        self.output_tokens += ev.output
        self.cache_read_tokens += ev.cache_read
        self.cache_write_tokens += ev.cache_write

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


def run_event(ev: Event) -> tuple[str, dict[str, object]] | None:
    """The stream's `(event type, data)` for `ev`, or None when the API does not show it."""
    match ev:
        case TextDelta(text=text):
            return "text.delta", {"text": text}
        case ToolCallStarted():
            return "tool.started", {"call_id": ev.call_id, "name": ev.name, "arguments": ev.arguments}
        case ToolResultReady():
            return "tool.completed", {
                "call_id": ev.call_id,
                "name": ev.name,
                "content": ev.content,
                "is_error": ev.is_error,
            }
        case CompressionStarted():
            return "compression.started", {"tokens_before": ev.tokens_before, "threshold": ev.threshold}
        case CompressionFinished():
            # the child session's id stays inside: the conversation keeps its lineage root's id
            return "compression.completed", {
                "tokens_before": ev.tokens_before,
                "tokens_after": ev.tokens_after,
                "aborted": ev.aborted,
            }
        case UsageReported():
            return "usage", {
                "purpose": ev.purpose,
                "input_tokens": ev.input,
                "output_tokens": ev.output,
                "cache_read_tokens": ev.cache_read,
                "cache_write_tokens": ev.cache_write,
                "reasoning_tokens": ev.reasoning,
                "reported": ev.reported,
            }
    return None
