"""Scenario files: scripted user turns (and, for the scripted model, the assistant's replies).

A scenario is YAML (or JSON) validated into `Scenario` at the trust boundary:

```yaml
name: my-scenario
description: what it exercises
config:                 # overrides merged into the keel config for every run
  model: {context_window: 16384}
initial_memory:         # entries present in MEMORY.md / USER.md before turn 1
  memory: ["The project uses Python 3.11"]
  user: []
turns:
  - user: "Hi, I'm Dana. Remember that I prefer metric units."
    replies:            # scripted model only; omitted → a short generic answer
      - tool_calls: [{name: memory, arguments: {action: add, target: user, content: "Prefers metric units"}}]
      - say: "Noted."
    memory_writes:      # out-of-band writes after the turn (another process, the CLI)
      - {target: memory, content: "Build runs with make"}
    compress: false     # force a compression after this turn
probes:                 # fact-retention probes for flush experiments
  - fact: "User's dog is named Biscuit"
    target: user
    turn: 40            # the turn that plants it (its user text should state it)
    keyword: Biscuit    # what must survive
    question: "What is my dog's name?"
```
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from harness.errors import ConfigError, validation_problems

__all__ = [
    "InitialMemory",
    "MemoryWriteSpec",
    "ProbeSpec",
    "ReplySpec",
    "Scenario",
    "ToolCallSpec",
    "TurnSpec",
    "load_scenario",
    "parse_scenario",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolCallSpec(_Model):
    name: str
    arguments: dict[str, JsonValue] | str = Field(default_factory=dict)


class ReplySpec(_Model):
    say: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()


class MemoryWriteSpec(_Model):
    action: Literal["add", "replace", "remove"] = "add"
    target: Literal["memory", "user"]
    content: str = ""
    old_text: str = ""


class TurnSpec(_Model):
    user: str = Field(min_length=1)
    replies: tuple[ReplySpec, ...] = ()
    memory_writes: tuple[MemoryWriteSpec, ...] = ()
    compress: bool = False


class ProbeSpec(_Model):
    fact: str
    target: Literal["memory", "user"] = "user"
    turn: int = Field(ge=1)
    keyword: str
    question: str


class InitialMemory(_Model):
    memory: tuple[str, ...] = ()
    user: tuple[str, ...] = ()


class Scenario(_Model):
    name: str
    description: str = ""
    config: dict[str, JsonValue] = Field(default_factory=dict)
    initial_memory: InitialMemory = InitialMemory()
    turns: tuple[TurnSpec, ...] = Field(min_length=1)
    probes: tuple[ProbeSpec, ...] = ()


def parse_scenario(data: object, *, source: str) -> Scenario:
    """Validate already-loaded scenario data.

    Raises:
        ConfigError: the data is not a valid scenario; the message names each bad field.
    """
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, most=8)
        raise ConfigError(f"scenario {source} is invalid: {problems}") from exc
    for probe in scenario.probes:
        if probe.turn > len(scenario.turns):
            raise ConfigError(
                f"scenario {source}: probe {probe.fact!r} plants at turn {probe.turn}, "
                f"but the scenario has only {len(scenario.turns)} turns"
            )
    return scenario


def load_scenario(path: Path) -> Scenario:
    """Read a scenario from a YAML or JSON file.

    Raises:
        ConfigError: missing file, bad YAML/JSON, or an invalid scenario.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"cannot read scenario {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"scenario {str(path)!r} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}"
        ) from exc
    return parse_scenario(data, source=repr(str(path)))
