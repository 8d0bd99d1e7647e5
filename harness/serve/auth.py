"""Who a request speaks for: `serve.keys` (a bearer key per principal), or nobody configured.

Keys are read from the environment once, at start; a key named in the config but missing
from the environment stops the server with a clear error. With no keys every request acts
for the configured principal (`scope.*`), and the server refuses to listen beyond loopback.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request

from harness.config import KeelConfig, resolve_principal
from harness.errors import ConfigError
from harness.serve.http import ApiError
from memory import Principal

__all__ = ["Keys", "check_bind", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(config: KeelConfig, host: str) -> None:
    """Refuse a non-loopback address when no key is configured.

    Raises:
        ConfigError: no `serve.keys` and `host` is not loopback.
    """
    if not config.serve.keys and not is_loopback(host):
        raise ConfigError(
            f"keel serve has no API keys (serve.keys), so it listens on loopback only, not {host!r}: "
            "add keys ({key_env: ENV_VAR, user: ..., workspace: ...}) or use --host 127.0.0.1"
        )


@dataclass(frozen=True, slots=True)
class Keys:
    """The configured keys and their principals (empty: open, loopback only)."""

    entries: tuple[tuple[bytes, Principal], ...]
    anonymous: Principal

    @classmethod
    def from_config(cls, config: KeelConfig, environ: Mapping[str, str]) -> Keys:
        """Read every key from the environment.

        Raises:
            ConfigError: a key's variable is unset or empty, or names an unsafe user/workspace.
        """
        entries: list[tuple[bytes, Principal]] = []
        for key in config.serve.keys:
            value = environ.get(key.key_env, "")
            if not value:
                raise ConfigError(
                    f"serve.keys names ${key.key_env}, which is unset or empty; export it with the API key"
                )
            principal = resolve_principal(config, user_id=key.user, workspace=key.workspace)
            entries.append((value.encode(), principal))
        return cls(tuple(entries), resolve_principal(config))

    def principal(self, request: Request) -> Principal:
        """The principal of the request's bearer key.

        Raises:
            ApiError: 401 when keys are configured and the request carries none of them.
        """
        if not self.entries:
            return self.anonymous
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode()
        if scheme.lower() == "bearer" and given:
            for secret, principal in self.entries:
                if hmac.compare_digest(secret, given):
                    return principal
        raise ApiError(
            401, "unauthorized", "missing or unknown API key; send 'Authorization: Bearer <key>' (serve.keys)"
        )
