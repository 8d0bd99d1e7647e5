# How a session is put together from one config: the wiring, kept apart from the turn loop.
# `open.py` (open_session: the steps in order, torn down in reverse), `options.py` (the one
# options value and the handles returned on the session), `steps.py` (models, curated memory,
# the memory manager and its provider, skills, traces), `tool_port.py` (the tools of
# `harness.tools` joined to the session being built), `memory_bridge.py` (the `memory` package
# adapted to the loop's ports), `scoped.py` (the principal's stores: who sees what),
# `slots.py` (the system prompt's static slots: identity, guidance, context files, ...),
# `semantic.py` (the semantic provider learning through the session's model calls),
# `stores.py` (open_stores: every store of the configured backend, files or PostgreSQL,
# opened once), `resume.py` (continuing a recorded session on any worker), `migrate.py` (a
# home copied into PostgreSQL).
# `harness.loop` never imports this package.
import typing

from harness._lazy import lazy_names as _lazy_names

if typing.TYPE_CHECKING:
    from harness.wiring.open import OpenedSession, open_session
    from harness.wiring.options import SessionHandles, SessionOptions
    from harness.wiring.stores import Stores, open_stores

# Imported on first use (`harness._lazy`): the CLI's store commands import
# `harness.wiring.scoped` without the loop, the model clients and the tools behind `open`.
__getattr__ = _lazy_names(
    globals(),
    {
        "harness.wiring.open": ("OpenedSession", "open_session"),
        "harness.wiring.options": ("SessionHandles", "SessionOptions"),
        "harness.wiring.stores": ("Stores", "open_stores"),
    },
)

__all__ = ["OpenedSession", "SessionHandles", "SessionOptions", "Stores", "open_session", "open_stores"]
