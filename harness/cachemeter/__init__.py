# The cache meter: how much of each prompt in a trace a real prefix cache could reuse, and why
# the rest was lost (design.md §7). Layout: `_input` reads traces (keel JSONL, OpenAI/Anthropic
# chat JSONL) into `MeterRequest`s (`_request`); `render` (+ `_jinja`, `_gguf`, `_hf` for
# Hugging Face tokenizers, `_factory` by name) turns a request into packed token ids with
# segment boundaries; `sim` holds the simulators (`_ideal`, `_engines`, `_providers`, all over
# the radix tree in `_tree`); `attribution` names the reason of each miss; `report` runs
# everything over a trace (`measure`, results in `_results`, phases in `_phases`) and owns the
# JSON schema; `_table` and `plot` present it. `lint` names the habits behind the misses at the
# text level (`_streams` pairs each request with the one it should extend, `_lint_checks` and
# `_lint_rules` judge, `_diff` quotes); `contract` turns both into a test assertion. The CLI is
# harness/cli/_cache_cmd.py and harness/cli/_cache_lint.py.
from harness.cachemeter._errors import MeterError, MeterInputError
from harness.cachemeter._factory import (
    MeterTokenizerName,
    load_meter_tokenizer,
    make_renderer,
    parse_tokenizer,
)
from harness.cachemeter._gguf import GGUFTokenizer, read_gguf_metadata, smollm2_gguf_path
from harness.cachemeter._hf import HFTokenizer, hf_template, load_hf_tokenizer
from harness.cachemeter._input import (
    TraceFormat,
    detect_format,
    read_requests,
    request_from_chat,
    request_from_record,
    requests_from_records,
)
from harness.cachemeter._jinja import ChatTemplate, JinjaRenderer, template_from_file, template_from_gguf
from harness.cachemeter._phases import PHASES, CompressionPhase, PhaseName, PhaseReport, PhaseTotals
from harness.cachemeter._request import (
    MeterBreakpoint,
    MeterMessage,
    MeterRequest,
    MeterSlot,
    MeterTool,
    MeterToolCall,
    ReportedUsage,
)
from harness.cachemeter._results import BREAK_KINDS
from harness.cachemeter._seq import pack, unpack
from harness.cachemeter._table import report_tables
from harness.cachemeter.attribution import Attribution, ReasonKind, attribute, content_break
from harness.cachemeter.contract import (
    DEFAULT_ALLOWED,
    AllowedEvent,
    CacheBreak,
    CacheContractError,
    assert_cache_stable,
    cache_breaks,
)
from harness.cachemeter.lint import (
    HABIT_RULES,
    LINT_SCHEMA,
    HabitRule,
    LintFinding,
    LintReport,
    LintSeverity,
    Occurrence,
    lint,
)
from harness.cachemeter.plot import PlotData, PlotMark, PlotSeries, plot_data, plot_report
from harness.cachemeter.render import (
    CanonicalRenderer,
    ChatMLRenderer,
    Rendered,
    Renderer,
    RendererName,
    Segment,
    SegmentKind,
    TokenMemo,
)
from harness.cachemeter.report import (
    SCHEMA,
    MeterReport,
    PurposeTotals,
    ReasonTotals,
    ReportedTotals,
    RequestResult,
    SimResult,
    SimTotals,
    measure,
    measure_async,
)
from harness.cachemeter.sim import (
    SIM_NAMES,
    AnthropicSimulator,
    IdealSimulator,
    LlamaCppRamSimulator,
    LlamaCppSimulator,
    OpenAISimulator,
    PrefixMatch,
    SglangSimulator,
    SimName,
    SimRequest,
    SimSettings,
    SimStep,
    Simulator,
    VllmSimulator,
    anthropic_min_tokens,
    make_simulator,
    parse_sim_names,
)

__all__ = [
    "BREAK_KINDS",
    "DEFAULT_ALLOWED",
    "HABIT_RULES",
    "LINT_SCHEMA",
    "PHASES",
    "SCHEMA",
    "SIM_NAMES",
    "AllowedEvent",
    "AnthropicSimulator",
    "Attribution",
    "CacheBreak",
    "CacheContractError",
    "CanonicalRenderer",
    "ChatMLRenderer",
    "ChatTemplate",
    "CompressionPhase",
    "GGUFTokenizer",
    "HFTokenizer",
    "HabitRule",
    "IdealSimulator",
    "JinjaRenderer",
    "LintFinding",
    "LintReport",
    "LintSeverity",
    "LlamaCppRamSimulator",
    "LlamaCppSimulator",
    "MeterBreakpoint",
    "MeterError",
    "MeterInputError",
    "MeterMessage",
    "MeterReport",
    "MeterRequest",
    "MeterSlot",
    "MeterTokenizerName",
    "MeterTool",
    "MeterToolCall",
    "Occurrence",
    "OpenAISimulator",
    "PhaseName",
    "PhaseReport",
    "PhaseTotals",
    "PlotData",
    "PlotMark",
    "PlotSeries",
    "PrefixMatch",
    "PurposeTotals",
    "ReasonKind",
    "ReasonTotals",
    "Rendered",
    "Renderer",
    "RendererName",
    "ReportedTotals",
    "ReportedUsage",
    "RequestResult",
    "Segment",
    "SegmentKind",
    "SglangSimulator",
    "SimName",
    "SimRequest",
    "SimResult",
    "SimSettings",
    "SimStep",
    "SimTotals",
    "Simulator",
    "TokenMemo",
    "TraceFormat",
    "VllmSimulator",
    "anthropic_min_tokens",
    "assert_cache_stable",
    "attribute",
    "cache_breaks",
    "content_break",
    "detect_format",
    "hf_template",
    "lint",
    "load_hf_tokenizer",
    "load_meter_tokenizer",
    "make_renderer",
    "make_simulator",
    "measure",
    "measure_async",
    "pack",
    "parse_sim_names",
    "parse_tokenizer",
    "plot_data",
    "plot_report",
    "read_gguf_metadata",
    "read_requests",
    "report_tables",
    "request_from_chat",
    "request_from_record",
    "requests_from_records",
    "smollm2_gguf_path",
    "template_from_file",
    "template_from_gguf",
    "unpack",
]
