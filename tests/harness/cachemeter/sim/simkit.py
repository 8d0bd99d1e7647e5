"""Helpers for the simulator tests: a request from a token list, and a run of token ids."""

from __future__ import annotations

from harness.cachemeter import SimRequest
from harness.cachemeter._seq import pack


def req(tokens: list[int], **kw: object) -> SimRequest:
    return SimRequest(tokens=pack(tokens), **kw)  # type: ignore[arg-type]  # test helper forwards fields


def seq(n: int, start: int = 0) -> list[int]:
    return list(range(start, start + n))
