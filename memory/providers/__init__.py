# External memory providers: the contract, the manager, and the providers we ship.
# `contract.py` (MemoryProvider: hooks that all default to doing nothing, and their value
# types), `manager.py` (MemoryManager: the built-in layer plus at most one external
# provider behind one façade — routing, isolation, background recall, breakers),
# `holographic/` (an HRR fact store), `semantic/` (memories learned from each exchange),
# each over SQLite files or PostgreSQL rows. Private: `_breaker.py` (a circuit breaker per
# provider), `_trivial.py` (which messages are too slight to recall for), `_pg.py` (what the
# PostgreSQL provider stores share: `PgPlace`, the per-user scope and its writer row, their
# transaction and errors), `_sqlite.py` (what the SQLite provider stores share: one file
# behind a lock, migrated on open), `_copy.py` (copying a provider file into those rows, verified).
import typing

from memory.lazy import lazy_names as _lazy_names
from memory.providers._breaker import BreakerState
from memory.providers._trivial import is_trivial
from memory.providers.contract import (
    AgentContext,
    MemoryProvider,
    MemoryWrite,
    ProviderContext,
    SwitchReason,
    TurnMessage,
    WriteAction,
    WriteTarget,
)
from memory.providers.manager import CORE_TOOL_NAMES, MemoryManager, Recall

# The PostgreSQL place loads psycopg: it is imported when a name below is first read
# (`memory.lazy`), so file-backed providers and the CLI's store commands never load the driver.
if typing.TYPE_CHECKING:
    from memory.providers._pg import PgPlace, ScopeCopy, provider_scope

__getattr__ = _lazy_names(globals(), {"memory.providers._pg": ("PgPlace", "ScopeCopy", "provider_scope")})

__all__ = [
    "CORE_TOOL_NAMES",
    "AgentContext",
    "BreakerState",
    "MemoryManager",
    "MemoryProvider",
    "MemoryWrite",
    "PgPlace",
    "ProviderContext",
    "Recall",
    "ScopeCopy",
    "SwitchReason",
    "TurnMessage",
    "WriteAction",
    "WriteTarget",
    "is_trivial",
    "provider_scope",
]
