# The meter's report: `_measure` runs everything over a trace (render, simulate, attribute,
# total) into a `MeterReport` (`_report`, which owns the JSON schema); `_results` holds the
# per-request and total records, `_phases` the per-phase view and each compression's cost,
# `_cost` the price lookup; `_table` presents a report as rich tables.
"""Run the meter over a trace and report it (see `harness.cachemeter.report._report` for the schema)."""

from harness.cachemeter.report._measure import measure, measure_async
from harness.cachemeter.report._report import MeterReport
from harness.cachemeter.report._results import BREAK_KINDS, RequestResult
from harness.cachemeter.report._table import report_tables

__all__ = [
    "BREAK_KINDS",
    "MeterReport",
    "RequestResult",
    "measure",
    "measure_async",
    "report_tables",
]
