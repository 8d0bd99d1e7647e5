"""Test doubles for agents built on keel: a scripted model and a fake tokenizer.

from harness.testing import ScriptedModel, say, call_tool

model = ScriptedModel([call_tool("memory", {"action": "add", ...}), say("Saved.")])
...  # run a session with model=model
model.assert_complete()
assert "Saved" in model.replies[-1].message.content
"""

import zlib

from harness.cachemeter.contract import assert_cache_stable
from harness.models._script_data import step_from_data, steps_from_data
from harness.models.scripted import (
    DynamicStep,
    RaiseStep,
    ReplyLike,
    ReplyStep,
    ScriptedModel,
    ScriptStep,
    StepLike,
    call_tool,
    calls,
    fail,
    respond,
    say,
    tool_call,
)

__all__ = [
    "DynamicStep",
    "FakeTokenizer",
    "RaiseStep",
    "ReplyLike",
    "ReplyStep",
    "ScriptStep",
    "ScriptedModel",
    "StepLike",
    "assert_cache_stable",
    "call_tool",
    "calls",
    "fail",
    "respond",
    "say",
    "step_from_data",
    "steps_from_data",
    "tool_call",
]


class FakeTokenizer:
    """A deterministic `Tokenizer`: one token per whitespace-separated word.

    Ids are the CRC-32 of the word, so equal words get equal ids in every process and
    counts are easy to predict in assertions (`count("a b c") == 3`).
    """

    @property
    def name(self) -> str:
        return "fake"

    def encode(self, text: str) -> list[int]:
        return [zlib.crc32(word.encode("utf-8")) for word in text.split()]

    def count(self, text: str) -> int:
        return len(text.split())
