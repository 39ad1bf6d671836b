"""The HTTP connection under the head limits of :data:`aprender.serve._request_limits.LIMITS`.

uvicorn's httptools protocol reads a request's line and headers without a bound on their size or on
the time they take, and closes a connection only after a response (its keep-alive timeout): a client
that opens connections and sends nothing, or a header a byte at a time (slowloris), holds a descriptor
and a buffer each for ever, and one header may be of any size. :class:`BoundedHead` adds both bounds;
everything else is uvicorn's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from aprender.serve._http import dumps

__all__ = ["BoundedHead"]

_REASONS = {408: b"Request Timeout", 431: b"Request Header Fields Too Large", 503: b"Service Unavailable"}
_CODES = {408: "E_TIMEOUT", 431: "E_HEADERS_TOO_LARGE", 503: "E_OVERLOADED"}


class BoundedHead(HttpToolsProtocol):
    """uvicorn's httptools protocol, with each request's line and headers bounded in bytes
    (``max_head_size``, 431) and in time (``head_timeout``, 408, also for a connection that sends nothing),
    and the connections and requests in flight bounded (``max_connections``, 503: uvicorn's own
    ``limit_concurrency`` answers in plain text, every other error of the server is JSON), in all and
    per client address (``max_client_connections``, 503).

    Parameters
    ----------
    *args, **kwargs
        uvicorn's arguments of :class:`~uvicorn.protocols.http.httptools_impl.HttpToolsProtocol`.
    head_timeout : float, optional
        Seconds a request's line and headers may take (None: no bound).
    max_head_size : int, optional
        Bytes they may take (None: no bound).
    max_connections : int, optional
        Open connections, and requests in flight, past which a request is refused (None: no bound).
    max_client_connections : int, optional
        Open connections of one client address past which its requests are refused (None: no bound).
    clients : dict, optional
        Open connections per client address, shared by every connection of the server.
    """

    def __init__(self, *args: Any, head_timeout: float | None = None, max_head_size: int | None = None,
                 max_connections: int | None = None, max_client_connections: int | None = None,
                 clients: dict[str, int] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout = head_timeout
        self.max_head_size = max_head_size
        self.max_connections = max_connections
        self.max_client_connections = max_client_connections
        self.clients = {} if clients is None else clients

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._address = self.client[0] if self.client else ""
        self.clients[self._address] = self.clients.get(self._address, 0) + 1
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None
        self._begin_head()

    def _begin_head(self) -> None:
        """A request's head starts: count its bytes, and give it ``head_timeout`` to arrive."""
        self._in_head, self._head_bytes = True, 0
        if self.head_timeout is not None and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._refuse, 408,
                                                    f"the request line and headers did not arrive within "
                                                    f"{self.head_timeout:g} s (head_timeout)")

    def _end_head(self) -> None:
        self._in_head = False
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with the JSON error every route answers, and close the connection."""
        self._end_head()
        if self._refused or self.transport.is_closing():
            return
        self._refused = True
        body = dumps({"error": message, "code": _CODES[status]})
        self.transport.write(b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: close\r\n\r\n%s" % (status, _REASONS[status], len(body), body))
        self.transport.close()

    def _too_large(self, size: int) -> bool:
        if self.max_head_size is None or size <= self.max_head_size:
            return False
        self._refuse(431, f"the request line and headers exceed {self.max_head_size} bytes (max_head_size)")
        return True

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head:  # a head still incomplete: what arrived so far is all head
            self._too_large(self._head_bytes)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._begin_head()
        self._head_size = 0

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._end_head()
        if self._too_large(self._head_size):  # a head that arrived whole in one read is measured here
            return
        limit = self.max_connections
        if limit is not None and (len(self.connections) > limit or len(self.tasks) >= limit):
            self._refuse(503, f"the server has {len(self.connections)} connections open, over its limit of "
                              f"{limit} (max_connections); retry")
            return
        mine, limit = self.clients.get(self._address, 0), self.max_client_connections
        if limit is not None and mine > limit:
            self._refuse(503, f"this client has {mine} connections open, over the limit of {limit} per client "
                              "(max_client_connections); retry")
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._refused:
            super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_head()
        left = self.clients.get(self._address, 1) - 1
        if left > 0:
            self.clients[self._address] = left
        else:
            self.clients.pop(self._address, None)
        super().connection_lost(exc)

