"""The Open Inference Protocol v2 (KServe, MLServer, Triton): health, metadata, inference with
JSON and binary tensors, and the model repository extension.

Every model route also exists under ``/versions/{version}``. Inference takes one input tensor
of shape ``[rows, n_features_in_]`` (or ``[n_features_in_]``) and returns the requested outputs
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

from aprender import __version__
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
from aprender.serve._registry import LoadedModel, check_rows

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
        "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [-1, model.n_features]}],
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


def _input_tensor(request_json: Any, binary: memoryview, n_features: int) -> np.ndarray:
    if not isinstance(request_json, dict):
        raise HTTPError(400, "the inference request must be a JSON object")
    inputs = request_json.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != 1 or not isinstance(inputs[0], dict):
        raise HTTPError(400, f"expected 'inputs' with exactly one tensor, got "
                             f"{len(inputs) if isinstance(inputs, list) else type(inputs).__name__}")
    tensor = inputs[0]
    name = tensor.get("name", "input-0")
    kind, shape = tensor.get("datatype"), tensor.get("shape")
    if kind not in _DTYPES:
        raise HTTPError(400, f"input '{name}': datatype {kind!r} is not a numeric v2 datatype "
                             f"({', '.join(_DTYPES)})")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise HTTPError(400, f"input '{name}': 'shape' must be a list of non-negative integers")
    dtype = np.dtype(_DTYPES[kind])
    count = math.prod(shape)
    params = tensor.get("parameters") or {}
    size = params.get("binary_data_size") if isinstance(params, dict) else None
    if size is not None:
        if not isinstance(size, int) or size != count * dtype.itemsize or size > len(binary):
            raise HTTPError(400, f"input '{name}': binary_data_size {size!r} does not match shape {shape} of "
                                 f"{kind} ({count * dtype.itemsize} bytes) within the {len(binary)} binary bytes")
        array = np.frombuffer(binary[:size], dtype=dtype)
    else:
        if "data" not in tensor:
            raise HTTPError(400, f"input '{name}': no 'data' and no binary_data_size")
        try:
            raw = np.asarray(tensor["data"])
        except ValueError as exc:
            raise HTTPError(400, f"input '{name}': 'data' is ragged: {exc}") from None
        if raw.dtype.kind not in "biuf" or (raw.dtype.kind == "b") != (kind == "BOOL"):
            raise HTTPError(400, f"input '{name}': 'data' does not hold {kind} values")
        array = raw.astype(dtype).ravel()
        if array.size != count:
            raise HTTPError(400, f"input '{name}': {array.size} values do not fill shape {shape}")
    return check_rows(array.reshape(shape), n_features, f"input '{name}'")


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
    X = _input_tensor(request_json, binary, model.n_features)
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
