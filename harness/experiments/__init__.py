# Experiments: run one scenario under several configurations and compare the cache meter's
# numbers. `scenario` (the file format), `builtin` (synthetic-200), `sources` (names, files,
# LoCoMo), `scenario_model` (the deterministic model that plays scripted replies), `runner`
# (one run + fact-retention probes), `compare` (arms, metering, JSON), `plot` (PNG).
# The retention eval (`keel eval retention`): `locomo` (typed LoCoMo files), `retention_script`
# (what is replayed, and the questions), `retention_run` (one arm through a real session),
# `retention` (the arms side by side), `retention_scores` (LoCoMo F1, answer retained),
# `retention_costs` (the compression's cache costs from the trace), `retention_report` (JSON).
from harness.experiments.builtin import BUILTIN_SCENARIOS, builtin_scenario, synthetic_200
from harness.experiments.compare import (
    Arm,
    ArmResult,
    ExperimentKind,
    arm_json,
    arms_for,
    run_experiment,
    steady_ratio,
)
from harness.experiments.retention import (
    RETENTION_ARMS,
    RetentionArm,
    RetentionArmName,
    RetentionOptions,
    RetentionResult,
    run_retention,
)
from harness.experiments.retention_report import retention_json
from harness.experiments.retention_scores import answer_f1, retained
from harness.experiments.retention_script import RetentionReplay, load_replay
from harness.experiments.runner import ProbeResult, RunResult, TurnStat, apply_overrides, run_scenario
from harness.experiments.scenario import (
    InitialMemory,
    MemoryWriteSpec,
    ProbeSpec,
    ReplySpec,
    Scenario,
    ToolCallSpec,
    TurnSpec,
    load_scenario,
    parse_scenario,
)
from harness.experiments.scenario_model import ScenarioModel
from harness.experiments.sources import resolve_scenario, scenario_from_locomo, truncate_scenario

__all__ = [
    "BUILTIN_SCENARIOS",
    "RETENTION_ARMS",
    "Arm",
    "ArmResult",
    "ExperimentKind",
    "InitialMemory",
    "MemoryWriteSpec",
    "ProbeResult",
    "ProbeSpec",
    "ReplySpec",
    "RetentionArm",
    "RetentionArmName",
    "RetentionOptions",
    "RetentionReplay",
    "RetentionResult",
    "RunResult",
    "Scenario",
    "ScenarioModel",
    "ToolCallSpec",
    "TurnSpec",
    "TurnStat",
    "answer_f1",
    "apply_overrides",
    "arm_json",
    "arms_for",
    "builtin_scenario",
    "load_replay",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario",
    "retained",
    "retention_json",
    "run_experiment",
    "run_retention",
    "run_scenario",
    "scenario_from_locomo",
    "steady_ratio",
    "synthetic_200",
    "truncate_scenario",
]
