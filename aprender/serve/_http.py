"""What every protocol module shares: the error a handler raises, JSON responses, body reading."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response

if TYPE_CHECKING:
    from aprender.serve._registry import Registry

__all__ = ["HTTPError", "dumps", "json_response", "parse_json", "read_body", "read_json", "registry_of",
           "require_api_key"]

#: orjson options: numpy arrays serialised natively, floats as the shortest repr that round-trips.
_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


class HTTPError(Exception):
    """A request the server refuses: status, message and (for realizar's routes) an error code.

    Parameters
    ----------
    status : int
        HTTP status code.
    message : str
        What was wrong, for the client.
    code : str, optional
        realizar's error code (``E_INVALID_INPUT``, ``E_NO_MODEL`` ...).
    headers : dict, optional
        Extra response headers (``Retry-After`` ...).
    extra : dict, optional
        Extra fields of the error body.

    Examples
    --------
    >>> HTTPError(404, "model 'm' not found", "E_NO_MODEL").status
    404
    """

    def __init__(self, status: int, message: str, code: str | None = None, *,
                 headers: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or _CODES.get(status, "E_INTERNAL")
        self.headers = headers or {}
        self.extra = extra or {}


#: realizar's codes by status, for errors raised without one.
_CODES = {400: "E_INVALID_INPUT", 401: "E_UNAUTHORIZED", 404: "E_NO_MODEL", 413: "E_PAYLOAD_TOO_LARGE",
          501: "E_NOT_IMPLEMENTED", 503: "E_OVERLOADED"}


def _default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):  # object arrays (string labels) that orjson does not take natively
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def dumps(content: Any) -> bytes:
    """JSON bytes of ``content``: numpy arrays and scalars included, floats round-trip exactly."""
    return orjson.dumps(content, default=_default, option=_OPTIONS)


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response serialised with orjson."""
    return Response(dumps(content), status, headers, media_type="application/json")


async def read_body(request: Request) -> bytes:
    """The request body, refused with 413 as soon as it exceeds the server's ``max_body_size``."""
    limit = request.app.state.config.max_body_size
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes "
                             "(--max-body-size)")
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"request body exceeds the limit of {limit} bytes (--max-body-size)")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(data: bytes | memoryview, what: str = "request body") -> Any:
    """Parse JSON, refusing malformed input with 400."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HTTPError(400, f"{what} is not valid JSON: {exc}") from None


async def read_json(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object (400 if it is not one)."""
    body = await read_body(request)
    if allow_empty and not body.strip():
        return {}
    value = parse_json(body)
    if not isinstance(value, dict):
        raise HTTPError(400, f"request body must be a JSON object, got {type(value).__name__}")
    return value


def registry_of(request: Request) -> Registry:
    """The app's model registry."""
    return request.app.state.registry


def require_api_key(request: Request) -> None:
    """401 unless the request carries ``Authorization: Bearer <--api-key>`` (when one is set)."""
    key = request.app.state.config.api_key
    if key is None:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
        raise HTTPError(401, "this route needs 'Authorization: Bearer <api key>' (--api-key)",
                        headers={"WWW-Authenticate": "Bearer"})
