# keel's memory layers. The curated store (MEMORY.md / USER.md) with its write scanner
# and `memory` tool; the episodic session store (SQLite FTS5) and session_search; skills;
# the external-provider contract, the manager and the holographic provider.
# `memory` imports only the stdlib, filelock, pydantic and numpy — never `harness`.

__all__: list[str] = []
