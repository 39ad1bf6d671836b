"""The Open Inference Protocol v2 (KServe, MLServer, Triton): health, metadata, inference with
JSON and binary tensors, and the model repository extension.

Every model route also exists under ``/versions/{version}``. Inference takes one input tensor
of shape ``[rows, n_features_in_]`` (or ``[n_features_in_]``), or one tensor per column named
after it (``BYTES`` for strings; MLServer's pandas codec), and returns the requested outputs
(MLServer's names: ``predict`` by default, ``predict_proba``, ``transform``, ``decision_function``),
as JSON data or, with the binary tensor extension, as raw little-endian bytes after the JSON
header (``Inference-Header-Content-Length``). A request without Content-Type is accepted, as
tritonclient sends none.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aprender._version import __version__
from aprender.serve._http import (
    Call,
    Handler,
    HTTPError,
    Reply,
    dumps,
    json_response,
    parse_json,
    read_json,
    registry_of,
    require_api_key,
)
from aprender.serve._inputs import Inputs, check_rows
from aprender.serve._registry import LoadedModel

__all__ = ["calls", "routes"]

#: v2 datatype -> numpy dtype (little-endian, as the binary extension sends them).
_DTYPES = {"BOOL": "?", "UINT8": "<u1", "UINT16": "<u2", "UINT32": "<u4", "UINT64": "<u8", "INT8": "<i1",
           "INT16": "<i2", "INT32": "<i4", "INT64": "<i8", "FP16": "<f2", "FP32": "<f4", "FP64": "<f8"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}
_HEADER = b"inference-header-content-length"


def datatype(dtype: np.dtype) -> str:
    """The v2 datatype of a numpy dtype; strings and objects are ``BYTES``."""
    return _NAMES.get(np.dtype(dtype).newbyteorder("<"), "BYTES")


async def server_metadata(request: Request) -> Response:
    return json_response({"name": "aprender", "version": __version__,
                          "extensions": ["binary_tensor_data", "model_repository"]})


async def live(request: Request) -> Response:
    return json_response({"live": True})


async def ready(request: Request) -> Response:
    is_ready = registry_of(request).ready
    return json_response({"ready": is_ready}, 200 if is_ready else 503)


async def _model(request: Request) -> LoadedModel:
    registry = registry_of(request)
    version = registry.resolve(request.path_params["model"], request.path_params.get("version"))
    return await registry.get(version)


def _output_meta(model: LoadedModel) -> list[dict[str, Any]]:
    rows = []
    for name, (dtype, shape) in model.signature.items():
        rows.append({"name": name, "datatype": datatype(dtype), "shape": [-1, *shape]})
    return rows


async def model_metadata(request: Request) -> Response:
    model = await _model(request)
    version = model.version
    versions = registry_of(request).models[version.name]
    return json_response({
        "name": version.name, "versions": [str(v) for v in versions], "platform": "aprender",
        "inputs": model.inputs.metadata(),
        "outputs": _output_meta(model),
        "parameters": {**model.describe()}})


async def model_ready(request: Request) -> Response:
    registry = registry_of(request)
    version = registry.resolve(request.path_params["model"], request.path_params.get("version"))
    try:
        await registry.get(version)
    except Exception as exc:
        return json_response({"name": version.name, "ready": False, "error": str(exc)}, 503)
    return json_response({"name": version.name, "ready": True})


def _split_body(header: str | None, body: bytes) -> tuple[Any, memoryview]:
    if header is None:
        return parse_json(body), memoryview(b"")
    if not header.isdigit() or int(header) > len(body):
        raise HTTPError(400, f"Inference-Header-Content-Length {header!r} is not a length within the "
                             f"{len(body)}-byte body")
    size = int(header)
    view = memoryview(body)
    return parse_json(view[:size], "the JSON header"), view[size:]


def _flat(data: Any, name: str) -> list[Any]:
    """JSON tensor data, nested or flat, as a flat list."""
    if not isinstance(data, list):
        raise HTTPError(400, f"input '{name}': 'data' must be a list")
    out: list[Any] = []
    stack = [iter(data)]
    while stack:  # iterative: a deeply nested list cannot exhaust the recursion limit
        for item in stack[-1]:
            if isinstance(item, list):
                if len(stack) > 32:
                    raise HTTPError(400, f"input '{name}': 'data' is nested deeper than 32 levels")
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


def _tensor(tensor: Any, binary: memoryview, offset: int) -> tuple[str, tuple[int, ...], Any, int]:
    """One input tensor: (name, shape, values, bytes of the binary part it used).

    Values are a numpy array for a numeric tensor (float64 with NaN where JSON had null), or a list
    of strings (``None`` for null) for a ``BYTES`` tensor.
    """
    if not isinstance(tensor, dict):
        raise HTTPError(400, "every input must be a JSON object")
    name = tensor.get("name", "input-0")
    name = name if isinstance(name, str) else str(name)[:40]
    kind, shape = tensor.get("datatype"), tensor.get("shape")
    if kind not in _DTYPES and kind != "BYTES":
        raise HTTPError(400, f"input '{name}': datatype {kind!r} is not a v2 datatype (BYTES, {', '.join(_DTYPES)})")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise HTTPError(400, f"input '{name}': 'shape' must be a list of non-negative integers")
    count = math.prod(shape)
    params = tensor.get("parameters") or {}
    size = params.get("binary_data_size") if isinstance(params, dict) else None
    if size is not None:
        left = len(binary) - offset
        itemsize = np.dtype(_DTYPES[kind]).itemsize if kind != "BYTES" else None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0 or size > left \
                or (itemsize is not None and size != count * itemsize):
            raise HTTPError(400, f"input '{name}': binary_data_size {size!r} does not match shape {shape} of {kind} "
                                 f"within the {left} binary bytes left")
        blob = binary[offset:offset + size]
        if kind == "BYTES":
            return name, tuple(shape), _bytes_elements(blob, count, name), size
        return name, tuple(shape), np.frombuffer(blob, dtype=_DTYPES[kind]), size
    if "data" not in tensor:
        raise HTTPError(400, f"input '{name}': no 'data' and no binary_data_size")
    data = tensor["data"]
    if kind != "BYTES":
        try:  # the usual request: a (nested) list of numbers, converted in C
            raw = np.asarray(data)
        except ValueError:  # ragged
            raw = None
        if raw is not None and raw.dtype.kind in "biuf":
            if (raw.dtype.kind == "b") != (kind == "BOOL"):
                raise HTTPError(400, f"input '{name}': 'data' does not hold {kind} values")
            if raw.size != count:
                raise HTTPError(400, f"input '{name}': {raw.size} values do not fill shape {shape}")
            return name, tuple(shape), raw.astype(_DTYPES[kind]).ravel(), 0
    values = _flat(data, name)  # strings, or numbers with null (a missing value) among them
    if len(values) != count:
        raise HTTPError(400, f"input '{name}': {len(values)} values do not fill shape {shape}")
    if kind == "BYTES":
        if not all(v is None or isinstance(v, str) for v in values):
            raise HTTPError(400, f"input '{name}': BYTES 'data' must hold strings (or null)")
        return name, tuple(shape), values, 0
    boolean = kind == "BOOL"
    if not all(v is None or (isinstance(v, bool) if boolean else isinstance(v, (int, float)) and not
                             isinstance(v, bool)) for v in values):
        raise HTTPError(400, f"input '{name}': 'data' does not hold {kind} values (or null)")
    return name, tuple(shape), np.array([np.nan if v is None else v for v in values], dtype=np.float64), 0


def _model_input(request_json: Any, binary: memoryview, inputs: Inputs) -> Any:
    """The model's input from a v2 request: one ``[rows, features]`` tensor for a matrix, or one
    tensor per column (named after it; MLServer's pandas codec, ``"content_type": "pd"``)."""
    if not isinstance(request_json, dict):
        raise HTTPError(400, "the inference request must be a JSON object")
    tensors = request_json.get("inputs")
    if not isinstance(tensors, list) or not tensors:
        raise HTTPError(400, "expected 'inputs', a non-empty list of tensors")
    offset, columns = 0, {}
    for tensor in tensors:
        name, shape, values, used = _tensor(tensor, binary, offset)
        offset += used
        whole = inputs.kind == "matrix" and len(tensors) == 1 and name not in inputs.names
        if whole:
            if isinstance(values, list):
                raise HTTPError(400, f"input '{name}': this model takes numbers ({', '.join(_DTYPES)}), not BYTES")
            return check_rows(values.reshape(shape), inputs.n_features, f"input '{name}'")
        if len(shape) == 2 and shape[1] == 1:
            shape = shape[:1]
        if len(shape) != 1:
            raise HTTPError(400, f"input '{name}': a column must have shape [rows] or [rows, 1], got {list(shape)}")
        if inputs.kind == "text" and len(tensors) == 1:
            name = "text"  # the one input of a text model, whatever the client named it
        if name in columns:
            raise HTTPError(400, f"input '{name}' is given twice")
        columns[name] = values
    return inputs.from_columns(columns, "inputs")


def _requested(request_json: dict[str, Any], model: LoadedModel) -> list[tuple[str, bool]]:
    params = request_json.get("parameters") or {}
    binary_default = bool(params.get("binary_data_output", False)) if isinstance(params, dict) else False
    outputs = request_json.get("outputs")
    if outputs is None:
        default = "predict" if "predict" in model.outputs else model.outputs[0]
        return [(default, binary_default)]
    if not isinstance(outputs, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str)
                                                for o in outputs):
        raise HTTPError(400, "'outputs' must be a list of {\"name\": ...}")
    result = []
    for output in outputs:
        p = output.get("parameters") or {}
        result.append((output["name"], bool(p.get("binary_data", binary_default))))
    names = [n for n, _ in result]
    if len(set(names)) != len(names):
        raise HTTPError(400, f"an output is requested twice: {names}")
    return result


