# The meter's report: `_measure` is its pass over the meter's stream (`ReportPass`: simulate,
# attribute, price each request; total) into a `MeterReport` (`_report`, which owns the JSON
# schema); `_results` holds the per-request and total records, `_phases` the per-phase view,
# each compression's cost and the phase rule (`PhaseClock`); `_table` presents a report as
# rich tables. `harness.cachemeter.run` drives the pass.
"""The meter's report over a trace (see `harness.cachemeter.report._report` for the schema)."""

from harness.cachemeter.report._measure import ReportPass
from harness.cachemeter.report._phases import PhaseClock, PhaseName
from harness.cachemeter.report._report import MeterReport
from harness.cachemeter.report._results import BREAK_KINDS, RequestResult, TokenRatios
from harness.cachemeter.report._table import report_tables

__all__ = [
    "BREAK_KINDS",
    "MeterReport",
    "PhaseClock",
    "PhaseName",
    "ReportPass",
    "RequestResult",
    "TokenRatios",
    "report_tables",
]
