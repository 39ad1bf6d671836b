"""Input tensors of an Open Inference Protocol v2 request, and the process that parses large JSON
requests away from the server's event loop.

:func:`read_tensors` turns a request's ``inputs`` (JSON data, or binary data after the JSON header)
into numpy arrays (numbers) and lists of strings (``BYTES``). For a JSON body of a million rows that
takes ~0.5 s, in single C calls (``orjson.loads``, ``numpy.asarray`` of nested lists) that hold the
GIL throughout: on the event loop, or in a thread, every other request would wait for them. So a
JSON body above :data:`OFFLOAD_BYTES` is parsed by a child process (:class:`Parser`, running
:func:`main`), which sends back the arrays' bytes and the strings as JSON lists in
chunks, which the server reads without holding its event loop for more than a few milliseconds at
a time. The child runs the very same :func:`read_tensors`, so answers and errors are the same.

The pipe carries only bytes this module frames itself (no pickle): the body one way; one JSON
header and the tensors' bytes the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import sys
from typing import Any

import numpy as np
import orjson

from aprender.serve._errors import HTTPError, parse_json

__all__ = ["DTYPES", "OFFLOAD_BYTES", "Parser", "Tensor", "read_tensors"]

#: JSON bodies larger than this are parsed in the parser process (~4 ms of parsing per MiB).
OFFLOAD_BYTES = 1 << 20
#: Strings per JSON list sent back by the parser: each list is parsed in one short call.
_CHUNK = 1 << 15
#: Most bytes copied to or from the parser process in one step of the event loop.
_PIECE = 1 << 20
_FRAME = struct.Struct("<Q")

#: v2 datatype -> numpy dtype (little-endian, as the binary extension sends them).
DTYPES = {"BOOL": "?", "UINT8": "<u1", "UINT16": "<u2", "UINT32": "<u4", "UINT64": "<u8", "INT8": "<i1",
           "INT16": "<i2", "INT32": "<i4", "INT64": "<i8", "FP16": "<f2", "FP32": "<f4", "FP64": "<f8"}
#: Longest tensor shape an input may have: a model takes rows ``[rows, features]`` or a column ``[rows]``
#: (``[rows, 1]``); numpy's own bound is 64 dimensions (see aprender.serve._request_limits).
MAX_RANK = 8
#: Deepest nesting of an input's JSON ``data``.
MAX_DEPTH = 32
#: What the server reads of a request besides its inputs.
_REQUEST_KEYS = ("id", "parameters", "outputs")


def _flat(data: Any, name: str) -> list[Any]:
    """JSON tensor data, nested or flat, as a flat list."""
    if not isinstance(data, list):
        raise HTTPError(400, f"input '{name}': 'data' must be a list")
    out: list[Any] = []
    stack = [iter(data)]
    while stack:  # iterative: a deeply nested list cannot exhaust the recursion limit
        for item in stack[-1]:
            if isinstance(item, list):
                if len(stack) > MAX_DEPTH:
                    raise HTTPError(400, f"input '{name}': 'data' is nested deeper than {MAX_DEPTH} levels")
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out


def _bytes_elements(blob: memoryview, count: int, name: str) -> list[str]:
    """The binary extension's BYTES layout: each element a 4-byte little-endian length, then its bytes."""
    out, at = [], 0
    for _ in range(count):
        if at + 4 > len(blob):
            raise HTTPError(400, f"input '{name}': binary BYTES data ends inside an element's length")
        (size,) = struct.unpack_from("<I", blob, at)
        at += 4
        if at + size > len(blob):
            raise HTTPError(400, f"input '{name}': binary BYTES element of {size} bytes overruns the data")
        out.append(bytes(blob[at:at + size]).decode("utf-8", "replace"))
        at += size
    if at != len(blob):
        raise HTTPError(400, f"input '{name}': {len(blob) - at} bytes left after {count} BYTES elements")
    return out


def _elements(shape: list[int], body_size: int, name: str) -> int:
    """The elements of an input of ``shape``: 400 past :data:`MAX_RANK` dimensions, or if its non-zero
    dimensions multiply past ``body_size``, the bytes of the request (no encoding of a tensor takes less
    than a byte per element, so such a shape lies, and numpy fails on one like ``[0, 2**63 - 1]``)."""
    if len(shape) > MAX_RANK:
        raise HTTPError(400, f"input '{name}': 'shape' has {len(shape)} dimensions; at most {MAX_RANK}")
    count = 1
    for dim in shape:
        count *= dim or 1
        if count > body_size:
            raise HTTPError(400, f"input '{name}': shape {shape} holds more elements than a {body_size}-byte "
                                 "request can carry")
    return 0 if 0 in shape else count


def _name(tensor: dict[str, Any]) -> str:
    """The input's name as error messages quote it (a non-string name cut to 40 characters)."""
    name = tensor.get("name", "input-0")
    return name if isinstance(name, str) else str(name)[:40]


