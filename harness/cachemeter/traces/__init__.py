# Trace readers: every format the meter reads becomes `MeterRequest`s
# (`harness.cachemeter._request`). `_keel` normalizes keel trace records, `_chat` OpenAI- and
# Anthropic-style chat request lines; `_read` reads a file line by line and picks the format.
"""Trace readers: keel JSONL traces and OpenAI/Anthropic-style chat JSONL, into `MeterRequest`s."""

from harness.cachemeter.traces._chat import request_from_chat
from harness.cachemeter.traces._keel import request_from_record, requests_from_records
from harness.cachemeter.traces._read import TraceFormat, detect_format, read_requests

__all__ = [
    "TraceFormat",
    "detect_format",
    "read_requests",
    "request_from_chat",
    "request_from_record",
    "requests_from_records",
]
