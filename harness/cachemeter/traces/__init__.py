# Trace readers: every format the meter reads becomes `MeterRequest`s
# (`harness.cachemeter._request`). `_keel` normalizes keel trace records, `_chat` OpenAI- and
# Anthropic-style chat request lines, `_claude` Claude Code transcripts, `_codex` Codex CLI
# rollouts; `_lines` reads JSON lines (strictly, or skipping and naming bad ones), `_read`
# picks the format of a file, and `_merge` interleaves several traces by time.
"""Trace readers: keel traces, chat JSONL, Claude Code transcripts, Codex rollouts → `MeterRequest`s."""

from harness.cachemeter.traces._chat import request_from_chat
from harness.cachemeter.traces._keel import MessageMemo, request_from_model, request_from_record
from harness.cachemeter.traces._merge import interleave
from harness.cachemeter.traces._read import read_requests

__all__ = [
    "MessageMemo",
    "interleave",
    "read_requests",
    "request_from_chat",
    "request_from_model",
    "request_from_record",
]