def _is_dimension(dim: Any) -> bool:
    return isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0


def _kind_and_shape(tensor: dict[str, Any], name: str) -> tuple[str, list[int]]:
    """The input's v2 datatype and shape, each checked."""
    kind, shape = tensor.get("datatype"), tensor.get("shape")
    if not isinstance(kind, str) or (kind not in DTYPES and kind != "BYTES"):
        raise HTTPError(400, f"input '{name}': datatype {kind!r} is not a v2 datatype (BYTES, {', '.join(DTYPES)})")
    if not isinstance(shape, list) or not all(_is_dimension(d) for d in shape):
        raise HTTPError(400, f"input '{name}': 'shape' must be a list of non-negative integers")
    return kind, shape


def _binary_size(tensor: dict[str, Any], kind: str, shape: list[int], count: int, left: int, name: str) -> int | None:
    """The ``binary_data_size`` the input declares (``None`` for JSON data), checked against its shape
    and the ``left`` binary bytes."""
    params = tensor.get("parameters") or {}
    size = params.get("binary_data_size") if isinstance(params, dict) else None
    if size is None:
        return None
    itemsize = np.dtype(DTYPES[kind]).itemsize if kind != "BYTES" else None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0 or size > left \
            or (itemsize is not None and size != count * itemsize):
        raise HTTPError(400, f"input '{name}': binary_data_size {size!r} does not match shape {shape} of {kind} "
                             f"within the {left} binary bytes left")
    return size


def _binary_values(blob: memoryview, kind: str, count: int, name: str) -> Any:
    """The values of a binary input."""
    if kind == "BYTES":
        return _bytes_elements(blob, count, name)
    return np.frombuffer(blob, dtype=DTYPES[kind])


def _array_values(data: Any, kind: str, shape: list[int], count: int, name: str) -> np.ndarray | None:
    """The usual request, a (nested) list of numbers, converted in C; ``None`` if ``data`` is
    something else (ragged, strings, nulls among the numbers)."""
    try:
        raw = np.asarray(data)
    except ValueError:  # ragged
        return None
    if raw.dtype.kind not in "biuf":
        return None
    if (raw.dtype.kind == "b") != (kind == "BOOL"):
        raise HTTPError(400, f"input '{name}': 'data' does not hold {kind} values")
    if raw.size != count:
        raise HTTPError(400, f"input '{name}': {raw.size} values do not fill shape {shape}")
    return raw.astype(DTYPES[kind]).ravel()


