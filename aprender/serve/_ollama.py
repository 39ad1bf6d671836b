"""An Ollama-compatible API, so that the ``ollama`` client and tools built on it reach our models.

Real Ollama cannot run a classical model (see docs/serve.md); here aprender answers Ollama's
routes itself. A model is ``name`` or ``name:version`` (``name:latest`` is the highest version).
``/api/generate`` and ``/api/chat`` read the prompt (the last user message) as a JSON array of
features, one row or a list of rows, and answer the prediction as JSON text; ``options.output``
picks another output (``predict_proba`` ...). ``/api/embed`` reads each input string as a JSON
row and answers ``transform()``. Durations are nanoseconds, as Ollama's.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from aprender import __version__
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
)
from aprender.serve._inputs import rows_of
from aprender.serve._models import LoadedModel
from aprender.serve._repository import OUTPUTS, Version

__all__ = ["calls", "routes"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _details(version: Version) -> dict[str, Any]:
    return {"parent_model": "", "format": version.format, "family": version.estimator,
            "families": [version.estimator], "parameter_size": "", "quantization_level": ""}


def _entry(version: Version, tag: str) -> dict[str, Any]:
    name = f"{version.name}:{tag}"
    modified = datetime.fromtimestamp(version.mtime, timezone.utc).isoformat().replace("+00:00", "Z")
    return {"name": name, "model": name, "modified_at": modified, "size": version.size,
            "digest": version.sha256, "details": _details(version)}


async def running(request: Request) -> Response:
    return PlainTextResponse("Ollama is running")


async def version(request: Request) -> Response:
    return json_response({"version": __version__})


async def tags(request: Request) -> Response:
    models = []
    for _, versions in sorted(registry_of(request).models.items()):
        latest = max(versions)
        models.append(_entry(versions[latest], "latest"))
        models.extend(_entry(v, str(n)) for n, v in versions.items())
    return json_response({"models": models})


async def ps(request: Request) -> Response:
    rows = []
    for model in registry_of(request).loaded():
        entry = _entry(model.version, str(model.version.version))
        entry.pop("modified_at")
        rows.append({**entry, "size_vram": 0, "expires_at": None})
    return json_response({"models": rows})


def _model_name(body: dict[str, Any]) -> str:
    name = body.get("model", body.get("name"))
    if not isinstance(name, str) or not name:
        raise HTTPError(400, "missing 'model'")
    return name


async def show(request: Request) -> Response:
    registry = registry_of(request)
    version = registry.resolve_id(_model_name(await read_json(request)))
    model = await registry.get(version)
    info = {"general.architecture": "aprender", "general.file_type": version.format,
            **{f"aprender.{k}": v for k, v in model.describe().items()}}
    return json_response({
        "modelfile": f"# served by aprender {__version__}\nFROM {version.path}\n", "parameters": "",
        "template": "{{ .Prompt }}", "details": _details(version), "model_info": info,
        "capabilities": ["completion", *(["embedding"] if "transform" in model.outputs else [])],
        "modified_at": _entry(version, "latest")["modified_at"]})


def _output(body: dict[str, Any], model: LoadedModel) -> str:
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise HTTPError(400, "'options' must be an object")
    name = options.get("output", "predict" if "predict" in model.outputs else model.outputs[0])
    if name not in OUTPUTS:
        raise HTTPError(400, f"'options.output' must be one of {', '.join(OUTPUTS)}, got {name!r}")
    return name


def _keep_alive_zero(body: dict[str, Any]) -> bool:
    value = body.get("keep_alive")
    return value in (0, "0", "0s", "0m")


class _Answer:
    """One completion: the text and Ollama's final-chunk fields."""

    def __init__(self, text: str, rows: int, load_ns: int, eval_ns: int, start: int, reason: str = "stop") -> None:
        self.text = text
        self.final = {"done": True, "done_reason": reason, "total_duration": time.perf_counter_ns() - start,
                      "load_duration": load_ns, "prompt_eval_count": rows, "prompt_eval_duration": 0,
                      "eval_count": rows, "eval_duration": eval_ns}


