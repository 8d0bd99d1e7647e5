"""Several traces as one: many sessions interleaved by time, as a fleet of servers sees them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from harness.cachemeter._request import MeterRequest

__all__ = ["interleave"]


def interleave(traces: Sequence[tuple[str, Iterable[MeterRequest]]]) -> list[MeterRequest]:
    """The requests of several traces in one time order.

    Each trace is `(label, requests)`. A request without a timestamp keeps the time of the
    request before it in its trace (the start of time when none had one); ties keep the order
    of the traces, then of the lines. With more than one trace each session id is prefixed with
    its trace's label (`label/session`, or the label alone), so sessions of different files
    never merge.
    """
    keyed: list[tuple[float, int, int, MeterRequest]] = []
    for k, (label, requests) in enumerate(traces):
        now = float("-inf")
        for j, req in enumerate(requests):
            if req.timestamp is not None:
                now = req.timestamp
            if len(traces) > 1:
                session = label if req.session_id is None else f"{label}/{req.session_id}"
                req = dataclasses.replace(req, session_id=session)
            keyed.append((now, k, j, req))
    keyed.sort(key=lambda item: item[:3])
    return [item[3] for item in keyed]
