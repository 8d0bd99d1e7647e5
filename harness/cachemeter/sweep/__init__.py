# The TTL sweep: every simulator with a clock at several cache timeouts, side by side in one
# pass over the trace, with the idle view (misses from gaps longer than the timeout, and what
# a keep-alive would have cost or saved). `_sweep` holds its pass over the meter's stream
# (`SweepPass`, driven by `harness.cachemeter.run`), `_table` shows it; the plot is in
# `harness.cachemeter.plot`.
"""TTL sweep and idle view: hit ratio and cost against the cache timeout."""

from harness.cachemeter.sweep._sweep import (
    DEFAULT_TTLS,
    TIME_AWARE,
    SweepPass,
    TtlSweep,
    format_ttl,
    parse_ttls,
)
from harness.cachemeter.sweep._table import sweep_tables

__all__ = [
    "DEFAULT_TTLS",
    "TIME_AWARE",
    "SweepPass",
    "TtlSweep",
    "format_ttl",
    "parse_ttls",
    "sweep_tables",
]