def _bytes_tensor(values: np.ndarray) -> bytes:
    """The binary extension's BYTES layout: each element as a 4-byte little-endian length and UTF-8."""
    parts = []
    for value in values.ravel():
        data = str(value).encode()
        parts.append(struct.pack("<I", len(data)) + data)
    return b"".join(parts)


async def infer(call: Call) -> Reply:
    registry = call.registry
    model = await registry.get(registry.resolve(call.params["model"], call.params.get("version")))
    body = await call.read()
    request_json, binary = _split_body(call.header(_HEADER), body)
    X = _model_input(request_json, binary, model.inputs)
    requested = _requested(request_json, model)
    _, results = await registry.infer(model.version, X, tuple(n for n, _ in requested), model)
    outputs, blobs = [], []
    for name, as_binary in requested:
        value = results[name]
        kind = datatype(value.dtype)
        entry: dict[str, Any] = {"name": name, "datatype": kind, "shape": list(value.shape)}
        if as_binary:
            blob = (_bytes_tensor(value) if kind == "BYTES"
                    else np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes())
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = value.ravel() if kind != "BYTES" else [str(v) for v in value.ravel()]
        outputs.append(entry)
    version = model.version
    response: dict[str, Any] = {"model_name": version.name, "model_version": str(version.version),
                                "outputs": outputs}
    if isinstance(request_json.get("id"), str):
        response["id"] = request_json["id"]
    header = dumps(response)
    if not blobs:
        return Reply(header)
    return Reply(b"".join([header, *blobs]), content_type="application/octet-stream",
                 headers={"Inference-Header-Content-Length": str(len(header))})


