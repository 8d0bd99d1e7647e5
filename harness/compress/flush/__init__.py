# The compression flush (docs/architecture.md §5): a last model call (or a few, one per piece
# of what is dropped) that saves durable facts before the middle of the conversation is
# summarized. A family rather than one module: about 600 lines of five concepts that change
# for different reasons. `_request` (the modes and request shapes → the one request and its system prompt),
# `_pieces` (what a chunked flush sends: the dropped turns in short pieces), `_entries` (the
# checks a candidate fact must pass: echo, grounding, passages), `_reading` (a reply → writes
# and refusals, and the one "claimed a save" check), `_execute` (the writes through the memory
# tool → `FlushOutcome`). The memory tool's name is `memory.MEMORY_TOOL_NAME`, defined with it.
from harness.compress.flush._execute import FlushOutcome, execute_flush_reply, grounds_of
from harness.compress.flush._pieces import flush_pieces, halves
from harness.compress.flush._reading import looping, read_flush_reply
from harness.compress.flush._request import (
    FLUSH_SHAPES,
    FlushReply,
    FlushShape,
    build_flush_request,
    build_flush_shape_request,
    flush_shape,
    flush_system,
)

__all__ = [
    "FLUSH_SHAPES",
    "FlushOutcome",
    "FlushReply",
    "FlushShape",
    "build_flush_request",
    "build_flush_shape_request",
    "execute_flush_reply",
    "flush_pieces",
    "flush_shape",
    "flush_system",
    "grounds_of",
    "halves",
    "looping",
    "read_flush_reply",
]
