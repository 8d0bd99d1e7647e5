"""Normalize provider usage objects into `Usage` (pure functions, no I/O).

`Usage` is *exclusive*: `input` counts uncached prompt tokens only, and the whole prompt
is `input + cache_read + cache_write`. Providers disagree:

- OpenAI chat completions: `prompt_tokens` (all), `prompt_tokens_details.cached_tokens`
  (inclusive), `prompt_tokens_details.cache_write_tokens` (GPT-5.6+);
- DeepSeek: `prompt_cache_hit_tokens` + `prompt_cache_miss_tokens` = `prompt_tokens`;
- proxies (LiteLLM, OpenRouter): `cache_read_input_tokens` / `cache_creation_input_tokens`
  next to `prompt_tokens`; Kimi: top-level `cached_tokens`;
- llama.cpp server: `timings.prompt_n` (evaluated) and `timings.cache_n` (reused), used
  when `usage` has no cached field;
- llama-cpp-python's server: only `prompt_tokens` / `completion_tokens` → cache_read 0;
- Anthropic: `input_tokens` (uncached only), `cache_read_input_tokens`,
  `cache_creation_input_tokens`.

Inclusive counts are subtracted from the prompt total; a total smaller than its cached
parts (a provider bug) clamps `input` at 0 rather than going negative.

keel's own records (traces, the session store's counters, scripted replies) keep `Usage` as
its five counts by name (`UsageCounts`): `usage_counts` and `usage_from_counts` are the one
conversion each way, and `normalize_usage` reads any of the three shapes (a foreign trace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from pydantic import JsonValue

from harness.types import Usage

__all__ = [
    "UsageCounts",
    "normalize_anthropic_usage",
    "normalize_openai_usage",
    "normalize_usage",
    "usage_counts",
    "usage_from_counts",
]

JsonMap = Mapping[str, JsonValue]


def _int(obj: JsonMap | None, key: str) -> int | None:
    """A non-negative integer field, or None when absent, null or not a number."""
    if obj is None:
        return None
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return max(int(value), 0)


def _map(obj: JsonMap | None, key: str) -> JsonMap | None:
    if obj is None:
        return None
    value = obj.get(key)
    return value if isinstance(value, dict) else None


def _first(*values: int | None) -> int | None:
    for value in values:
        if value is not None:
            return value
    return None


def normalize_openai_usage(usage: JsonMap | None, *, timings: JsonMap | None = None) -> Usage | None:
    """Usage from an OpenAI-compatible chat-completions reply.

    Args:
        usage: The reply's `usage` object (None when the server sent none).
        timings: llama.cpp's `timings` object, consulted only when `usage` carries no
            cached-token field.

    Returns:
        The normalized usage, or None when the reply reported nothing at all.
    """
    if usage is None and timings is None:
        return None
    details = _map(usage, "prompt_tokens_details")
    completion_details = _map(usage, "completion_tokens_details")
    cache_read = _first(
        _int(details, "cached_tokens"),
        _int(usage, "prompt_cache_hit_tokens"),  # DeepSeek
        _int(usage, "cache_read_input_tokens"),  # Anthropic-style fields relayed by proxies
        _int(usage, "cached_tokens"),  # Kimi / Moonshot
    )
    cache_write = _first(_int(details, "cache_write_tokens"), _int(usage, "cache_creation_input_tokens")) or 0
    output = _first(_int(usage, "completion_tokens"), _int(timings, "predicted_n")) or 0
    reasoning = _int(completion_details, "reasoning_tokens") or 0
    if cache_read is None:
        cache_n, prompt_n = _int(timings, "cache_n"), _int(timings, "prompt_n")
        if cache_n is not None and prompt_n is not None:
            # llama.cpp: prompt_n counts the newly evaluated tokens, cache_n the reused ones.
            return Usage(input=prompt_n, output=output, cache_read=cache_n, reasoning=reasoning)
        cache_read = cache_n

    prompt = _int(usage, "prompt_tokens")
    if prompt is None:
        hit, miss = _int(usage, "prompt_cache_hit_tokens"), _int(usage, "prompt_cache_miss_tokens")
        prompt = hit + miss if hit is not None and miss is not None else 0
    cache_read = cache_read or 0
    return Usage(
        input=max(prompt - cache_read - cache_write, 0),
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
    )


def normalize_anthropic_usage(usage: JsonMap | None) -> Usage | None:
    """Usage from an Anthropic Messages reply (already exclusive: `input_tokens` is uncached).

    Args:
        usage: The reply's `usage` object (for streams: `message_start`'s usage overlaid
            with the non-null fields of `message_delta`'s).
    """
    if usage is None:
        return None
    cache_write = _int(usage, "cache_creation_input_tokens")
    if cache_write is None:
        # Newer replies may carry only the per-TTL breakdown.
        creation = _map(usage, "cache_creation")
        cache_write = (_int(creation, "ephemeral_5m_input_tokens") or 0) + (
            _int(creation, "ephemeral_1h_input_tokens") or 0
        )
    return Usage(
        input=_int(usage, "input_tokens") or 0,
        output=_int(usage, "output_tokens") or 0,
        cache_read=_int(usage, "cache_read_input_tokens") or 0,
        cache_write=cache_write,
    )


class UsageCounts(TypedDict):
    """`Usage` as keel records it: its five counts by name."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    reasoning: int


def usage_counts(usage: Usage) -> UsageCounts:
    """The counts of `usage`, by name (for records, events and the session store)."""
    return {
        "input": usage.input,
        "output": usage.output,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
        "reasoning": usage.reasoning,
    }


def usage_from_counts(counts: JsonMap) -> Usage:
    """`Usage` from keel's own record of it; a missing or non-numeric count is 0."""
    return Usage(
        input=_int(counts, "input") or 0,
        output=_int(counts, "output") or 0,
        cache_read=_int(counts, "cache_read") or 0,
        cache_write=_int(counts, "cache_write") or 0,
        reasoning=_int(counts, "reasoning") or 0,
    )


def normalize_usage(usage: JsonMap | None) -> Usage | None:
    """Usage in any shape a trace may carry: OpenAI's (`prompt_tokens`), Anthropic's
    (`input_tokens`) or keel's own counts. None (or an empty object) is None."""
    if not usage:
        return None
    if "prompt_tokens" in usage or "prompt_cache_hit_tokens" in usage:
        return normalize_openai_usage(usage)
    if "input_tokens" in usage:
        return normalize_anthropic_usage(usage)
    return usage_from_counts(usage)
