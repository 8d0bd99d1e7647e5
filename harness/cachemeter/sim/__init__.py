# The cache simulators. `_types` is the contract (`SimRequest` in, `SimStep` out, the
# `Simulator` protocol); `_tree` the token radix tree most of them share (over the packed
# sequences of `harness.cachemeter._seq`); one module per family of caches: `_ideal` (the
# ceiling, and the content view the attribution needs), `_engines` (vLLM, SGLang),
# `_llamacpp` (one slot, RAM cache), `_keel` (keel's own server, by its own policy), `_providers` (OpenAI, Anthropic); `_settings` holds the
# knobs and builds a simulator by name.
"""Cache simulators: the common protocol, their settings, and a factory by name.

Every simulator is a small class with `feed(SimRequest) -> SimStep`: feed requests in
trace order, get the reusable tokens and the matched prefix of each. Each follows the rules
in shared/reference/caching.md (summarised in the implementing module's docstring) and is
O(total tokens) over a trace: radix-tree insertion, or incremental block hashing when a
vLLM block budget is set.

    ideal         longest prefix shared with any earlier request (the ceiling)
    vllm          hash-chained full blocks (B=16), hits floor((n-1)/B)*B, optional LRU pool
    sglang        radix tree, token granularity, last token recomputed, optional LRU budget
    llamacpp      common prefix with the previous request only (one slot)
    llamacpp-ram  the best of N saved prompt states (llama-cpp-python's RAM cache)
    openai        exact prefix >= 1,024 tokens in 128-token steps, idle TTL (10 min)
    anthropic     cache_control breakpoints (<= 4), TTL 5m/1h, per-model minimum
    keel          keel's embedded server: live state, RAM states, disk prefix (its own policy)
"""

from harness.cachemeter.sim._engines import SglangSimulator, VllmSimulator
from harness.cachemeter.sim._ideal import IdealSimulator, PrefixMatch
from harness.cachemeter.sim._keel import KeelLocalSimulator
from harness.cachemeter.sim._llamacpp import LlamaCppRamSimulator, LlamaCppSimulator
from harness.cachemeter.sim._providers import AnthropicSimulator, OpenAISimulator
from harness.cachemeter.sim._settings import SIM_NAMES, SimSettings, make_simulator, parse_sim_names
from harness.cachemeter.sim._tree import RadixTree
from harness.cachemeter.sim._types import SimName, SimRequest, SimStep, Simulator

__all__ = [
    "SIM_NAMES",
    "AnthropicSimulator",
    "IdealSimulator",
    "KeelLocalSimulator",
    "LlamaCppRamSimulator",
    "LlamaCppSimulator",
    "OpenAISimulator",
    "PrefixMatch",
    "RadixTree",
    "SglangSimulator",
    "SimName",
    "SimRequest",
    "SimSettings",
    "SimStep",
    "Simulator",
    "VllmSimulator",
    "make_simulator",
    "parse_sim_names",
]