def _is_bool(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _listed_values(data: Any, kind: str, shape: list[int], count: int, name: str) -> Any:
    """JSON data element by element: strings, or numbers with null (a missing value) among them."""
    values = _flat(data, name)
    if len(values) != count:
        raise HTTPError(400, f"input '{name}': {len(values)} values do not fill shape {shape}")
    if kind == "BYTES":
        if not all(v is None or isinstance(v, str) for v in values):
            raise HTTPError(400, f"input '{name}': BYTES 'data' must hold strings (or null)")
        return values
    if not all(map(_is_bool if kind == "BOOL" else _is_number, values)):
        raise HTTPError(400, f"input '{name}': 'data' does not hold {kind} values (or null)")
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


def _json_values(tensor: dict[str, Any], kind: str, shape: list[int], count: int, name: str) -> Any:
    """The values of an input sent as JSON ``data``."""
    if "data" not in tensor:
        raise HTTPError(400, f"input '{name}': no 'data' and no binary_data_size")
    data = tensor["data"]
    raw = _array_values(data, kind, shape, count, name) if kind != "BYTES" else None
    return raw if raw is not None else _listed_values(data, kind, shape, count, name)


def _tensor(tensor: Any, binary: memoryview, offset: int, body_size: int) -> tuple[str, tuple[int, ...], Any, int]:
    """One input tensor: (name, shape, values, bytes of the binary part it used).

    Values are a numpy array for a numeric tensor (float64 with NaN where JSON had null), or a list
    of strings (``None`` for null) for a ``BYTES`` tensor.
    """
    if not isinstance(tensor, dict):
        raise HTTPError(400, "every input must be a JSON object")
    name = _name(tensor)
    kind, shape = _kind_and_shape(tensor, name)
    count = _elements(shape, body_size, name)
    size = _binary_size(tensor, kind, shape, count, len(binary) - offset, name)
    if size is not None:
        return name, tuple(shape), _binary_values(binary[offset:offset + size], kind, count, name), size
    return name, tuple(shape), _json_values(tensor, kind, shape, count, name), 0


Tensor = tuple[str, tuple[int, ...], Any]


def read_tensors(request_json: Any, binary: memoryview, body_size: int) -> list[Tensor]:
    """The input tensors of a v2 request of ``body_size`` bytes: ``(name, shape, values)`` each (see
    :func:`_tensor`)."""
    if not isinstance(request_json, dict):
        raise HTTPError(400, "the inference request must be a JSON object")
    tensors = request_json.get("inputs")
    if not isinstance(tensors, list) or not tensors:
        raise HTTPError(400, "expected 'inputs', a non-empty list of tensors")
    offset, out = 0, []
    for tensor in tensors:
        name, shape, values, used = _tensor(tensor, binary, offset, body_size)
        offset += used
        out.append((name, shape, values))
    return out


# -- the parser process --------------------------------------------------------------------------


def _encode(body: bytes) -> list[bytes]:
    """What the parser answers for one JSON body: a JSON header, then each tensor's bytes."""
    try:
        request_json = parse_json(body)
        tensors = read_tensors(request_json, memoryview(b""), len(body))
    except HTTPError as exc:
        return [orjson.dumps({"status": exc.status, "error": exc.message})]
    described, blobs = [], []
    for name, shape, values in tensors:
        if isinstance(values, np.ndarray):
            blob = np.ascontiguousarray(values).tobytes()
            described.append({"name": name, "shape": shape, "dtype": values.dtype.str, "size": len(blob)})
            blobs.append(blob)
        else:
            chunks = [orjson.dumps(values[i:i + _CHUNK]) for i in range(0, len(values), _CHUNK)]
            described.append({"name": name, "shape": shape, "chunks": [len(c) for c in chunks]})
            blobs.extend(chunks)
    rest = {k: request_json[k] for k in _REQUEST_KEYS if k in request_json}
    return [orjson.dumps({"request": rest, "tensors": described}), *blobs]


def main() -> None:
    """The parser process: a body in, the parsed tensors out, until stdin closes."""
    read, write = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = read.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return
        (size,) = _FRAME.unpack(head)
        parts = _encode(read.read(size))
        write.write(_FRAME.pack(len(parts[0])) + _FRAME.pack(sum(len(p) for p in parts[1:])))
        for part in parts:
            write.write(part)
        write.flush()


async def _exchange(process: asyncio.subprocess.Process, chunks: list[bytes]) -> tuple[dict[str, Any], bytearray]:
    """Send a body to the parser process; its JSON header and tensor bytes."""
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None
    stdin.write(_FRAME.pack(sum(len(c) for c in chunks)))
    for chunk in chunks:
        view = memoryview(chunk)
        for at in range(0, len(view), _PIECE):
            stdin.write(view[at:at + _PIECE])
            await stdin.drain()
    header_size, data_size = struct.unpack("<QQ", await stdout.readexactly(16))
    header = orjson.loads(await stdout.readexactly(header_size))
    data = bytearray(data_size)
    at = 0
    while at < data_size:
        piece = await stdout.read(min(_PIECE, data_size - at))
        if not piece:
            raise asyncio.IncompleteReadError(b"", data_size - at)
        data[at:at + len(piece)] = piece
        at += len(piece)
    return header, data


class Parser:
    """A parser process, started on first use and again if it dies; one body at a time."""

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _start(self) -> asyncio.subprocess.Process:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "from aprender.serve._tensors import main; main()", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, limit=1 << 20)
        return self._process

    async def parse(self, chunks: list[bytes]) -> tuple[dict[str, Any], list[Tensor]]:
        """The request (without ``inputs``) and its input tensors, parsed in the parser process from the
        body's ``chunks``. Bytes go each way in pieces of at most a MiB, each a short copy, so that the
        event loop serves other requests between them.

        A parser that had died since its last body is replaced and the body sent again; one that fails
        on this body (killed, out of memory) fails this request with 503.
        """
        async with self._lock:
            reused = self._process is not None and self._process.returncode is None
            process = self._process if reused else await self._start()
            try:
                header, data = await _exchange(process, chunks)
            except (OSError, asyncio.IncompleteReadError):
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                self._process = None
                try:
                    if not reused:
                        raise
                    header, data = await _exchange(await self._start(), chunks)
                except (OSError, asyncio.IncompleteReadError):
                    self._process = None
                    raise HTTPError(503, "the JSON parser process failed on this request (out of memory?); "
                                         "send large batches as binary tensors") from None
        if "error" in header:
            raise HTTPError(header["status"], header["error"])
        tensors, at = [], 0
        for t in header["tensors"]:
            if "dtype" in t:
                values: Any = np.frombuffer(data, dtype=t["dtype"], count=t["size"] // np.dtype(t["dtype"]).itemsize,
                                            offset=at)
                at += t["size"]
            else:
                values = []
                for size in t["chunks"]:  # a short call each, the event loop's other work between them
                    values.extend(orjson.loads(memoryview(data)[at:at + size]))
                    at += size
                    await asyncio.sleep(0)
            tensors.append((t["name"], tuple(t["shape"]), values))
        return header["request"], tensors

    async def close(self) -> None:
        """Stop the parser process (it ends when its stdin closes)."""
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                await process.wait()

