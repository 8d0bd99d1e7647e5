"""Where a configured session's data lives: the session store it opens, and the principal it runs for."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from harness.config._section import Section
from harness.errors import ConfigError
from memory import Principal, ScopeError, SessionStore, open_session_store, redact_url, session_store_location

if TYPE_CHECKING:
    from harness.config._schema import KeelConfig

__all__ = ["SessionsConfig", "resolve_principal"]


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

    def open_store(self, home: Path) -> AbstractAsyncContextManager[SessionStore]:
        """The configured session store, opened on entry and closed on exit (`open_session_store`)."""
        return open_session_store(
            self.backend,
            home=home,
            url=self.url,
            pg_schema=self.pg_schema,
            pool_size=self.pool_size,
            connect_timeout_s=self.connect_timeout_s,
            lock_timeout_s=self.lock_timeout_s,
        )

    def location(self, home: Path) -> str:
        """Where sessions are kept: the state.db path, or the URL (no password) and schema."""
        return session_store_location(self.backend, home=home, url=self.url, pg_schema=self.pg_schema)


def resolve_principal(
    config: KeelConfig, *, user_id: str | None = None, workspace: str | None = None
) -> Principal:
    """The principal a session runs for: the arguments, else `scope.*`, else `memory.user_id`.

    Raises:
        ConfigError: an id is not a safe directory name, or `scope.user` and the deprecated
            `memory.user_id` name different users.
    """
    legacy, scoped = config.memory.user_id, config.scope.user
    if user_id is None and legacy is not None and scoped is not None and legacy != scoped:
        raise ConfigError(
            f"scope.user {scoped!r} and memory.user_id {legacy!r} name different users; "
            "memory.user_id is the old spelling of scope.user — keep only scope.user"
        )
    try:
        return Principal(
            user_id=user_id if user_id is not None else (scoped if scoped is not None else legacy),
            workspace=workspace if workspace is not None else config.scope.workspace,
        )
    except ScopeError as exc:
        raise ConfigError(f"{exc} (from --user/--workspace, scope.* or memory.user_id)") from exc
