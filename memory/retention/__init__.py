# Bounded stores: retention rules and the prune that applies them, on every backend.
# `policy.py` (the rules as values: SessionRetention, FileRetention; the results: Pruned,
# PruneReport, StoreStats), private `_lineage.py` (which lineages the rules remove, the same
# everywhere), `sqlite.py` (state.db, fenced by the lease files), `postgres.py` (a keel
# schema, fenced by the advisory-lock leases; the curated archive), `files.py` (traces,
# write journals, ARCHIVE.jsonl). A prune never removes a lineage whose lease is held, never
# part of a lineage, and never `curated_versions` (pinned by sessions' memory snapshots).
"""Retention: `keel storage prune` and `keel storage stats` on both backends."""

from memory.retention.files import file_stats, prune_archives, prune_journals, prune_trace_dirs
from memory.retention.policy import FileRetention, Pruned, PruneReport, SessionRetention, StoreStats
from memory.retention.postgres import pg_has_table, pg_stats, prune_archive_rows, prune_pg_sessions
from memory.retention.sqlite import prune_state_db, state_db_stats

__all__ = [
    "FileRetention",
    "PruneReport",
    "Pruned",
    "SessionRetention",
    "StoreStats",
    "file_stats",
    "pg_has_table",
    "pg_stats",
    "prune_archive_rows",
    "prune_archives",
    "prune_journals",
    "prune_pg_sessions",
    "prune_state_db",
    "prune_trace_dirs",
    "state_db_stats",
]
