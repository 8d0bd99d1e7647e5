# The cache meter: how much of each prompt in a trace a real prefix cache could reuse, and why
# the rest was lost (docs/architecture.md §7). Layout, one folder per family:
#   traces/   readers (keel JSONL, OpenAI/Anthropic chat JSONL, Claude Code transcripts, Codex
#             rollouts) into `MeterRequest`s (`_request`); several traces interleaved by time
#   render    a request → packed token ids (`_seq`) with segment boundaries (+ `_jinja` for a
#             model's own chat template, over `harness.modelfiles`; `_factory` by name)
#   sim/      the cache simulators, over a token radix tree
#   attribution  the reason of each miss
#   stream    a request rendered once and placed against the earlier ones (the content view)
#   pricing   what a request, a miss and a cache write cost (the config's price table)
#   _share    the one ratio rule of the tables (a share of nothing)
#   run       THE KERNEL: `MeterRun` takes the inputs once and feeds one stream to every view
#             below in one pass; `RequestMeter` is the same meter one request at a time
#   report/   the report's pass: every simulator on every request, the JSON schema, per phase, tables
#   sweep/    the TTL sweep's pass: several cache timeouts, idle misses, keep-alive
#   replicas/ the replicas' pass: N servers behind a router (round_robin, session, prefix)
# Sub-folders import each other only through their `__init__` (tests/test_layering.py).
#   plot      the PNGs
#   lint/     the habits behind the misses, at the text level
#   contract  both as a test assertion
# The CLI is harness/cli/commands/cache/.
from harness.cachemeter._errors import MeterError, MeterInputError
from harness.cachemeter._factory import load_meter_tokenizer, make_renderer, parse_tokenizer
from harness.cachemeter._jinja import JinjaRenderer
from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
    ReportedUsage,
)
from harness.cachemeter.contract import CacheContractError, assert_cache_stable
from harness.cachemeter.lint import LintFinding, LintReport, lint
from harness.cachemeter.plot import plot_replicas, plot_report, plot_ttl_sweep
from harness.cachemeter.render import CanonicalRenderer, ChatMLRenderer, Renderer, RendererName
from harness.cachemeter.replicas import ROUTING_POLICIES, ReplicaReport, RoutingPolicy, replica_table
from harness.cachemeter.report import MeterReport, RequestResult, report_tables
from harness.cachemeter.run import (
    MeterResults,
    MeterRun,
    ReplicasAsk,
    RequestMeter,
    SweepAsk,
    measure,
    replica_sweep,
    ttl_sweep,
)
from harness.cachemeter.sim import (
    SIM_NAMES,
    SimName,
    SimRequest,
    SimSettings,
    make_simulator,
    parse_sim_names,
)
from harness.cachemeter.sweep import TtlSweep, parse_ttls, sweep_tables
from harness.cachemeter.traces import interleave, read_requests, request_from_record

__all__ = [
    "ROUTING_POLICIES",
    "SIM_NAMES",
    "CacheContractError",
    "CanonicalRenderer",
    "ChatMLRenderer",
    "JinjaRenderer",
    "LintFinding",
    "LintReport",
    "MeterBreakpoint",
    "MeterError",
    "MeterInputError",
    "MeterMessage",
    "MeterReport",
    "MeterRequest",
    "MeterResults",
    "MeterRun",
    "MeterSlot",
    "MeterTool",
    "MeterToolCall",
    "Renderer",
    "RendererName",
    "ReplicaReport",
    "ReplicasAsk",
    "ReportedUsage",
    "RequestMeter",
    "RequestResult",
    "RoutingPolicy",
    "SimName",
    "SimRequest",
    "SimSettings",
    "SweepAsk",
    "TtlSweep",
    "assert_cache_stable",
    "interleave",
    "lint",
    "load_meter_tokenizer",
    "make_renderer",
    "make_simulator",
    "measure",
    "parse_sim_names",
    "parse_tokenizer",
    "parse_ttls",
    "plot_replicas",
    "plot_report",
    "plot_ttl_sweep",
    "read_requests",
    "replica_sweep",
    "replica_table",
    "report_tables",
    "request_from_record",
    "sweep_tables",
    "ttl_sweep",
]
