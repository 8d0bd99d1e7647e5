"""The `state.db` schema: numbered migrations for the tables, rebuildable full-text indexes.

Two kinds of schema objects, handled differently on purpose:

- **Tables hold data** (`sessions`, `messages`, `flushes`, `state_meta`; since migration 3
  every session has a `user_id`, `''` for the default single user). They change only
  through numbered migrations (keel's one runner, `memory._migrations`), applied in order
  inside one write transaction and recorded in `schema_migrations`. A database newer than
  the code is refused, never downgraded.
- **Full-text indexes are derived** (`messages_fts`, `messages_trigram`): every row can be
  recomputed from `messages`. Each has a spec version in `state_meta`; on open the store
  (re)creates any index that is missing, stale or of an older spec and rebuilds it from
  the canonical rows. That is how a database first written without FTS5 (or by a build
  without the trigram tokenizer) gains its indexes later, and how a process without FTS5
  can still write: it drops the index triggers and marks the index stale.

New messages are indexed once per write transaction, not by a trigger per row:
`index_new_messages` runs at the end of every write transaction (the group commit's) and
indexes every message past the `index:through` mark in one statement per index. FTS5
writes its pending terms out as a new segment at every savepoint, and a trigger gives each
INSERT a statement savepoint, so row-by-row indexing wrote two index segments per message
(and merged them later): about 190 of the 240 µs a message cost. Updates and deletes,
which keel itself never makes, still go through triggers. Spec version 1 indexed inserts
by trigger; its index content is the same, so it is upgraded in place (the insert trigger
dropped, nothing rebuilt). If an older keel puts its insert trigger back while this one
runs, the trigger indexes and the mark just moves on.

Everything here runs synchronously on a connection the caller already holds inside a
`BEGIN IMMEDIATE` transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Literal

from memory._migrations import Migration, migrate_sqlite
from memory.errors import SessionSchemaError
from memory.sessions._ranking import TOOL_PREFIX_CHARS
from memory.sessions._records import IndexFeatures

__all__ = [
    "INDEXES",
    "MIGRATIONS",
    "WORD_TOKENIZER",
    "IndexSpec",
    "index_new_messages",
    "migrate",
    "probe_features",
    "reconcile_indexes",
]

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
"""The word index's tokenizer: Porter stemming over unicode61 ("painting" finds "paints")."""

