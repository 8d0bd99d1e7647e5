# The PostgreSQL session backend: psycopg 3, async, pooled; tables in one schema.
# `store.py` (PgSessionStore), private `_conn.py` (the psycopg boundary: URLs, the pool,
# error translation), `_schema.py` (numbered migrations, the pg_trgm index), `_sql.py` (the
# queries), `_search.py` (tsvector / pg_trgm / ILIKE search), `_stats.py` (term statistics
# for IDF), `_vectors.py` (PgVectors: message embeddings as real[]). Never imports the SQLite backend.
from memory.sessions.postgres._conn import PgTarget, redact_url
from memory.sessions.postgres._vectors import PgVectors
from memory.sessions.postgres.store import PgSessionStore, migrate_schema

__all__ = ["PgSessionStore", "PgTarget", "PgVectors", "migrate_schema", "redact_url"]
