"""The fact store's schema: numbered migrations for keel's one runner (`memory._migrations`).

Never edit a released migration: append one. A store written before the runner recorded its
version in `PRAGMA user_version`; the runner adopts that.
"""

from __future__ import annotations

from memory._migrations import Migration

__all__ = ["MIGRATIONS"]

_M1_BASE = (
    """CREATE TABLE facts (
        fact_id INTEGER PRIMARY KEY AUTOINCREMENT,
        content TEXT NOT NULL UNIQUE,
        category TEXT NOT NULL DEFAULT 'general',
        tags TEXT NOT NULL DEFAULT '',
        trust_score REAL NOT NULL DEFAULT 0.5,
        retrieval_count INTEGER NOT NULL DEFAULT 0,
        helpful_count INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        hrr_vector BLOB
    )""",
    "CREATE INDEX idx_facts_trust ON facts(trust_score DESC)",
    "CREATE INDEX idx_facts_category ON facts(category)",
    """CREATE TABLE entities (
        entity_id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        entity_type TEXT NOT NULL DEFAULT 'unknown',
        aliases TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL
    )""",
    "CREATE INDEX idx_entities_name ON entities(name COLLATE NOCASE)",
    """CREATE TABLE fact_entities (
        fact_id INTEGER NOT NULL REFERENCES facts(fact_id) ON DELETE CASCADE,
        entity_id INTEGER NOT NULL REFERENCES entities(entity_id) ON DELETE CASCADE,
        PRIMARY KEY (fact_id, entity_id)
    )""",
    """CREATE VIRTUAL TABLE facts_fts USING fts5(
        content, tags, content='facts', content_rowid='fact_id', tokenize='porter unicode61'
    )""",
    """CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts(rowid, content, tags) VALUES (new.fact_id, new.content, new.tags);
    END""",
    """CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content, tags)
            VALUES ('delete', old.fact_id, old.content, old.tags);
    END""",
    """CREATE TRIGGER facts_au AFTER UPDATE OF content, tags ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content, tags)
            VALUES ('delete', old.fact_id, old.content, old.tags);
        INSERT INTO facts_fts(rowid, content, tags) VALUES (new.fact_id, new.content, new.tags);
    END""",
    """CREATE TABLE memory_banks (
        bank_id INTEGER PRIMARY KEY AUTOINCREMENT,
        bank_name TEXT NOT NULL UNIQUE,
        vector BLOB NOT NULL,
        dim INTEGER NOT NULL,
        fact_count INTEGER NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "facts, entities, their FTS5 index, memory banks, meta", _M1_BASE),
)
