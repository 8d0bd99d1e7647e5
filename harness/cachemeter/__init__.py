# The cache meter: how much of each prompt in a trace a real prefix cache could reuse, and why
# the rest was lost. `_input` reads traces (ours, OpenAI-style chat JSONL) into `MeterRequest`s;
# `render` turns a request into token ids with segment boundaries; `sim` holds the simulators
# (`_ideal`, `_engines`, `_providers` over the radix tree in `_tree`); `attribution` names the
# reason of each miss; `report` runs it all over a trace and builds totals, JSON and a table;
# `plot` draws the PNG.
from harness.cachemeter._seq import pack, unpack
from harness.cachemeter._simtypes import SimRequest, SimStep, Simulator

__all__ = ["SimRequest", "SimStep", "Simulator", "pack", "unpack"]
