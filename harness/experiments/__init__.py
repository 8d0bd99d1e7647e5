# Experiments: run one scenario under several configurations and compare the cache meter's
# numbers. `scenario` (the file format), `builtin` (synthetic-200), `sources` (names, files,
# LoCoMo), `scenario_model` (the deterministic model that plays scripted replies), `runner`
# (one run + fact-retention probes), `compare` (arms, metering, JSON), `plot` (PNG).
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
    "Arm",
    "ArmResult",
    "ExperimentKind",
    "InitialMemory",
    "MemoryWriteSpec",
    "ProbeResult",
    "ProbeSpec",
    "ReplySpec",
    "RunResult",
    "Scenario",
    "ScenarioModel",
    "ToolCallSpec",
    "TurnSpec",
    "TurnStat",
    "apply_overrides",
    "arm_json",
    "arms_for",
    "builtin_scenario",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario",
    "run_experiment",
    "run_scenario",
    "scenario_from_locomo",
    "steady_ratio",
    "synthetic_200",
    "truncate_scenario",
]
