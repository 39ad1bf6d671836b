"""Metrics, adaptive batching under concurrency, overload (503) and the ``serve`` command itself."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from serve_helpers import X, same, serving, start_serve

from aprender.serve import ServeConfig


def _samples(url):
    text = httpx.get(f"{url}/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_prometheus_metrics_have_mlserver_names(serve_repository):
    root, _ = serve_repository
    with serving(ServeConfig((str(root / "iris"),))) as url:
        for _ in range(3):
            assert httpx.post(f"{url}/predict", json={"features": X[0].tolist()}).status_code == 200
        assert httpx.post(f"{url}/predict", json={"features": [1.0]}).status_code == 400
        assert httpx.post(f"{url}/v2/models/iris/versions/1/infer", json={"inputs": [
            {"name": "x", "shape": [1, 4], "datatype": "FP64", "data": X[0].tolist()}]}).status_code == 200
        samples = _samples(url)
        success = ("model_infer_request_success_total", (("model_name", "iris"), ("model_version", "2")))
        assert samples[success] == 3
        assert samples[("model_infer_request_success_total", (("model_name", "iris"), ("model_version", "1")))] == 1
        ok = (("method", "POST"), ("path", "/predict"), ("status_code", "200"))
        bad = (("method", "POST"), ("path", "/predict"), ("status_code", "400"))
        assert samples[("rest_server_requests_total", ok)] == 3
        assert samples[("rest_server_requests_total", bad)] == 1
        assert samples[("rest_server_requests_duration_seconds_count", ok)] == 3
        infer = (("method", "POST"), ("path", "/v2/models/{model}/versions/{version}/infer"), ("status_code", "200"))
        assert samples[("rest_server_requests_total", infer)] == 1  # route templates, not raw paths
        assert samples[("batch_request_rows_sum", (("model_name", "iris"), ("model_version", "2")))] == 3
        assert samples[("model_cache_misses_total", ())] == 2  # warm-up of v2, first request of v1
        assert samples[("model_cache_loaded_models", ())] == 2
        summary = httpx.get(f"{url}/v1/metrics").json()
        assert summary["total_requests"] >= 5 and summary["total_tokens"] == 4
        assert 0 < summary["latency_p50_ms"] <= summary["latency_p95_ms"] <= summary["latency_p99_ms"]
        assert summary["model_name"] == "iris:2,iris:1"


def test_lru_cache_evicts(serve_repository):
    root, _ = serve_repository
    with serving(ServeConfig((str(root),), max_loaded_models=2)) as url:
        for model in ("iris", "forest", "line", "iris"):
            width = 2 if model == "line" else 4
            assert httpx.post(f"{url}/predict", json={"model_id": model, "features": [0.5] * width}).status_code == 200
        loaded = [m["id"] for m in httpx.get(f"{url}/models").json()["models"] if m["loaded"]]
        assert sorted(loaded) == ["iris:2", "line:1"]
        samples = _samples(url)
        assert samples[("model_cache_evictions_total", ())] >= 2


def test_concurrent_requests_are_batched_and_split_exactly(serve_repository):
    root, fitted = serve_repository
    forest = fitted["forest:1"]

    async def burst(url):
        async with httpx.AsyncClient(base_url=url) as client:
            return await asyncio.gather(*(client.post("/predict", json={"model_id": "forest", "features": row,
                                                                         "options": {"return_probabilities": True}})
                                          for row in X[:48].tolist()))

    with serving(ServeConfig((str(root / "forest"),))) as url:
        replies = asyncio.run(burst(url))
        assert [r.json()["prediction"] for r in replies] == forest.predict(X[:48]).tolist()
        assert same([r.json()["probabilities"] for r in replies], forest.predict_proba(X[:48]))
        samples = _samples(url)
        labels = (("model_name", "forest"), ("model_version", "1"))
        assert samples[("batch_request_rows_sum", labels)] == 48  # every row ran exactly once
        assert samples[("model_infer_request_success_total", labels)] == 48


def test_full_queue_is_503_and_the_server_stays_up(serve_repository, monkeypatch):
    import aprender.serve._models as registry_module

    # PCA has no exact fast path, so its calls run in a thread and queue (models with fast paths
    # run on the event loop, which they never hold long enough for a queue to build).
    root, fitted = serve_repository
    gate, entered = threading.Event(), threading.Event()
    real_runner = registry_module._runner

    def held_runner(model, outputs):
        run = real_runner(model, outputs)

        def held(X):  # the real model call, held until the queue has been seen full
            if X.shape[0] == 2:
                entered.set()
                gate.wait(30)
            return run(X)

        return held

    monkeypatch.setattr(registry_module, "_runner", held_runner)

    def infer(rows):
        return {"inputs": [{"name": "x", "shape": [len(rows), 4], "datatype": "FP64", "data": rows}],
                "outputs": [{"name": "transform"}]}

    async def scenario(url):
        async with httpx.AsyncClient(base_url=url) as client:
            def send(rows):
                return asyncio.ensure_future(client.post("/v2/models/pca/infer", json=infer(rows)))

            running = send(X[:2].tolist())  # dispatched at once, held
            while not entered.is_set():
                await asyncio.sleep(0.01)
            waiting = send(X[2:3].tolist())  # fills the queue (max_queue=1)
            while (await client.get("/v1/metrics")).json()["queue_depth"] != 1:
                await asyncio.sleep(0.01)
            refused = await client.post("/v2/models/pca/infer", json=infer(X[3:4].tolist()))
            gate.set()
            return refused, await running, await waiting

    with serving(ServeConfig((str(root / "pca"),), max_queue=1)) as url:
        refused, running, waiting = asyncio.run(scenario(url))
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert refused.json()["error"] == "service_overloaded" and refused.json()["retry_after_ms"] == 100
        pca = fitted["pca:1"]
        assert same(np.reshape(running.json()["outputs"][0]["data"], (2, 3)), pca.transform(X[:2]))
        assert same(np.reshape(waiting.json()["outputs"][0]["data"], (1, 3)), pca.transform(X[2:3]))
        assert httpx.post(f"{url}/v2/models/pca/infer", json=infer(X[3:4].tolist())).status_code == 200


def test_serve_command_binds_loopback_and_serves(serve_repository, tmp_path):
    root, fitted = serve_repository
    process, url, _ = start_serve(str(root / "line"))
    try:
        assert url.startswith("http://127.0.0.1:")
        reply = httpx.post(f"{url}/predict", json={"features": X[:2, :2].tolist()})
        assert same(reply.json()["prediction"], fitted["line:1"].predict(X[:2, :2]))
    finally:
        process.terminate()
        code = process.wait(30)
        process.stderr.close()
    assert code == 0  # SIGTERM drains, and a drained shutdown is a clean one (docs/cli.md)


def test_serve_command_with_workers(serve_repository):
    """``--workers 2``: forked workers on one port, metrics summed over both, all gone after SIGTERM."""
    root, fitted = serve_repository
    process, url, deadline = start_serve(str(root / "line"), "--workers", "2")
    workers: list[str] = []
    try:
        while len(workers) < 2:
            assert time.monotonic() < deadline
            workers = subprocess.run(["ps", "-o", "pid=", "--ppid", str(process.pid)], capture_output=True,
                                     text=True).stdout.split()
        assert len(workers) == 2
        for _ in range(20):  # new connections, spread by the kernel over both workers
            reply = httpx.post(f"{url}/predict", json={"features": X[:2, :2].tolist()})
            assert same(reply.json()["prediction"], fitted["line:1"].predict(X[:2, :2]))
        samples = _samples(url)
        labels = (("model_name", "line"), ("model_version", "1"))
        assert samples[("model_infer_request_success_total", labels)] == 20
    finally:
        process.terminate()
        code = process.wait(60)
        process.stderr.close()
    assert code == 0
    assert workers and all(not os.path.exists(f"/proc/{pid}") for pid in workers)


def test_freeze_gc_after_warm_up(serve_repository):
    """run()'s app moves what is alive after warm-up out of the collector's sight (no 0.1 s stalls)."""
    import gc

    from aprender.serve import create_app

    app = create_app(ServeConfig((str(serve_repository[0] / "line"),)), freeze_gc=True)

    async def scenario():
        async with app.router.lifespan_context(app):
            while not app.state.registry.ready:
                await asyncio.sleep(0.01)
            return gc.get_freeze_count()

    try:
        assert gc.get_freeze_count() == 0
        assert asyncio.run(scenario()) > 0
    finally:
        gc.unfreeze()
