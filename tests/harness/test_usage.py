"""Usage normalization, one row per provider shape (exclusive convention: prompt = input + cached)."""

from __future__ import annotations

import json

import pytest

from harness.types import JsonObject, Usage
from harness.usage import (
    normalize_anthropic_usage,
    normalize_openai_usage,
    normalize_usage,
    usage_counts,
    usage_from_counts,
)

OPENAI_CASES: list[tuple[str, JsonObject | None, JsonObject | None, Usage | None]] = [
    ("nothing reported", None, None, None),
    (
        "openai with inclusive cached_tokens and reasoning",
        {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 256},
        },
        None,
        Usage(input=86, output=300, cache_read=1920, reasoning=256),
    ),
    (
        "openai 5.6+ with cache_write_tokens",
        {
            "prompt_tokens": 5000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500},
        },
        None,
        Usage(input=500, output=10, cache_read=3000, cache_write=1500),
    ),
    (
        "vllm omitting a zero cached field",
        {"prompt_tokens": 40, "completion_tokens": 2, "prompt_tokens_details": None},
        None,
        Usage(input=40, output=2),
    ),
    (
        "deepseek hit and miss partition",
        {
            "prompt_tokens": 1100,
            "completion_tokens": 50,
            "prompt_cache_hit_tokens": 1024,
            "prompt_cache_miss_tokens": 76,
        },
        None,
        Usage(input=76, output=50, cache_read=1024),
    ),
    (
        "deepseek without prompt_tokens",
        {"completion_tokens": 5, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 6},
        None,
        Usage(input=6, output=5, cache_read=64),
    ),
    (
        "proxy relaying anthropic-style cache fields",
        {
            "prompt_tokens": 1000,
            "completion_tokens": 3,
            "cache_read_input_tokens": 800,
            "cache_creation_input_tokens": 150,
        },
        None,
        Usage(input=50, output=3, cache_read=800, cache_write=150),
    ),
    (
        "llama.cpp server: cached_tokens in usage wins over timings",
        {"prompt_tokens": 500, "completion_tokens": 8, "prompt_tokens_details": {"cached_tokens": 480}},
        {"cache_n": 1, "prompt_n": 499},
        Usage(input=20, output=8, cache_read=480),
    ),
    (
        "llama.cpp server: timings when usage has no cached field",
        {"prompt_tokens": 500, "completion_tokens": 8},
        {"cache_n": 470, "prompt_n": 30, "predicted_n": 8},
        Usage(input=30, output=8, cache_read=470),
    ),
    (
        "llama.cpp timings without any usage",
        None,
        {"cache_n": 100, "prompt_n": 5, "predicted_n": 4},
        Usage(input=5, output=4, cache_read=100),
    ),
    (
        "llama-cpp-python bare usage: no cached field means cache_read 0",
        {"prompt_tokens": 321, "completion_tokens": 9, "total_tokens": 330},
        None,
        Usage(input=321, output=9),
    ),
    (
        "a cached count larger than the prompt clamps input at zero",
        {"prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 12}},
        None,
        Usage(input=0, output=1, cache_read=12),
    ),
    (
        "nonsense values are ignored, not trusted",
        {"prompt_tokens": "many", "completion_tokens": -3, "prompt_tokens_details": {"cached_tokens": True}},
        None,
        Usage(),
    ),
]


@pytest.mark.parametrize(
    ("usage", "timings", "expected"), [c[1:] for c in OPENAI_CASES], ids=[c[0] for c in OPENAI_CASES]
)
def test_openai_compatible_usage_shapes_normalize_to_exclusive_usage(
    usage: JsonObject | None, timings: JsonObject | None, expected: Usage | None
) -> None:
    assert normalize_openai_usage(usage, timings=timings) == expected


ANTHROPIC_CASES: list[tuple[str, JsonObject | None, Usage | None]] = [
    ("nothing reported", None, None),
    (
        "already exclusive",
        {
            "input_tokens": 12,
            "output_tokens": 40,
            "cache_read_input_tokens": 3000,
            "cache_creation_input_tokens": 250,
        },
        Usage(input=12, output=40, cache_read=3000, cache_write=250),
    ),
    (
        "null cache fields",
        {
            "input_tokens": 9,
            "output_tokens": 1,
            "cache_read_input_tokens": None,
            "cache_creation_input_tokens": None,
        },
        Usage(input=9, output=1),
    ),
    (
        "only the per-ttl creation breakdown",
        {
            "input_tokens": 3,
            "output_tokens": 2,
            "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 50},
        },
        Usage(input=3, output=2, cache_write=150),
    ),
]


@pytest.mark.parametrize(
    ("usage", "expected"), [c[1:] for c in ANTHROPIC_CASES], ids=[c[0] for c in ANTHROPIC_CASES]
)
def test_anthropic_usage_is_taken_as_exclusive(usage: JsonObject | None, expected: Usage | None) -> None:
    assert normalize_anthropic_usage(usage) == expected


def test_counts_round_trip_and_every_shape_reads_through_one_function() -> None:
    usage = Usage(input=5, output=7, cache_read=100, cache_write=3, reasoning=2)
    counts: JsonObject = json.loads(json.dumps(usage_counts(usage)))
    assert usage_from_counts(counts) == usage
    assert usage_from_counts({"input": 1, "cache_read": "x"}) == Usage(input=1)
    openai: JsonObject = {
        "prompt_tokens": 100,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    assert normalize_usage(openai) == Usage(input=36, output=9, cache_read=64)
    anthropic: JsonObject = {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 100}
    assert normalize_usage(anthropic) == Usage(input=5, output=7, cache_read=100)
    assert normalize_usage(counts) == usage
    assert normalize_usage({}) is None and normalize_usage(None) is None