async def _complete(call: Call, body: dict[str, Any], prompt: Any, start: int) -> _Answer:
    registry = call.registry
    version = registry.resolve_id(_model_name(body))
    if _keep_alive_zero(body):
        # an unload, as the repository's unload route is: behind --api-key, or any client could have
        # every other client's next request pay a whole load
        call.require_api_key()
    if prompt is None or (isinstance(prompt, str) and not prompt.strip()):
        if _keep_alive_zero(body):  # Ollama's way to unload a model
            registry.evict(version)
            return _Answer("", 0, 0, 0, start, "unload")
        model = await registry.get(version)  # and to load one
        return _Answer("", 0, int(model.load_seconds * 1e9), 0, start, "load")
    if not isinstance(prompt, str):
        raise HTTPError(400, "the prompt must be a string: a JSON array of features, a JSON object of columns, "
                             "or the text of a text model")
    loaded_before = registry.is_loaded(version)
    model = await registry.get(version)
    load_ns = 0 if loaded_before else int(model.load_seconds * 1e9)
    rows = prompt if model.inputs.kind == "text" else parse_json(prompt.encode(), "the prompt")
    X = model.inputs.rows(rows, "the prompt")
    output = _output(body, model)
    eval_start = time.perf_counter_ns()
    _, out = await registry.infer(version, X, (output,), model)
    value = out[output]
    text = dumps(value[0] if model.inputs.one_row(rows) else value).decode()
    answer = _Answer(text, rows_of(X), load_ns, time.perf_counter_ns() - eval_start, start)
    if _keep_alive_zero(body):
        registry.evict(version)
    return answer


def _respond(body: dict[str, Any], answer: _Answer, chunk: Any) -> Reply:
    """Ollama's NDJSON stream (default) or one JSON object with ``"stream": false``."""
    head = {"model": body["model"] if "model" in body else body.get("name"), "created_at": _now()}
    if body.get("stream", True) is False:
        return Reply(dumps({**head, **chunk(answer.text), **answer.final}))
    lines = [dumps({**head, **chunk(answer.text), "done": False}) + b"\n"] if answer.text else []
    lines.append(dumps({**head, **chunk(""), **answer.final}) + b"\n")
    return Reply(tuple(lines), content_type="application/x-ndjson")


async def generate(call: Call) -> Reply:
    start = time.perf_counter_ns()
    body = await call.read_json()
    answer = await _complete(call, body, body.get("prompt"), start)
    return _respond(body, answer, lambda text: {"response": text})


async def chat(call: Call) -> Reply:
    start = time.perf_counter_ns()
    body = await call.read_json()
    messages = body.get("messages") or []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise HTTPError(400, "'messages' must be a list of {\"role\", \"content\"}")
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    answer = await _complete(call, body, users[-1] if users else None, start)
    return _respond(body, answer, lambda text: {"message": {"role": "assistant", "content": text}})


async def embed(request: Request) -> Response:
    start = time.perf_counter_ns()
    body = await read_json(request)
    registry = registry_of(request)
    version = registry.resolve_id(_model_name(body))
    inputs = body.get("input")
    inputs = [inputs] if isinstance(inputs, str) else inputs
    if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        raise HTTPError(400, "'input' must be a string or a list of strings, each a JSON array of features")
    loaded_before = registry.is_loaded(version)
    model = await registry.get(version)
    if "transform" not in model.outputs:
        raise HTTPError(400, f"model '{version.tag}' has no transform(), so no embeddings; "
                             f"outputs: {', '.join(model.outputs)}")
    rows = inputs if model.inputs.kind == "text" else [parse_json(i.encode(), "an input") for i in inputs]
    X = model.inputs.rows(rows, "the inputs")
    _, out = await registry.infer(version, X, ("transform",), model)
    return json_response({"model": body["model"], "embeddings": out["transform"],
                          "total_duration": time.perf_counter_ns() - start,
                          "load_duration": 0 if loaded_before else int(model.load_seconds * 1e9),
                          "prompt_eval_count": rows_of(X)})


async def not_implemented(request: Request) -> Response:
    action = request.url.path.rsplit("/", 1)[-1]
    raise HTTPError(501, f"'{action}' is not supported by aprender serve: models come from its repository "
                         "(add a version folder, then POST /v2/repository/models/NAME/load)")


routes = [
    Route("/", running, methods=["GET", "HEAD"]),
    Route("/api/version", version, methods=["GET"]),
    Route("/api/tags", tags, methods=["GET"]),
    Route("/api/ps", ps, methods=["GET"]),
    Route("/api/show", show, methods=["POST"]),
    Route("/api/embed", embed, methods=["POST"]),
    *(Route(f"/api/{action}", not_implemented, methods=["POST", "DELETE"])
      for action in ("pull", "push", "create", "copy", "delete")),
]

#: The inference routes, answered from ASGI messages (see aprender.serve._http): path -> handler.
calls: dict[str, CallHandler] = {"/api/generate": generate, "/api/chat": chat}
