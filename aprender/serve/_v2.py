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

import asyncio
import math
import struct
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aprender._version import __version__
from aprender.serve._errors import parse_json
from aprender.serve._http import (
    Call,
    CallHandler,
    HTTPError,
    Reply,
    dumps,
    json_response,
    read_json,
    registry_of,
    require_api_key,
)
from aprender.serve._inputs import Inputs, check_rows
from aprender.serve._models import LoadedModel
from aprender.serve._request_limits import length
from aprender.serve._tensors import DTYPES, OFFLOAD_BYTES, Tensor, read_tensors

__all__ = ["calls", "routes"]

_NAMES = {np.dtype(v): k for k, v in DTYPES.items()}
_HEADER = b"inference-header-content-length"
#: Values of a request above which its conversion into the model's input runs in a thread.
_THREAD_VALUES = 1 << 16
#: Values of an output serialised per call (~1 ms of orjson).
_CHUNK = 1 << 16


def datatype(dtype: np.dtype) -> str:
    """The v2 datatype of a numpy dtype; strings and objects are ``BYTES``."""
    return _NAMES.get(np.dtype(dtype).newbyteorder("<"), "BYTES")


async def server_metadata(request: Request) -> Response:
    return json_response({"name": "aprender", "version": __version__,
                          "extensions": ["binary_tensor_data", "model_repository"]})


async def live(request: Request) -> Response:
    return json_response({"live": True})


async def ready(request: Request) -> Response:
    registry = registry_of(request)
    # ready once every model is loaded or failed: a model that cannot warm up does not hold back the
    # others; each model's state says which is which
    return json_response({"ready": registry.ready, "models": registry.readiness()}, 200 if registry.ready else 503)


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
    size = length(header, "Inference-Header-Content-Length")
    if size > len(body):
        raise HTTPError(400, f"Inference-Header-Content-Length {header!r} is not a length within the "
                             f"{len(body)}-byte body")
    view = memoryview(body)
    return parse_json(view[:size], "the JSON header"), view[size:]


def _model_input(tensors: list[Tensor], inputs: Inputs) -> Any:
    """The model's input from a v2 request's tensors: one ``[rows, features]`` tensor for a matrix, or
    one tensor per column (named after it; MLServer's pandas codec, ``"content_type": "pd"``)."""
    columns = {}
    for name, shape, values in tensors:
        whole = inputs.kind == "matrix" and len(tensors) == 1 and name not in inputs.names
        if whole:
            if isinstance(values, list):
                raise HTTPError(400, f"input '{name}': this model takes numbers ({', '.join(DTYPES)}), not BYTES")
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


async def _read_request(call: Call, inputs: Inputs) -> tuple[dict[str, Any], Any]:
    """The request (its JSON object) and the model's input, without holding the event loop long: a
    large JSON body is parsed in the parser process, and a large request's Python-level conversions
    (BYTES elements, DataFrame columns) run in a thread, which gives the event loop the GIL back
    every switch interval."""
    chunks = await call.read_chunks()
    header = call.header(_HEADER)
    if header is None and sum(len(c) for c in chunks) > OFFLOAD_BYTES:
        request_json, tensors = await call.registry.parser.parse(chunks)
    else:
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        request_json, binary = _split_body(header, body)
        if len(body) > OFFLOAD_BYTES:
            tensors = await asyncio.to_thread(read_tensors, request_json, binary, len(body))
        else:
            tensors = read_tensors(request_json, binary, len(body))
    if sum(math.prod(shape) for _, shape, _ in tensors) > _THREAD_VALUES:
        return request_json, await asyncio.to_thread(_model_input, tensors, inputs)
    return request_json, _model_input(tensors, inputs)


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
        p = output.get("parameters")
        if p is not None and not isinstance(p, dict):
            raise HTTPError(400, f"output '{output['name']}': 'parameters' must be an object")
        result.append((output["name"], bool((p or {}).get("binary_data", binary_default))))
    names = [n for n, _ in result]
    if len(set(names)) != len(names):
        raise HTTPError(400, f"an output is requested twice: {names}")
    return result


async def _json_array(values: np.ndarray, strings: bool) -> list[Any]:
    """The JSON text of a large output as parts, each written by one short call (the same text as
    one call would write: element by element), with the event loop's other work between them."""
    parts: list[Any] = [b"["]
    for start in range(0, values.size, _CHUNK):
        chunk = values[start:start + _CHUNK]
        text = memoryview(dumps([str(v) for v in chunk] if strings else chunk))
        parts += [b","] * (start > 0) + [text[1:-1]]
        await asyncio.sleep(0)
    return [*parts, b"]"]


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
    registry.refuse_if_full(model)
    request_json, X = await _read_request(call, model.inputs)
    requested = _requested(request_json, model)
    _, results = await registry.infer(model.version, X, tuple(n for n, _ in requested), model)
    outputs, blobs, large = [], [], {}
    for name, as_binary in requested:
        value = results[name]
        kind = datatype(value.dtype)
        entry: dict[str, Any] = {"name": name, "datatype": kind, "shape": list(value.shape)}
        if as_binary:
            blob = (_bytes_tensor(value) if kind == "BYTES"
                    else np.ascontiguousarray(value, value.dtype.newbyteorder("<")).tobytes())
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        elif value.size > _CHUNK:
            large[len(outputs)] = await _json_array(value.ravel(), kind == "BYTES")
        else:
            entry["data"] = value.ravel() if kind != "BYTES" else [str(v) for v in value.ravel()]
        outputs.append(entry)
    version = model.version
    response: dict[str, Any] = {"model_name": version.name, "model_version": str(version.version)}
    if isinstance(request_json.get("id"), str):
        response["id"] = request_json["id"]
    if not large:
        header = dumps({**response, "outputs": outputs})
        if not blobs:
            return Reply(header)
        return Reply(b"".join([header, *blobs]), content_type="application/octet-stream",
                     headers={"Inference-Header-Content-Length": str(len(header))})
    # a large JSON output: the answer goes out in the parts it was written in, never joined
    parts: list[Any] = [dumps(response)[:-1] + b',"outputs":[']
    for i, entry in enumerate(outputs):
        parts += [b","] * (i > 0)
        parts += [dumps(entry)] if i not in large else [dumps(entry)[:-1] + b',"data":', *large[i], b"}"]
    parts.append(b"]}")
    header_size = sum(len(p) for p in parts)
    headers = {"Content-Length": str(header_size + sum(len(b) for b in blobs))}
    if not blobs:
        return Reply(tuple(parts), headers=headers)
    return Reply((*parts, *blobs), content_type="application/octet-stream",
                 headers={**headers, "Inference-Header-Content-Length": str(header_size)})


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
calls: dict[str, CallHandler] = {"/v2/models/{model}/infer": infer,
                                 "/v2/models/{model}/versions/{version}/infer": infer}
