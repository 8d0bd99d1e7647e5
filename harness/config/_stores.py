"""Where a configured session's data lives.

These sections validate and describe (`SessionsConfig.location`); opening the stores they
name is the wiring's (`harness.wiring.stores`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from harness.config._section import Section
from memory import redact_url, session_store_location

__all__ = ["SessionsConfig", "StorageConfig", "storage_moves_sessions"]

_PG_URL = "postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE"


def _check_pg_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("postgresql://", "postgres://")):
        raise ValueError(f"{redact_url(value)!r} is not a PostgreSQL URL; write {_PG_URL}")
    return value


class StorageConfig(Section):
    """Where every store of a principal lives: `files` (the keel home: files and SQLite) or
    `postgres` (curated memory, sessions, the session lease on one PostgreSQL server)."""

    backend: Literal["files", "postgres"] = "files"
    url: str | None = None
    pg_schema: str = Field("keel", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    lease_wait_s: float = Field(30.0, gt=0, le=3600)
    """How long a turn waits for another worker's turn of the same session before "session busy"."""

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        return _check_pg_url(value)

    @model_validator(mode="after")
    def _url_for_postgres(self) -> StorageConfig:
        if self.backend == "postgres" and not self.url:
            raise ValueError(f"storage.backend postgres needs storage.url ({_PG_URL}, or $KEEL_STORAGE__URL)")
        return self


def storage_moves_sessions(data: object) -> object:
    """`storage.backend: postgres` puts the sessions on that server too (a `mode="before"` step).

    The `sessions:` keys keep working: `sessions.url` and `sessions.pg_schema` win when given,
    and `sessions.backend: sqlite` beside `storage.backend: postgres` is refused, because
    the two would split one principal's state between a home and a server.
    """
    if not isinstance(data, dict):
        return data
    storage = data.get("storage")
    fields = storage.model_dump() if isinstance(storage, StorageConfig) else storage
    if not isinstance(fields, dict) or fields.get("backend") != "postgres":
        return data
    raw = data.get("sessions")
    sessions = dict(raw.model_dump(exclude_unset=True) if isinstance(raw, SessionsConfig) else raw or {})
    if sessions.get("backend", "postgres") != "postgres":
        raise ValueError(
            "storage.backend is postgres but sessions.backend is "
            f"{sessions['backend']!r}; remove sessions.backend (storage.backend moves every store)"
        )
    sessions["backend"] = "postgres"
    sessions.setdefault("url", fields.get("url"))
    sessions.setdefault("pg_schema", fields.get("pg_schema", "keel"))
    return {**data, "sessions": sessions}


class SessionsConfig(Section):
    """Where sessions are stored: `sqlite` (`<home>/state.db`) or a PostgreSQL server."""

    backend: Literal["sqlite", "postgres"] = "sqlite"
    url: str | None = None
    pg_schema: str = Field("keel", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    pool_size: int = Field(4, ge=1, le=100)
    connect_timeout_s: float = Field(10.0, gt=0, le=300)
    lock_timeout_s: float = Field(10.0, gt=0, le=3600)

    @field_validator("url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(
                f"{redact_url(value)!r} is not a PostgreSQL URL; write postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE"
            )
        return value

    @model_validator(mode="after")
    def _url_for_postgres(self) -> SessionsConfig:
        if self.backend == "postgres" and not self.url:
            raise ValueError(
                "backend postgres needs sessions.url (postgresql://USER[:PASSWORD]@HOST:PORT/DATABASE, "
                "or $KEEL_SESSIONS__URL)"
            )
        return self

    def location(self, home: Path) -> str:
        """Where sessions are kept: the state.db path, or the URL (no password) and schema."""
        return session_store_location(self.backend, home=home, url=self.url, pg_schema=self.pg_schema)
