"""What every protocol module shares: the error a handler raises, JSON responses, body reading,
and the plain ASGI form of the inference routes (:class:`Call` in, :class:`Reply` out).

The inference routes (``/predict``, ``/v2/models/{m}/infer``, ``/api/generate``, ``/api/chat``)
are answered straight from ASGI messages, without Starlette's routing, Request and Response
objects: with exact fast paths a small model's call takes microseconds, and those layers cost
several times more. Every other route is a Starlette endpoint.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Send

from aprender._display import json_printable
from aprender.serve._errors import HTTPError, parse_json
from aprender.serve._request_limits import Bodies

if TYPE_CHECKING:
    from aprender.serve._models import Registry

__all__ = ["Call", "HTTPError", "CallHandler", "Reply", "dumps", "error_reply", "json_object", "json_response",
           "read_body", "read_json", "receive_body", "registry_of", "require_api_key", "send_reply"]

#: orjson options: numpy arrays serialised natively, floats as the shortest repr that round-trips.
_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


def _default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):  # object arrays (string labels) that orjson does not take natively
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def dumps(content: Any) -> bytes:
    """JSON bytes of ``content``: numpy arrays and scalars included, floats round-trip exactly.

    A body often quotes a model file (metadata, labels, error messages) and often ends on a
    terminal (``curl``): orjson escapes C0 controls but writes DEL, C1 and bidi controls raw,
    so a non-ASCII body has them escaped too (:func:`aprender._display.json_printable`; the
    parsed values are unchanged). Numeric bodies are ASCII and skip the scan.
    """
    data = orjson.dumps(content, default=_default, option=_OPTIONS)
    return data if data.isascii() else json_printable(data.decode()).encode()


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response serialised with orjson."""
    return Response(dumps(content), status, headers, media_type="application/json")


def header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The value of header ``name`` (lower case) among an ASGI scope's headers."""
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


async def receive_body(headers: list[tuple[bytes, bytes]], receive: Receive, bodies: Bodies) -> bytes:
    """A request body that the event loop parses itself, read under the limits of ``bodies`` (size, size
    parsed on the event loop, time, memory of all bodies at once).

    Raises :class:`starlette.requests.ClientDisconnect` if the client goes away first.
    """
    chunks = await bodies.receive(header(headers, b"content-length"), receive, on_loop=True)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def receive_chunks(headers: list[tuple[bytes, bytes]], receive: Receive, bodies: Bodies) -> list[bytes]:
    """The request body as the chunks it arrived in, for a route that parses a large body away from the
    event loop (see :func:`receive_body`): a large body is never copied into one object on the event loop."""
    return await bodies.receive(header(headers, b"content-length"), receive)


async def read_body(request: Request) -> bytes:
    """The body of a Starlette request (see :func:`receive_body`)."""
    return await receive_body(request.scope["headers"], request.receive, request.app.state.bodies)


def json_object(body: bytes, *, allow_empty: bool = False) -> dict[str, Any]:
    """A request body as a JSON object (400 if it is not one)."""
    if allow_empty and not body.strip():
        return {}
    value = parse_json(body)
    if not isinstance(value, dict):
        raise HTTPError(400, f"request body must be a JSON object, got {type(value).__name__}")
    return value


async def read_json(request: Request, *, allow_empty: bool = False) -> dict[str, Any]:
    """A Starlette request's body as a JSON object (400 if it is not one)."""
    return json_object(await read_body(request), allow_empty=allow_empty)


def registry_of(request: Request) -> Registry:
    """The app's model registry."""
    return request.app.state.registry


def require_api_key(request: Request) -> None:
    """401 unless the request carries ``Authorization: Bearer <--api-key>`` (when one is set)."""
    _check_key(request.app.state.config.api_key, request.headers.get("authorization"))


def _check_key(key: str | None, authorization: str | None) -> None:
    if key is None:
        return
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
        raise HTTPError(401, "this route needs 'Authorization: Bearer <api key>' (--api-key)",
                        headers={"WWW-Authenticate": "Bearer"})


@dataclass(frozen=True)
class Call:
    """A request to an inference route, as the ASGI server handed it over.

    Parameters
    ----------
    registry : Registry
        The served models.
    headers : list of (bytes, bytes)
        The ASGI scope's headers, names in lower case.
    receive : callable
        The ASGI ``receive`` of the request (see :meth:`read`).
    bodies : Bodies
        The limits request bodies are read under (size, time, memory).
    params : dict
        The route's path parameters (``model``, ``version``).
    api_key : str, optional
        The key that changing which models are loaded needs (``--api-key``).
    """

    registry: Registry
    headers: list[tuple[bytes, bytes]]
    receive: Receive
    bodies: Bodies
    params: dict[str, str] = field(default_factory=dict)
    api_key: str | None = None

    def require_api_key(self) -> None:
        """401 unless the request carries ``Authorization: Bearer <api_key>`` (when one is set)."""
        _check_key(self.api_key, self.header(b"authorization"))

    def header(self, name: bytes) -> str | None:
        """The value of header ``name`` (lower case)."""
        return header(self.headers, name)

    async def read(self) -> bytes:
        """The request body (see :class:`Bodies`); read once."""
        return await receive_body(self.headers, self.receive, self.bodies)

    async def read_chunks(self) -> list[bytes]:
        """The request body as the chunks it arrived in (see :class:`Bodies`); read once."""
        return await receive_chunks(self.headers, self.receive, self.bodies)

    async def read_json(self) -> dict[str, Any]:
        """The request body as a JSON object (400 if it is not one)."""
        return json_object(await self.read())


@dataclass(frozen=True)
class Reply:
    """An inference route's answer: one body, or a tuple of chunks streamed as they are (NDJSON, or a
    large answer with its ``Content-Length`` in ``headers``).

    Examples
    --------
    >>> Reply(b"{}").status
    200
    """

    body: bytes | tuple[bytes, ...]
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


CallHandler = Callable[[Call], Awaitable[Reply]]


def error_reply(exc: HTTPError) -> Reply:
    """The JSON error every route answers: ``{"error", "code", ...}`` with the status and headers."""
    return Reply(dumps({"error": exc.message, "code": exc.code, **exc.extra}), exc.status, headers=exc.headers)


#: A body larger than this is sent in pieces of this size, each a short write with the event
#: loop's other work between them.
_PIECE = 1 << 20


async def send_reply(send: Send, reply: Reply) -> None:
    """Send ``reply`` as ASGI messages (what Starlette's Response and StreamingResponse send)."""
    headers = [(b"content-type", reply.content_type.encode("latin-1"))]
    headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()]
    if isinstance(reply.body, bytes) and len(reply.body) > _PIECE:
        view = memoryview(reply.body)
        reply = Reply(tuple(view[i:i + _PIECE] for i in range(0, len(view), _PIECE)), reply.status,
                      reply.content_type, reply.headers)
        headers.append((b"content-length", str(len(view)).encode("latin-1")))
    if isinstance(reply.body, bytes):
        headers.append((b"content-length", str(len(reply.body)).encode("latin-1")))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})
        return
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    for chunk in reply.body:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
