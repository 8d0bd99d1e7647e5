"""The one psycopg boundary: URLs, connections, the pool, and psycopg errors → `memory.errors`.

Everything the PostgreSQL session store says about its server names the URL with the
password replaced by `***` (`redact_url`), so messages and logs can be shown as they are.
The store's tables live in one schema (`keel` unless configured), which every connection
puts first and alone on its `search_path`; the migration connection also sees the schema
holding `pg_trgm`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg
import psycopg.conninfo
import psycopg.errors
import psycopg_pool
from psycopg.rows import TupleRow

from memory.errors import SessionStoreBusyError, SessionStoreError, SessionStoreUnavailableError
from memory.pglog import redact_url
from memory.pgpool import PoolRecipe, async_pool

__all__ = [
    "DEFAULT_LOCK_TIMEOUT_S",
    "PgTarget",
    "connect",
    "is_unavailable",
    "open_pool",
    "redact_url",
    "translate",
]

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_URL_SCHEMES = ("postgresql://", "postgres://")
_FIX = (
    "check that the server runs and the URL is right (sessions.url, or $KEEL_SESSIONS__URL: "
    "postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE), or use sessions.backend: sqlite"
)


@dataclass(frozen=True, slots=True)
class PgTarget:
    """Where the store lives: a libpq URL and the schema its tables are in."""

    url: str
    schema: str = "keel"

    def __post_init__(self) -> None:
        if not self.url.startswith(_URL_SCHEMES):
            raise SessionStoreUnavailableError(
                f"the PostgreSQL URL {redact_url(self.url)!r} must start with postgresql://; "
                "write it as postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE"
            )
        try:
            psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.ProgrammingError as exc:
            raise SessionStoreUnavailableError(
                f"the PostgreSQL URL {redact_url(self.url)!r} cannot be parsed ({_first_line(exc)}); "
                "write it as postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE"
            ) from None
        if not _SCHEMA_NAME.fullmatch(self.schema):
            raise ValueError(
                f"schema name {self.schema!r} is not allowed; use lower-case letters, digits and _ "
                "(at most 63, not starting with a digit)"
            )

    @property
    def shown(self) -> str:
        """The URL without its password, and the schema: safe to print."""
        return f"{redact_url(self.url)} (schema {self.schema})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


DEFAULT_LOCK_TIMEOUT_S = 10.0
"""How long one statement waits for a lock another client holds, before it fails."""


def _options(search_path: str, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S) -> str:
    # Notices (e.g. "query contains only stop words") are noise for a library. A lock held by
    # another client (a long migration, an open transaction in psql) must not freeze a turn:
    # past lock_timeout the statement fails, and the turn goes on (the write is journalled).
    lock_ms = max(1, round(lock_timeout_s * 1000))
    return f"-c search_path={search_path} -c client_min_messages=warning -c lock_timeout={lock_ms}"


async def connect(
    target: PgTarget, *, search_path: str, timeout_s: float
) -> psycopg.AsyncConnection[TupleRow]:
    """One connection (for migrations), with a clear error when the server cannot be reached."""
    try:
        conn: psycopg.AsyncConnection[TupleRow] = await psycopg.AsyncConnection.connect(
            target.url, options=_options(search_path), connect_timeout=max(1, round(timeout_s))
        )
    except psycopg.Error as exc:
        raise translate(exc, target) from exc
    return conn


async def open_pool(
    target: PgTarget, *, size: int, timeout_s: float, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S
) -> psycopg_pool.AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]]:
    """A pool of `size` connections with the store's schema on their `search_path` and a
    bounded lock wait (`lock_timeout`); dropped connections are replaced at checkout."""
    pool = async_pool(
        PoolRecipe(
            url=target.url,
            store="sessions",
            schema=target.schema,
            size=size,
            timeout_s=timeout_s,
            lock_timeout_s=lock_timeout_s,  # see `_options`
        )
    )
    try:
        await pool.open(wait=True, timeout=timeout_s)
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        await pool.close()
        raise translate(exc, target) from exc
    return pool


def is_unavailable(exc: BaseException) -> bool:
    """True when `exc` says the server, not the request, is the problem."""
    return isinstance(
        exc,
        psycopg.OperationalError
        | psycopg_pool.PoolTimeout
        | psycopg.errors.InvalidAuthorizationSpecification
        | psycopg.errors.InvalidCatalogName
        | psycopg.errors.InsufficientPrivilege,
    )


def _missing_database(exc: BaseException, detail: str) -> bool:
    # A refused startup carries no SQLSTATE in psycopg, only libpq's text.
    if isinstance(exc, psycopg.errors.InvalidCatalogName):
        return True
    return isinstance(exc, psycopg.OperationalError) and "database" in detail and "does not exist" in detail


def translate(exc: BaseException, target: PgTarget) -> SessionStoreError:
    """A psycopg (or pool) error as the `memory.errors` class that says who must act."""
    detail = _first_line(exc)
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return SessionStoreUnavailableError(
            f"the PostgreSQL session store {target.shown} refused access ({detail}); grant the role "
            f"CREATE on the database (for schema {target.schema!r}) and USAGE on it, or use another role"
        )
    if _missing_database(exc, detail):
        return SessionStoreUnavailableError(
            f"the PostgreSQL session store {target.shown} names a database that does not exist ({detail}); "
            "create it (createdb) or fix the database name in the URL"
        )
    if "password authentication failed" in detail or "no password supplied" in detail:
        return SessionStoreUnavailableError(
            f"the PostgreSQL server refused the login for {target.shown} ({detail}); fix the user or "
            "password in the URL (or $PGPASSWORD / ~/.pgpass)"
        )
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return SessionStoreBusyError(
            f"another client held a lock in the PostgreSQL session store {target.shown} past the lock "
            f"timeout ({detail}); nothing was changed. Find it with pg_locks / pg_stat_activity, or retry"
        )
    if is_unavailable(exc):
        return SessionStoreUnavailableError(
            f"cannot use the PostgreSQL session store {target.shown}: {detail}; {_FIX}"
        )
    return SessionStoreError(f"the PostgreSQL session store {target.shown} failed: {detail}")
