"""The HTTP edge every route shares: error bodies, capped JSON bodies, request models.

Every error is `{"error": {"code", "message", "type"[, "field"]}}` (the shape OpenAI clients
already read, with keel's stable `code`); docs/serve.md lists the codes.
"""

from __future__ import annotations

import json
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = ["ApiError", "Body", "ErrorCode", "error_response", "read_body", "read_json", "read_model"]

ErrorCode = Literal[
    "unauthorized",
    "not_found",
    "invalid_json",
    "invalid_request",
    "body_too_large",
    "session_busy",
    "idempotency_conflict",
    "storage_unavailable",
    "model_error",
    "run_failed",
]
M = TypeVar("M", bound=BaseModel)

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    409: "conflict_error",
}


class ApiError(Exception):
    """An HTTP error with a stable code; raised by handlers, answered by `error_response`."""

    def __init__(
        self,
        status: int,
        code: ErrorCode,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = dict(headers or {})


def error_response(exc: ApiError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The error's JSON body, with its own headers and `headers`."""
    body: dict[str, object] = {
        "code": exc.code,
        "message": exc.message,
        "type": _TYPES.get(exc.status, "server_error"),
    }
    if exc.field is not None:
        body["field"] = exc.field
    return JSONResponse({"error": body}, status_code=exc.status, headers={**exc.headers, **(headers or {})})


class Body(BaseModel):
    """A request body of the native API: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


async def read_body(request: Request, cap: int) -> bytes:
    """The raw body, refused with 413 past `cap` bytes (read in chunks, never buffered past it)."""
    too_large = ApiError(
        413,
        "body_too_large",
        f"the request body is larger than {cap:,} bytes (serve.max_body_bytes); send less",
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            raise too_large
    return bytes(body)


async def read_json(request: Request, cap: int) -> dict[str, object]:
    """The body as a JSON object (`{}` when empty); 400 `invalid_json` otherwise."""
    raw = await read_body(request, cap)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(
            400, "invalid_json", f"the body is not valid JSON ({exc}); send a JSON object"
        ) from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_json", f"the body is JSON {type(data).__name__}; send a JSON object")
    return data


def read_model(data: dict[str, object], model: type[M]) -> M:
    """`data` validated as `model`; 400 `invalid_request` naming the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "body"
        if first["type"] == "extra_forbidden":
            allowed = ", ".join(sorted(model.model_fields)) or "none"
            message = f"unknown field {field!r}; the fields are: {allowed}"
        else:
            message = f"field {field!r}: {first['msg']}"
        raise ApiError(400, "invalid_request", message, field=field) from None
