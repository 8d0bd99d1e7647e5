# Experiments: run one scenario under several configurations and compare the cache meter's
# numbers. `scenarios/` (the file format, synthetic-200, sources, the model that plays
# scripted replies), `runner` (one run + fact-retention probes), `compare` (arms, metering,
# JSON), `demo` (`keel demo`), `locomo` (typed LoCoMo files, shared with the benchmarks).
# `retention/` is the retention eval (`keel eval retention`): see its `__init__`.
from harness.experiments.compare import ArmResult, ExperimentKind, arm_json, run_experiment
from harness.experiments.runner import apply_overrides, run_scenario
from harness.experiments.scenarios import (
    BUILTIN_SCENARIOS,
    load_scenario,
    resolve_scenario,
    scenario_from_locomo,
    synthetic_200,
    truncate_scenario,
)

__all__ = [
    "BUILTIN_SCENARIOS",
    "ArmResult",
    "ExperimentKind",
    "apply_overrides",
    "arm_json",
    "load_scenario",
    "resolve_scenario",
    "run_experiment",
    "run_scenario",
    "scenario_from_locomo",
    "synthetic_200",
    "truncate_scenario",
]
