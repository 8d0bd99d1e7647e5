# The SQLite session backend: `<home>/state.db`, WAL, FTS5 word and trigram indexes.
# `store.py` (SessionDB: runs each call in a worker thread), private `_schema.py` (numbered
# migrations, rebuildable full-text indexes), `_sql.py` (the synchronous queries),
# `_search.py` (message-level FTS5 / trigram / LIKE search), `_vectors.py` (SqliteVectors:
# message embeddings as float16 blobs). The SQLite boundary itself is
# `memory/_sqlite.py`. Never imports the PostgreSQL backend.
import typing

from memory.lazy import lazy_names as _lazy_names
from memory.sessions.sqlite.store import STATE_DB_NAME, SessionDB, open_session_db

if typing.TYPE_CHECKING:
    from memory.sessions.sqlite._vectors import SqliteVectors

# The vector table loads numpy: it is imported when dense search first asks for it (`memory.lazy`).
__getattr__ = _lazy_names(globals(), {"memory.sessions.sqlite._vectors": ("SqliteVectors",)})

__all__ = ["STATE_DB_NAME", "SessionDB", "SqliteVectors", "open_session_db"]
