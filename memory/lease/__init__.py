# The session lease: one turn (or compression) per session at a time, across processes and machines.
# `contract.py` (the `SessionLease` protocol and the in-process gate every lease shares),
# `postgres.py` (a PostgreSQL advisory lock per session on one connection per process),
# `files.py` (an fcntl record lock on `<home>/leases/<session id>.lock`, for a single machine).
"""The session lease: who may run a turn of a session right now.

    async with lease.hold(session_id):   # waits at most `wait_s`, else SessionBusyError
        ...                               # one turn, or one compression

A lease dies with its holder: a killed process's advisory lock is freed when its connection
drops, and its record lock when the kernel closes its file.
"""

import typing

from memory.lazy import lazy_names as _lazy_names
from memory.lease.contract import LocalGate, SessionLease
from memory.lease.files import FileLease

# The advisory lock loads psycopg when a name below is first read (`memory.lazy`).
if typing.TYPE_CHECKING:
    from memory.lease.postgres import PgLease, lease_key

__getattr__ = _lazy_names(globals(), {"memory.lease.postgres": ("PgLease", "lease_key")})

__all__ = ["FileLease", "LocalGate", "PgLease", "SessionLease", "lease_key"]
