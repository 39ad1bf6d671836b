"""The error a request handler raises, and the JSON parse that raises it, in a module of their own: the
registry and the input parsers raise it too, and the HTTP layer that turns it into a response reads the registry."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["HTTPError", "parse_json"]

#: realizar's codes by status, for errors raised without one.
_CODES = {400: "E_INVALID_INPUT", 401: "E_UNAUTHORIZED", 404: "E_NO_MODEL", 413: "E_PAYLOAD_TOO_LARGE",
          501: "E_NOT_IMPLEMENTED", 503: "E_OVERLOADED"}


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


def parse_json(data: bytes | memoryview, what: str = "request body") -> Any:
    """Parse JSON, refusing malformed input with 400."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise HTTPError(400, f"{what} is not valid JSON: {exc}") from None
