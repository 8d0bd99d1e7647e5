"""The run store's tables: one list of numbered migrations, the same SQL on SQLite and PostgreSQL.

On PostgreSQL the tables live in the keel schema beside the sessions and record their
versions in `serve_migrations` (the sessions keep theirs in `schema_migrations`).
"""

from __future__ import annotations

from memory._migrations import Migration

__all__ = ["MIGRATIONS", "VERSIONS_TABLE"]

VERSIONS_TABLE = "serve_migrations"

MIGRATIONS = (
    Migration(
        1,
        "runs, events, the active run per session, idempotency keys",
        (
            """CREATE TABLE serve_runs (
                id TEXT PRIMARY KEY,
                session_id TEXT NOT NULL,
                user_id TEXT NOT NULL,
                input TEXT NOT NULL,
                status TEXT NOT NULL,
                worker TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                updated_at DOUBLE PRECISION NOT NULL,
                ended_at DOUBLE PRECISION,
                output TEXT,
                error_code TEXT,
                error_message TEXT,
                cancel_requested INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX serve_runs_session ON serve_runs(session_id, created_at)",
            "CREATE INDEX serve_runs_status ON serve_runs(status, worker)",
            "CREATE INDEX serve_runs_ended ON serve_runs(ended_at)",
            """CREATE TABLE serve_events (
                run_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                type TEXT NOT NULL,
                data TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (run_id, seq)
            )""",
            "CREATE TABLE serve_active (session_id TEXT PRIMARY KEY, run_id TEXT NOT NULL)",
            "CREATE INDEX serve_active_run ON serve_active(run_id)",
            """CREATE TABLE serve_idempotency (
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                body_hash TEXT NOT NULL,
                run_id TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                PRIMARY KEY (user_id, key)
            )""",
        ),
    ),
)
