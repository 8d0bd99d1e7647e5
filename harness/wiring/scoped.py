"""The principal's own stores, built from the config: one place that knows the scope layout.

`open_session`, the `keel memory|skills|sessions` commands and the experiments all build the
curated store, the skill library, the trace directory and the session filter here, so every
one of them sees the same principal's files (`memory.scope` draws the layout).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.config import KeelConfig
from harness.errors import ConfigError
from memory import MemoryStore, Principal, SnapshotPolicy
from memory.curated import CuratedBackend
from memory.gate import MeaningJudge, ProvenanceGate
from memory.scanner import MeaningCheck
from memory.skills import SkillLibrary

if TYPE_CHECKING:
    from harness.wiring.stores import MemoryPlace

__all__ = [
    "curated_store",
    "meaning_check",
    "session_user_ids",
    "shared_memory_store",
    "shared_skill_library",
    "skill_library",
    "trace_dir",
]


def curated_store(
    config: KeelConfig,
    home: Path,
    principal: Principal,
    *,
    policy: SnapshotPolicy | None = None,
    meaning: MeaningCheck | None = None,
    backend: CuratedBackend | None = None,
) -> MemoryStore:
    """The principal's MEMORY.md (its workspace) and USER.md (its user), with the config's limits.

    Each file keeps its own budget and its own sidecar lock, so two principals never wait on
    or count against each other's files. `meaning`: the scanner's second layer on its writes.
    `backend`: where the documents live (None: the files of `home`).
    """
    m = config.memory
    return MemoryStore(
        principal.workspace_memories_dir(home),
        user_directory=principal.user_memories_dir(home),
        memory_char_limit=m.memory_char_limit,
        user_char_limit=m.user_char_limit,
        policy=m.snapshot_policy if policy is None else policy,
        overflow=m.overflow,
        lock_timeout_s=m.lock_timeout_s,
        memory_enabled=m.memory_enabled,
        user_profile_enabled=m.user_profile_enabled,
        meaning=meaning,
        backend=backend,
    )


def meaning_check(config: KeelConfig) -> MeaningCheck | None:
    """The scanner's meaning check as `memory.meaning_check` asks (None: rules only).

    Raises:
        ConfigError: it is `on` and the local embedder is not installed.
    """
    m = config.memory
    if m.meaning_check == "never":
        return None
    # Here, not at import: the semantic package brings numpy, and the CLI's store commands
    # import this module without ever building a meaning check.
    from memory.providers.semantic import MiniLmEmbedder, embedder_unavailable_reason

    reason = embedder_unavailable_reason()
    if reason is not None:
        if m.meaning_check == "always":
            raise ConfigError(
                f"memory.meaning_check is 'always' but {reason}; or set memory.meaning_check: auto"
            )
        return None
    return MeaningCheck(
        MiniLmEmbedder(threads=config.memory.semantic.embedder_threads), threshold=m.meaning_threshold
    )


def provenance_gate(config: KeelConfig) -> ProvenanceGate:
    """The provenance gate of a session's write paths (`memory.gate`), with its check by
    meaning as `memory.provenance_meaning` asks.

    Raises:
        ConfigError: it is `always` and the local embedder is not installed.
    """
    m = config.memory
    if m.untrusted_writes == "allow" or m.provenance_meaning == "never":
        return ProvenanceGate(policy=m.untrusted_writes)
    from memory.providers.semantic import MiniLmEmbedder, embedder_unavailable_reason

    reason = embedder_unavailable_reason()
    if reason is not None:
        if m.provenance_meaning == "always":
            raise ConfigError(
                f"memory.provenance_meaning is 'always' but {reason}; or set memory.provenance_meaning: auto"
            )
        return ProvenanceGate(policy=m.untrusted_writes)
    embedder = MiniLmEmbedder(threads=m.semantic.embedder_threads)
    return ProvenanceGate(
        policy=m.untrusted_writes, meaning=MeaningJudge(embedder, similarity=m.provenance_similarity)
    )


def skill_library(
    config: KeelConfig, home: Path, principal: Principal, *, stores: MemoryPlace | None = None
) -> SkillLibrary:
    """The principal's workspace skill library (on the `stores`' backend when given)."""
    guard = config.skills.guard_agent_created
    rows = None if stores is None else stores.skills(principal, home, guard_agent_created=guard)
    return rows or SkillLibrary(principal.skills_dir(home), guard_agent_created=guard)


def _shared_principal(config: KeelConfig, principal: Principal) -> Principal | None:
    name = config.scope.shared_workspace
    if name is None or name == principal.workspace:
        return None  # none named, or it is the principal's own workspace (read-write)
    return Principal(workspace=name)


def shared_memory_store(
    config: KeelConfig, home: Path, principal: Principal, *, stores: MemoryPlace | None = None
) -> MemoryStore | None:
    """The shared workspace's MEMORY.md, read-only (shown under its own heading), if the config
    names one (on the `stores`' backend when given)."""
    shared = _shared_principal(config, principal)
    if shared is None or not config.memory.memory_enabled:
        return None
    return MemoryStore(
        shared.workspace_memories_dir(home),
        memory_char_limit=config.memory.memory_char_limit,
        policy="frozen",
        user_profile_enabled=False,
        memory_title=f"SHARED MEMORY (workspace {shared.workspace}, read-only)",
        backend=None if stores is None else stores.curated(shared),
    )


def shared_skill_library(
    config: KeelConfig, home: Path, principal: Principal, *, stores: MemoryPlace | None = None
) -> SkillLibrary | None:
    """The shared workspace's skills (listed and viewable, never changed), if the config names one."""
    shared = _shared_principal(config, principal)
    return None if shared is None else skill_library(config, home, shared, stores=stores)


def trace_dir(config: KeelConfig, home: Path, principal: Principal) -> Path:
    """Where the principal's request traces go: `<traces>/users/<user>` (`<traces>` by default)."""
    return principal.traces_dir(config.traces.dir or home / "traces")


def session_user_ids(config: KeelConfig, principal: Principal) -> tuple[str, ...]:
    """The users whose sessions the principal may search and read: itself, then `scope.shared_users`."""
    own = principal.session_user
    return (own, *(u for u in config.scope.shared_users if u != own))
