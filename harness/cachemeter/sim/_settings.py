"""Simulator settings, the names, and a factory by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from harness.cachemeter.sim._engines import SglangSimulator, VllmSimulator
from harness.cachemeter.sim._ideal import IdealSimulator
from harness.cachemeter.sim._keel import KeelLocalSimulator
from harness.cachemeter.sim._llamacpp import LlamaCppRamSimulator, LlamaCppSimulator
from harness.cachemeter.sim._providers import AnthropicSimulator, OpenAISimulator
from harness.cachemeter.sim._types import SimName, Simulator

__all__ = ["SIM_NAMES", "SimSettings", "make_simulator", "parse_sim_names"]

SIM_NAMES: tuple[SimName, ...] = get_args(SimName)


@dataclass(frozen=True, slots=True)
class SimSettings:
    """Knobs of the simulators; the defaults are the documented provider/engine defaults.

    Attributes:
        block_size: vLLM KV block size in tokens.
        vllm_budget_blocks: vLLM pool size in blocks (None: unlimited).
        sglang_budget_tokens: SGLang radix-cache size in tokens (None: unlimited).
        ram_states: prompt states kept by `llamacpp-ram`.
        openai_ttl_s: idle seconds an OpenAI cached prefix survives.
        anthropic_ttl_s: seconds every Anthropic cache entry lives (None: as each request
            asked, 5 minutes or 1 hour).
        server_idle_s: seconds an unused entry survives on the local servers (vllm, sglang,
            llamacpp, llamacpp-ram); None: until evicted for space.
        anthropic_min_tokens: override the per-model minimum (None: the model table).
        anthropic_automatic_lookback: block boundaries checked before an automatic breakpoint.
        anthropic_explicit_lookback: the same for explicit breakpoints (0: exact breakpoints only).
    """

    block_size: int = 16
    vllm_budget_blocks: int | None = None
    sglang_budget_tokens: int | None = None
    ram_states: int = 8
    openai_ttl_s: float = 600.0
    anthropic_ttl_s: float | None = None
    server_idle_s: float | None = None
    anthropic_min_tokens: int | None = None
    anthropic_automatic_lookback: int = 20
    anthropic_explicit_lookback: int = 0


def make_simulator(name: SimName, *, settings: SimSettings | None = None) -> Simulator:
    """A fresh simulator by name."""
    s = settings or SimSettings()
    if name == "ideal":
        return IdealSimulator()
    idle = s.server_idle_s
    if name == "vllm":
        return VllmSimulator(block_size=s.block_size, budget_blocks=s.vllm_budget_blocks, idle_s=idle)
    if name == "sglang":
        return SglangSimulator(budget_tokens=s.sglang_budget_tokens, idle_s=idle)
    if name == "llamacpp":
        return LlamaCppSimulator(idle_s=idle)
    if name == "llamacpp-ram":
        return LlamaCppRamSimulator(states=s.ram_states, idle_s=idle)
    if name == "keel":
        return KeelLocalSimulator()
    if name == "openai":
        return OpenAISimulator(ttl_s=s.openai_ttl_s)
    return AnthropicSimulator(
        min_tokens=s.anthropic_min_tokens,
        automatic_lookback=s.anthropic_automatic_lookback,
        explicit_lookback=s.anthropic_explicit_lookback,
        ttl_s=s.anthropic_ttl_s,
    )


def parse_sim_names(text: str) -> tuple[SimName, ...]:
    """Parse a comma-separated list of simulator names (`all` for every one).

    Raises:
        ValueError: an unknown name; the message lists the valid ones.
    """
    names: list[SimName] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        if item == "all":
            names.extend(n for n in SIM_NAMES if n not in names)
            continue
        match = next((n for n in SIM_NAMES if n == item), None)
        if match is None:
            raise ValueError(f"unknown simulator {item!r}; choose from {', '.join(SIM_NAMES)} or 'all'")
        if match not in names:
            names.append(match)
    if not names:
        raise ValueError(f"no simulator named; choose from {', '.join(SIM_NAMES)}")
    return tuple(names)
