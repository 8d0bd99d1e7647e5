# The turn loop and how a session is opened.
# `session.py` (Session: the turn loop), `open.py` (open_session: builds every part from one
# config), `system_prompt.py` (slot assembly for the session), `ports.py` (the seams to
# memory, persistence and providers), `memory_bridge.py` (the `memory` package adapted to
# those seams and to the tool registry), `scoped.py` (the principal's stores: who sees what).
from harness.loop.open import SessionHandles, open_session
from harness.loop.session import Session

__all__ = ["Session", "SessionHandles", "open_session"]