async def repository_index(request: Request) -> Response:
    require_api_key(request)
    await read_json(request, allow_empty=True)
    return json_response(registry_of(request).index())


async def repository_load(request: Request) -> Response:
    require_api_key(request)
    await read_json(request, allow_empty=True)
    await registry_of(request).load_model(request.path_params["model"])
    return json_response({})


async def repository_unload(request: Request) -> Response:
    require_api_key(request)
    await read_json(request, allow_empty=True)
    registry_of(request).unload_model(request.path_params["model"])
    return json_response({})


def _both(path: str, endpoint: Any, methods: list[str]) -> list[Route]:
    """The route for the latest version and its ``/versions/{version}`` twin."""
    return [Route(f"/v2/models/{{model}}{path}", endpoint, methods=methods),
            Route(f"/v2/models/{{model}}/versions/{{version}}{path}", endpoint, methods=methods)]


routes = [
    Route("/v2", server_metadata, methods=["GET"]),
    Route("/v2/health/live", live, methods=["GET"]),
    Route("/v2/health/ready", ready, methods=["GET"]),
    *_both("", model_metadata, ["GET"]),
    *_both("/ready", model_ready, ["GET"]),
    Route("/v2/repository/index", repository_index, methods=["POST"]),
    Route("/v2/repository/models/{model}/load", repository_load, methods=["POST"]),
    Route("/v2/repository/models/{model}/unload", repository_unload, methods=["POST"]),
]

#: The inference routes, answered from ASGI messages (see aprender.serve._http): path -> handler.
calls: dict[str, Handler] = {"/v2/models/{model}/infer": infer, "/v2/models/{model}/versions/{version}/infer": infer}
