# Scenarios: scripted conversations that experiments replay. `spec` (the YAML/JSON file
# format, validated), `builtin` (synthetic-200, built in code), `sources` (a name, a file or
# a LoCoMo sample → a scenario), `model` (the deterministic model that plays a scenario's
# scripted replies).
from harness.experiments.scenarios.builtin import BUILTIN_SCENARIOS, builtin_scenario, synthetic_200
from harness.experiments.scenarios.model import ScenarioModel
from harness.experiments.scenarios.sources import resolve_scenario, scenario_from_locomo, truncate_scenario
from harness.experiments.scenarios.spec import (
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

__all__ = [
    "BUILTIN_SCENARIOS",
    "InitialMemory",
    "MemoryWriteSpec",
    "ProbeSpec",
    "ReplySpec",
    "Scenario",
    "ScenarioModel",
    "ToolCallSpec",
    "TurnSpec",
    "builtin_scenario",
    "load_scenario",
    "parse_scenario",
    "resolve_scenario",
    "scenario_from_locomo",
    "synthetic_200",
    "truncate_scenario",
]