_M1_BASE = (
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        model TEXT,
        parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        end_reason TEXT,
        title TEXT,
        message_count INTEGER NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        api_call_count INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX sessions_parent ON sessions(parent_session_id)",
    "CREATE INDEX sessions_started ON sessions(started_at)",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        content TEXT NOT NULL,
        api_content TEXT,
        tool_calls TEXT,
        tool_call_id TEXT,
        tool_name TEXT,
        timestamp REAL NOT NULL,
        token_count INTEGER,
        summary INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session_id, seq)
    )""",
    "CREATE TABLE state_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

_M2_FLUSHES_AND_ACTIVITY = (
    """CREATE TABLE flushes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        timestamp REAL NOT NULL,
        mode TEXT NOT NULL,
        saved TEXT NOT NULL,
        refused TEXT NOT NULL,
        reply TEXT NOT NULL
    )""",
    "CREATE INDEX flushes_session ON flushes(session_id, timestamp)",
    # Browse orders sessions by their last activity; backfill it for rows written by v1.
    "ALTER TABLE sessions ADD COLUMN last_active_at REAL",
    """UPDATE sessions SET last_active_at = COALESCE(
        (SELECT max(m.timestamp) FROM messages m WHERE m.session_id = sessions.id), started_at)""",
    "CREATE INDEX sessions_last_active ON sessions(last_active_at)",
)

# Every existing session belonged to the one user a home had: the default principal ''.
_M3_USER_SCOPE = (
    "ALTER TABLE sessions ADD COLUMN user_id TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX sessions_user_started ON sessions(user_id, started_at)",
    "CREATE INDEX sessions_user_last_active ON sessions(user_id, last_active_at)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "base tables: sessions, messages, state_meta", _M1_BASE),
    Migration(2, "flushes; sessions.last_active_at", _M2_FLUSHES_AND_ACTIVITY),
    Migration(3, "sessions.user_id (the principal a session ran for)", _M3_USER_SCOPE),
    Migration(
        4,
        "sessions.memory_snapshot (the curated versions a session's prompt was built from)",
        ("ALTER TABLE sessions ADD COLUMN memory_snapshot TEXT",),
    ),
)


def _too_new(found: int, known: int) -> SessionSchemaError:
    return SessionSchemaError(
        f"state.db is at schema version {found}, newer than this keel understands ({known}); "
        "upgrade keel, or point it at another home"
    )


def migrate(conn: sqlite3.Connection, *, now: float | None = None) -> int:
    """Apply every pending migration (`memory._migrations`); return the schema version reached.

    Raises:
        SessionSchemaError: the database is newer than this code.
    """
    return migrate_sqlite(conn, MIGRATIONS, too_new=_too_new, now=now)


# ------------------------------------------------------------------ derived indexes


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """One full-text index over `messages`: a source view, the FTS5 table, its triggers, and
    the statement that indexes new rows.

    The view computes exactly what `insert_sql` and the triggers insert, so FTS5's
    integrity check (which compares the index against its content table) holds.
    """

    name: str
    version: int
    needs: Literal["fts", "trigram"]
    """The feature the index needs."""
    view_sql: str
    table_sql: str
    trigger_sql: tuple[str, ...]
    insert_sql: str
    """Indexes the messages with `?1 < id <= ?2`."""
    setup_sql: tuple[str, ...] = ()
    same_content_since: int = 1
    """Spec versions from this one on hold the same index content (only triggers differ)."""

    @property
    def trigger_names(self) -> tuple[str, ...]:
        return (f"{self.name}_ad", f"{self.name}_au")

    @property
    def insert_trigger(self) -> str:
        """The per-row insert trigger of spec version 1 (an older keel may still create it)."""
        return f"{self.name}_ai"

    @property
    def meta_key(self) -> str:
        return f"index:{self.name}"


_FTS_VALUE = (
    f"CASE WHEN {{t}}.role = 'tool' THEN substr({{t}}.content, 1, {TOOL_PREFIX_CHARS}) ELSE {{t}}.content END"
)

_WORD_INDEX = IndexSpec(
    name="messages_fts",
    version=2,
    needs="fts",
    view_sql=(
        "CREATE VIEW messages_fts_src AS SELECT id, "
        + _FTS_VALUE.format(t="messages")
        + " AS content, tool_name, tool_calls FROM messages"
    ),
    # unicode61 cannot split CJK runs; the trigram index covers those.
    table_sql=(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(content, tool_name, tool_calls, "
        f"content='messages_fts_src', content_rowid='id', tokenize='{WORD_TOKENIZER}')"
    ),
    insert_sql=(
        "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) SELECT id, "
        f"{_FTS_VALUE.format(t='messages')}, tool_name, tool_calls FROM messages WHERE id > ?1 AND id <= ?2"
    ),
    trigger_sql=(
        "CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN "
        "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) VALUES "
        f"('delete', old.id, {_FTS_VALUE.format(t='old')}, old.tool_name, old.tool_calls); END",
        # Fires only when an indexed value really changed, so flag updates cost nothing.
        "CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, role, tool_name, tool_calls "
        "ON messages WHEN old.content IS NOT new.content OR old.role IS NOT new.role "
        "OR old.tool_name IS NOT new.tool_name OR old.tool_calls IS NOT new.tool_calls BEGIN "
        "INSERT INTO messages_fts(messages_fts, rowid, content, tool_name, tool_calls) VALUES "
        f"('delete', old.id, {_FTS_VALUE.format(t='old')}, old.tool_name, old.tool_calls); "
        "INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) VALUES "
        f"(new.id, {_FTS_VALUE.format(t='new')}, new.tool_name, new.tool_calls); END",
    ),
    # Tool names and call JSON count, but less than what was said.
    setup_sql=("INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.4, 0.2)')",),
)

_TRIGRAM_INDEX = IndexSpec(
    name="messages_trigram",
    version=2,
    needs="trigram",
    # Tool output is left out: the trigram index is the most expensive one and substring
    # search is for what people said.
    view_sql="CREATE VIEW messages_trigram_src AS SELECT id, content FROM messages WHERE role <> 'tool'",
    table_sql=(
        "CREATE VIRTUAL TABLE messages_trigram USING fts5(content, "
        "content='messages_trigram_src', content_rowid='id', tokenize='trigram')"
    ),
    insert_sql=(
        "INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages "
        "WHERE id > ?1 AND id <= ?2 AND role <> 'tool'"
    ),
    trigger_sql=(
        "CREATE TRIGGER messages_trigram_ad AFTER DELETE ON messages WHEN old.role <> 'tool' BEGIN "
        "INSERT INTO messages_trigram(messages_trigram, rowid, content) "
        "VALUES ('delete', old.id, old.content); END",
        "CREATE TRIGGER messages_trigram_au AFTER UPDATE OF content, role ON messages "
        "WHEN old.content IS NOT new.content OR old.role IS NOT new.role BEGIN "
        "INSERT INTO messages_trigram(messages_trigram, rowid, content) "
        "SELECT 'delete', old.id, old.content WHERE old.role <> 'tool'; "
        "INSERT INTO messages_trigram(rowid, content) "
        "SELECT new.id, new.content WHERE new.role <> 'tool'; END",
    ),
)

INDEXES: tuple[IndexSpec, ...] = (_WORD_INDEX, _TRIGRAM_INDEX)


def probe_features() -> IndexFeatures:
    """Which full-text features this SQLite build has (checked on a private in-memory db)."""
    probe = sqlite3.connect(":memory:")
    try:
        fts = _can(probe, "CREATE VIRTUAL TABLE temp.p1 USING fts5(x)")
        trigram = fts and _can(probe, "CREATE VIRTUAL TABLE temp.p2 USING fts5(x, tokenize='trigram')")
    finally:
        probe.close()
    return IndexFeatures(fts=fts, trigram=trigram)


def _can(conn: sqlite3.Connection, sql: str) -> bool:
    try:
        conn.execute(sql)
    except sqlite3.OperationalError:
        return False
    return True


def _existing(conn: sqlite3.Connection, kind: str) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,)).fetchall()
    return {str(r[0]) for r in rows}


def reconcile_indexes(conn: sqlite3.Connection, features: IndexFeatures) -> IndexFeatures:
    """Bring every derived index in line with `features`; return the indexes usable now.

    An enabled index that is missing, stale, incomplete or of an older spec is dropped,
    recreated and rebuilt from `messages`. A disabled one keeps its table (dropping an
    FTS5 table needs the FTS5 module, which may be what is missing) but loses its
    triggers, and is marked stale so the next FTS-capable open rebuilds it.
    """
    tables, triggers = _existing(conn, "table"), _existing(conn, "trigger")
    meta = dict(conn.execute("SELECT key, value FROM state_meta").fetchall())
    usable = {"fts": False, "trigram": False}
    for spec in INDEXES:
        enabled = features.fts if spec.needs == "fts" else features.trigram
        have_triggers = set(spec.trigger_names) <= triggers
        if not enabled:
            for trigger in (*spec.trigger_names, spec.insert_trigger):
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            if spec.name in tables:
                _set_meta(conn, spec.meta_key, "stale")
            continue
        version = meta.get(spec.meta_key, "")
        current = spec.name in tables and have_triggers and version.isdigit()
        if current and spec.same_content_since <= int(version) < spec.version:
            # An older spec of the same content (the per-row insert trigger): keep the index.
            conn.execute(f"DROP TRIGGER IF EXISTS {spec.insert_trigger}")
            _set_meta(conn, spec.meta_key, str(spec.version))
        elif not (current and version == str(spec.version)):
            _rebuild(conn, spec)
        usable[spec.needs] = True
    if usable["fts"]:
        # Every row is in the indexes now (kept by triggers until here, or just rebuilt).
        _set_meta(conn, _THROUGH_KEY, str(_newest_message(conn)))
    return IndexFeatures(fts=usable["fts"], trigram=usable["trigram"])


_THROUGH_KEY = "index:through"
"""`state_meta`: every message with an id up to this one is in the enabled indexes."""


def _newest_message(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])


def index_new_messages(conn: sqlite3.Connection, features: IndexFeatures) -> None:
    """Add the messages written since the last call to the enabled indexes (see the module doc).

    Runs at the end of each write transaction, after the writes' own savepoints, so FTS5
    writes one segment per index for the whole transaction.
    """
    if not features.fts:
        return
    newest = _newest_message(conn)
    row = conn.execute("SELECT value FROM state_meta WHERE key = ?", (_THROUGH_KEY,)).fetchone()
    through = int(row[0]) if row is not None else 0
    if newest <= through:
        return
    triggers = _existing(conn, "trigger")
    for spec in INDEXES:
        enabled = features.fts if spec.needs == "fts" else features.trigram
        if enabled and spec.insert_trigger not in triggers:  # else an older keel's trigger did it
            conn.execute(spec.insert_sql, (through, newest))
    _set_meta(conn, _THROUGH_KEY, str(newest))


def _rebuild(conn: sqlite3.Connection, spec: IndexSpec) -> None:
    for trigger in (*spec.trigger_names, spec.insert_trigger):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute(f"DROP TABLE IF EXISTS {spec.name}")
    conn.execute(f"DROP VIEW IF EXISTS {spec.name}_src")
    conn.execute(spec.view_sql)
    conn.execute(spec.table_sql)
    for sql in spec.setup_sql:
        conn.execute(sql)
    for sql in spec.trigger_sql:
        conn.execute(sql)
    conn.execute(f"INSERT INTO {spec.name}({spec.name}) VALUES ('rebuild')")
    _set_meta(conn, spec.meta_key, str(spec.version))


def _set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO state_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
