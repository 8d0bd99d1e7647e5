# keel's memory layers. The curated store (MEMORY.md / USER.md) with its write scanner
# and `memory` tool; the episodic session store (SQLite FTS5) and session_search; skills;
# the external-provider contract, the manager and the holographic provider.
# `memory` imports only the stdlib, filelock, pydantic and numpy — never `harness`.
# Providers: `provider.py` (the MemoryProvider contract and its value types), `manager.py`
# (MemoryManager: routing, isolation, background recall, breakers), `holographic/` (the local
# HRR + SQLite fact store), `testing.py` (ScriptedProvider for tests).

from memory._breaker import BreakerState
from memory._trivial import is_trivial
from memory.manager import CORE_TOOL_NAMES, MemoryManager, Recall
from memory.provider import (
    AgentContext,
    MemoryProvider,
    MemoryWrite,
    SwitchReason,
    TurnMessage,
    WriteAction,
    WriteTarget,
)

__all__ = [
    "CORE_TOOL_NAMES",
    "AgentContext",
    "BreakerState",
    "MemoryManager",
    "MemoryProvider",
    "MemoryWrite",
    "Recall",
    "SwitchReason",
    "TurnMessage",
    "WriteAction",
    "WriteTarget",
    "is_trivial",
]
