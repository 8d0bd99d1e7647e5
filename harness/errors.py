"""keel's exception tree, organised by who has to act.

    KeelError
    ├── ConfigError              the operator: a bad config file, key or environment value
    ├── LocalModelError          the operator: the embedded model is missing or would not start
    ├── ModelFileError           the operator: a model file (GGUF, tokenizer.json, chat template) is
    │   │                        missing or unreadable
    │   └── ChatTemplateError    a chat template does not compile, or refused a conversation
    ├── CommandError             the CLI user: a `keel` command was asked for something it cannot do
    ├── ToolServerError          the operator: an MCP server would not start or list its tools
    ├── MeterError               the cache meter cannot run as asked (a missing package, a bad template)
    │   └── MeterInputError      a trace file is missing or a line is not a request; names the line
    ├── ModelError               a model call failed
    │   ├── RetryableModelError  the network or the provider; retried with backoff
    │   │   ├── ModelConnectionError   could not connect, or the connection dropped
    │   │   ├── ModelTimeoutError      no complete answer in time
    │   │   ├── ModelRateLimitError    429; carries `retry_after`
    │   │   └── ModelServerError       5xx / overloaded
    │   ├── ModelAuthError       401/403: fix the API key; never retried
    │   ├── ModelRequestError    other 4xx: the request itself was refused; never retried
    │   ├── ModelResponseError   the reply could not be understood (bad JSON, truncated stream)
    │   └── ScriptExhaustedError the scripted test model has no reply left
    └── SessionError             the turn loop was used wrongly (e.g. a turn while another runs)

Errors *from the model* (bad tool arguments, unknown tools) are not exceptions at all: they
become tool results the model can read and correct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "ChatTemplateError",
    "CommandError",
    "ConfigError",
    "KeelError",
    "LocalModelError",
    "MeterError",
    "MeterInputError",
    "ModelAuthError",
    "ModelConnectionError",
    "ModelError",
    "ModelFileError",
    "ModelRateLimitError",
    "ModelRequestError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "RetryableModelError",
    "ScriptExhaustedError",
    "SessionError",
    "ToolServerError",
    "validation_problems",
]


class KeelError(Exception):
    """Root of every error keel raises on purpose."""


class ConfigError(KeelError):
    """The configuration is invalid; the message names the key path and the fix."""


class LocalModelError(KeelError):
    """The embedded local model is not installed or did not start."""


class ToolServerError(KeelError):
    """An MCP server named in the config would not start, initialize or list its tools.

    The message names the server and quotes the tail of its stderr. Once a session is open,
    a server that fails is no longer an exception: its calls become tool errors.
    """


class ModelFileError(KeelError):
    """A model file (GGUF metadata, a tokenizer, a chat template) is missing or cannot be read."""


class ChatTemplateError(ModelFileError):
    """A chat template does not compile, or refused to render a conversation."""


class CommandError(KeelError):
    """A `keel` command could not do what was asked; the message says what to do instead."""


class MeterError(KeelError):
    """The cache meter cannot do what was asked; the message says what to change."""


class MeterInputError(MeterError):
    """A trace cannot be read: the message names the file, the line and what is wrong."""


class SessionError(KeelError):
    """The session API was used in a way it does not support."""


class ModelError(KeelError):
    """A model call failed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetryableModelError(ModelError):
    """A failure that may succeed on retry (network, overload, rate limit)."""


class ModelConnectionError(RetryableModelError):
    """Could not connect to the endpoint, or the connection dropped mid-reply."""


class ModelTimeoutError(RetryableModelError):
    """The endpoint did not answer completely within the timeout."""


class ModelRateLimitError(RetryableModelError):
    """HTTP 429. `retry_after` is the delay the server asked for, in seconds, if any."""

    def __init__(self, message: str, *, status: int | None = 429, retry_after: float | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ModelServerError(RetryableModelError):
    """HTTP 5xx or an explicit overload signal. `retry_after` as for `ModelRateLimitError`."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ModelAuthError(ModelError):
    """HTTP 401/403: the API key is missing, wrong or lacks permission."""


class ModelRequestError(ModelError):
    """Another 4xx: the endpoint refused the request as sent."""


class ModelResponseError(ModelError):
    """The reply was malformed: invalid JSON, a truncated stream, a missing field."""


class ScriptExhaustedError(ModelError):
    """The scripted model was asked for more replies than its script holds."""


def validation_problems(
    exc: ValidationError, *, whole: str = "(top level)", most: int | None = None, depth: int | None = None
) -> str:
    """pydantic's errors as one line, `field.path: message; …` (`whole`: the name of an error
    on the whole value; `most`: the first so many errors; `depth`: a path's first parts)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][:depth]) or whole}: {e['msg']}" for e in exc.errors()[:most]
    )
