"""The `serve` section: `keel serve`, the HTTP door to sessions (see `harness.serve`)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from harness.config._section import Section

__all__ = ["ServeConfig", "ServeKey", "parse_duration"]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from a number or a string like `90s`, `30m`, `12h`, `7d`.

    Raises:
        ValueError: anything else (the message shows the accepted forms).
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration; write seconds (3600) or 90s, 30m, 12h, 7d")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(str(value))
    if match is None:
        raise ValueError(f"{value!r} is not a duration; write seconds (3600) or 90s, 30m, 12h, 7d")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


class ServeKey(Section):
    """One API key: the environment variable holding it, and the principal it speaks for."""

    key_env: str
    """The environment variable holding the key (keys stay out of the file)."""
    user: str | None = None
    """The user the key acts for (None: `scope.user`, else the default user)."""
    workspace: str | None = None
    """The workspace (None: `scope.workspace`, else the user's own)."""

    @field_validator("key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(
                f"key_env {value!r} is not an environment variable name; it names the variable that "
                "holds the key (export KEEL_API_KEY_ALICE=... and write key_env: KEEL_API_KEY_ALICE)"
            )
        return value


class ServeConfig(Section):
    """How `keel serve` admits requests and keeps runs."""

    keys: tuple[ServeKey, ...] = ()
    """Bearer keys and their principals. None: no auth, and the server binds loopback only."""
    busy: Literal["reject", "queue"] = "reject"
    """A turn posted while another turn of the session runs: 409 `session_busy`, or run it after."""
    events_retention: float = Field(7 * 86400.0, gt=0)
    """How long a finished run's events stay readable (seconds, or `7d`, `12h`, `30m`)."""
    max_body_bytes: int = Field(1_048_576, ge=1024)
    """A request body larger than this is refused with 413."""
    max_running: int = Field(64, ge=1, le=100_000)
    """Runs executing at once in one worker process; more wait for a slot (still `running`)."""
    drain_s: float = Field(30.0, ge=0)
    """On shutdown, how long running runs may finish before they are cancelled."""

    @field_validator("events_retention", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)
