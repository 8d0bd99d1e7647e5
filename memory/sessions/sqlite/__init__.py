# The SQLite session backend: `<home>/state.db`, WAL, FTS5 word and trigram indexes.
# `store.py` (SessionDB: runs each call in a worker thread), private `_schema.py` (numbered
# migrations, rebuildable full-text indexes), `_sql.py` (the synchronous queries),
# `_search.py` (message-level FTS5 / trigram / LIKE search), `_vectors.py` (SqliteVectors:
# message embeddings as float16 blobs). The SQLite boundary itself is
# `memory/_sqlite.py`. Never imports the PostgreSQL backend.
from memory.sessions.sqlite._vectors import SqliteVectors
from memory.sessions.sqlite.store import STATE_DB_NAME, SessionDB, open_session_db

__all__ = ["STATE_DB_NAME", "SessionDB", "SqliteVectors", "open_session_db"]
