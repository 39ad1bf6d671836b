"""What one client can make the server spend: the table of request limits, each with its reason, and the
reading of request bodies under them.

A client is anyone who can reach the port. Every request must end in bounded time and memory with an
HTTP error that says which limit it met, and the server must keep answering the others meanwhile. Each
row of :data:`LIMITS` is one such bound; ``tests/test_serve_limits.py`` drives a real server past every
row, and docs/serve.md lists them. Rows with a ``field`` are :class:`~aprender.serve.ServeConfig` fields
whose default is the row's; the others are fixed by the protocols or by the libraries that parse.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from starlette.requests import ClientDisconnect
from starlette.types import Receive

from aprender.serve._errors import HTTPError
from aprender.serve._numbers import MAX_DIGITS, decimal
from aprender.serve._tensors import MAX_DEPTH, MAX_RANK

__all__ = ["LIMITS", "Bodies", "Limit", "default", "length"]


@dataclass(frozen=True)
class Limit:
    """One bound on what a request may cost.

    Parameters
    ----------
    name : str
        What is bounded; the ``ServeConfig`` field when ``field`` is true.
    value : float or int
        The bound (the default, for a field).
    unit : str
        What ``value`` counts.
    status : int
        The HTTP status of a request past it.
    reason : str
        Why the bound is there and why at that value.
    field : bool
        Whether ``ServeConfig`` (and so the caller) can change it.
    """

    name: str
    value: float | int
    unit: str
    status: int
    reason: str
    field: bool = True



LIMITS: tuple[Limit, ...] = (
    Limit("max_body_size", 64 << 20, "bytes", 413,
          "one request's body is held in memory while it is parsed; refused by Content-Length before it is "
          "read, or as soon as a chunked body passes it"),
    Limit("max_loop_body_size", 4 << 20, "bytes", 413,
          "a body that the event loop parses and converts itself (realizar, MLflow, Ollama and repository "
          "routes; v2 inference parses large bodies in its parser process): every other request waits "
          "meanwhile, and a 66 MB /predict body held them for over 5 s"),
    Limit("max_body_memory", 512 << 20, "bytes", 503,
          "the bodies of all requests being received at once: without it, N slow clients each sending "
          "just under max_body_size hold N times it (30 clients held 1.7 GB)"),
    Limit("body_timeout", 60.0, "seconds", 408,
          "a request's whole body must arrive within it: a client that declares a body and sends it slowly, "
          "or a chunked body that never ends, otherwise holds its memory and its connection forever"),
    Limit("head_timeout", 10.0, "seconds", 408,
          "the request line and headers must arrive within it, and an idle new connection is closed after "
          "it (slowloris): uvicorn closes a connection only between requests"),
    Limit("max_head_size", 64 << 10, "bytes", 431,
          "request line and headers together: uvicorn's httptools parser takes headers of any size and "
          "number (a 1 MiB header and 100,000 headers were accepted)"),
    Limit("max_connections", 1024, "connections", 503,
          "open connections, and requests in flight: each costs a file descriptor and buffers, and the "
          "process's descriptors are shared with model loads (uvicorn's limit_concurrency, answered in JSON)"),
    Limit("max_client_connections", 256, "connections", 503,
          "open connections of one client address, so that one client cannot take every connection "
          "(max_connections) from the others; behind a proxy every client has the proxy's address"),
    Limit("max_output_bytes", 512 << 20, "bytes", 413,
          "the arrays of one request's answer (its JSON text takes about three times more), checked before "
          "the model runs: the bytes per row are the model's (a predict_proba of 5,000 classes is 40 kB a "
          "row), the rows the client's, so a 2 MB request could have the model allocate 4 GB"),
    Limit("tensor rank", MAX_RANK, "dimensions", 400,
          "a v2 input is [rows, features] or [rows]; past 64 dimensions numpy fails with an error that "
          "is not the client's",
          field=False),
    Limit("tensor elements", 1, "per byte of the body", 400,
          "no encoding of a tensor takes less than a byte per element (JSON two, binary BOOL one), so a "
          "shape whose non-zero dimensions multiply past the body's bytes lies (numpy fails on [0, 2**63-1])",
          field=False),
    Limit("decimal digits", MAX_DIGITS, "ASCII digits", 400,
          "a number read from text (Content-Length, Inference-Header-Content-Length; a version in a URL or "
          "model id is a 404, a version folder named otherwise is not a version): str.isdigit() also accepts "
          "'²' and other Unicode digits that int() refuses, and int() refuses over 4,300 digits",
          field=False),
    Limit("JSON nesting", 1024, "levels", 400,
          f"orjson's own limit; tensor data itself may nest {MAX_DEPTH} levels", field=False),
    Limit("JSON numbers", 64, "bits", 400,
          "orjson reads integers of at most 64 bits and floats as float64 (1e400 and a 100,000-digit integer "
          "are refused in linear time; Python's int() would take quadratic time)", field=False),
)


def default(name: str) -> float | int:
    """The value of the row of :data:`LIMITS` named ``name``.

    Examples
    --------
    >>> default("max_head_size")
    65536
    """
    for limit in LIMITS:
        if limit.name == name:
            return limit.value
    raise KeyError(name)


def length(value: str, what: str) -> int:
    """A length header's value (400 unless :func:`~aprender.serve._numbers.decimal` reads it).

    Examples
    --------
    >>> length("42", "Content-Length")
    42
    """
    number = decimal(value)
    if number is None:
        raise HTTPError(400, f"{what} {value[:40]!r} is not a length (1 to {MAX_DIGITS} ASCII digits)")
    return number


class Bodies:
    """Request bodies being received: each within ``max_size`` bytes and ``seconds``, all of them within
    ``memory`` bytes at once, and a body the event loop parses itself within ``loop_size`` bytes (None:
    no bound).

    Examples
    --------
    >>> Bodies(1 << 20, 16 << 20, 60.0).held
    0
    """

    def __init__(self, max_size: int, memory: int | None, seconds: float | None,
                 loop_size: int | None = None) -> None:
        self.max_size = max_size
        self.memory = memory
        self.seconds = seconds
        self.loop_size = loop_size
        #: Bytes of the bodies being received now.
        self.held = 0

    async def receive(self, declared: str | None, receive: Receive, *, on_loop: bool = False) -> list[bytes]:
        """The body of a request whose ``Content-Length`` header is ``declared``, as the chunks it arrived in;
        ``on_loop`` for a body the event loop will parse itself.

        Raises
        ------
        HTTPError
            413 past ``max_size`` (or ``loop_size``), 503 past ``memory``, 408 past ``seconds``, 400 for a
            malformed length.
        starlette.requests.ClientDisconnect
            The client went away first.
        """
        limit, name = self.max_size, "max_body_size, --max-body-size"
        if on_loop and self.loop_size is not None and self.loop_size < limit:
            limit, name = self.loop_size, ("max_loop_body_size: this route parses its body on the server's event "
                                           "loop; send large batches to /v2/models/NAME/infer")
        if declared is not None and length(declared, "Content-Length") > limit:
            raise HTTPError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes ({name})")
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            assert task is not None
            task.cancel()

        # a timer that cancels the read, not asyncio.wait_for per message: a small body arrives in one
        # message, and a task per request would cost more than the fast paths' model call
        timer = None if self.seconds is None or task is None else loop.call_later(self.seconds, expire)
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    raise ClientDisconnect()
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise HTTPError(413, f"request body exceeds the limit of {limit} bytes ({name})")
                self._hold(len(chunk))
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return chunks
        except asyncio.CancelledError:
            if not expired:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: the cancellation is handled here
            if uncancel is not None:
                uncancel()
            raise HTTPError(408, f"the request body did not arrive within {self.seconds:g} s "
                                 "(body_timeout)") from None
        finally:
            if timer is not None:
                timer.cancel()
            self.held -= sum(len(c) for c in chunks)

    def _hold(self, size: int) -> None:
        if self.memory is not None and self.held + size > self.memory:
            raise HTTPError(503, f"the server holds {self.held >> 20} MiB of request bodies being received, "
                                 f"its limit (max_body_memory); retry", headers={"Retry-After": "1"})
        self.held += size

