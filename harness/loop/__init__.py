# The turn loop. `session.py` (Session: the turn loop, composed of `SessionParts`),
# `transcript.py` (messages, ids, lineage, the turn counter), `calls.py` (the one model-call
# path), `system_prompt.py` (slot assembly), `estimate.py` (prompt-size estimates),
# `ports.py` (the seams to memory, persistence and providers), `warnings.py` (where warnings
# go), `compression_host.py` (the session as compress/ sees it). How a session is built from
# a config lives in `harness.wiring`, which this package never imports.
from harness.loop.parts import SessionParts
from harness.loop.session import Session

__all__ = ["Session", "SessionParts"]
