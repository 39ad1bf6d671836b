"""realizar's routes: ``/health``, ``/ready``, ``/predict``, ``/predict/batch``, ``/models``.

Request and response shapes follow realizar (the Rust server of the aprender ecosystem);
errors are ``{"error", "code"}`` with its codes (E_NO_MODEL, E_INVALID_INPUT, E_EMPTY_BATCH).
``/ready`` answers 503 until every model is warmed up, so that Kubernetes probes work.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aprender._version import __version__
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
from aprender.serve._models import Registry

__all__ = ["calls", "routes"]


async def health(request: Request) -> Response:
    return json_response({"status": "healthy", "version": __version__, "compute_mode": "cpu"})


async def ready(request: Request) -> Response:
    if registry_of(request).ready:
        return json_response({"status": "ready"})
    return json_response({"status": "not_ready", "error": "models are loading", "code": "E_NO_MODEL"}, 503)


def _options(body: dict[str, Any]) -> tuple[bool, int | None]:
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise HTTPError(400, "'options' must be an object")
    probabilities = options.get("return_probabilities", False)
    top_k = options.get("top_k")
    if not isinstance(probabilities, bool):
        raise HTTPError(400, "'options.return_probabilities' must be true or false")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise HTTPError(400, f"'options.top_k' must be a positive integer, got {top_k!r}")
    return probabilities or top_k is not None, top_k


def _top_k(proba: np.ndarray, classes: np.ndarray, k: int) -> list[list[dict[str, Any]]]:
    order = np.argsort(-proba, axis=1, kind="stable")[:, :k]
    return [[{"class": classes[j], "probability": row[j]} for j in idx] for row, idx in zip(proba, order, strict=True)]


async def _run(registry: Registry, body: dict[str, Any], rows: Any) -> tuple[dict[str, Any], int, str, bool]:
    """Predict ``rows``; return the per-row fields, the row count, the version and whether one row was sent."""
    version = registry.resolve_id(body.get("model_id"))
    probabilities, top_k = _options(body)
    model = await registry.get(version)
    X = model.inputs.rows(rows)
    outputs = ("predict", "predict_proba") if probabilities else ("predict",)
    _, out = await registry.infer(version, X, outputs, model)
    fields: dict[str, Any] = {"prediction": out["predict"]}
    if probabilities:
        fields["probabilities"] = out["predict_proba"]
        if top_k is not None:
            fields["top_k"] = _top_k(out["predict_proba"], model.estimator.classes_, top_k)
    return fields, rows_of(X), str(version.version), model.inputs.one_row(rows)


async def predict(call: Call) -> Reply:
    start = time.perf_counter()
    body = await call.read_json()
    if "features" not in body:
        raise HTTPError(400, "missing 'features': a list of numbers, an object of columns, or a list of rows")
    fields, _, version, one_row = await _run(call.registry, body, body["features"])
    if one_row:  # one row in (numbers, an object of columns, a text), one prediction out
        fields = {k: v[0] for k, v in fields.items()}
    return Reply(dumps({**fields, "latency_ms": (time.perf_counter() - start) * 1000, "model_version": version}))


async def predict_batch(request: Request) -> Response:
    start = time.perf_counter()
    body = await read_json(request)
    instances = body.get("instances")
    if not isinstance(instances, list):
        raise HTTPError(400, "missing 'instances': a list of {\"features\": [...]}")
    if not instances:
        raise HTTPError(400, "'instances' is empty", "E_EMPTY_BATCH")
    if not all(isinstance(i, dict) and "features" in i for i in instances):
        raise HTTPError(400, "every instance must be an object with 'features'")
    fields, n, version, _ = await _run(registry_of(request), body, [i["features"] for i in instances])
    predictions = [{k: v[i] for k, v in fields.items()} for i in range(n)]
    return json_response({"predictions": predictions, "batch_size": n,
                          "total_latency_ms": (time.perf_counter() - start) * 1000, "model_version": version})


async def models(request: Request) -> Response:
    registry = registry_of(request)
    loaded = {(m.version.name, m.version.version): m for m in registry.loaded()}
    rows = []
    for name, versions in sorted(registry.models.items()):
        latest = max(versions)
        for number, version in versions.items():
            model = loaded.get((name, number))
            info = model.describe() if model is not None else version.describe()
            rows.append({"id": version.tag, **info, "latest": number == latest, "loaded": model is not None})
    return json_response({"models": rows})


routes = [
    Route("/health", health, methods=["GET"]),
    Route("/ready", ready, methods=["GET"]),
    Route("/predict/batch", predict_batch, methods=["POST"]),
    Route("/models", models, methods=["GET"]),
]

#: The inference routes, answered from ASGI messages (see aprender.serve._http): path -> handler.
calls: dict[str, CallHandler] = {"/predict": predict}
