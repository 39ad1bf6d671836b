"""realizar's routes of ``aprender serve``, driven with httpx against a real server."""

from __future__ import annotations

import hashlib
import threading
import time

import httpx
import numpy as np
import orjson
import pytest
from serve_helpers import SIGNING_KEY, X, same, serving

import aprender
from aprender.serve import ServeConfig


@pytest.fixture(scope="module")
def models(serve_repository):
    return serve_repository


@pytest.fixture(scope="module")
def client(serve_client):
    return serve_client


def test_health_and_ready(client):
    assert client.get("/health").json() == {"status": "healthy", "version": "0.1.0", "compute_mode": "cpu"}
    assert client.get("/ready").status_code == 200


def test_predict_one_row_equals_the_model(client, models):
    model = models[1]["iris:2"]
    r = client.post("/predict", json={"model_id": "iris", "features": X[7].tolist(),
                                      "options": {"return_probabilities": True}})
    assert r.status_code == 200
    body = r.json()
    assert body["prediction"] == model.predict(X[7:8])[0]
    assert same(body["probabilities"], model.predict_proba(X[7:8])[0])  # float64 round-trips exactly
    assert body["model_version"] == "2"
    assert body["latency_ms"] > 0


def test_predict_rows_and_a_version(client, models):
    model = models[1]["iris:1"]
    r = client.post("/predict", json={"model_id": "iris:1", "features": X[:20].tolist(),
                                      "options": {"top_k": 2}})
    body = r.json()
    assert same(body["prediction"], model.predict(X[:20]))
    proba = model.predict_proba(X[:20])
    assert same(body["probabilities"], proba)
    best = np.argsort(-proba, axis=1, kind="stable")[:, :2]
    assert [[c["class"] for c in row] for row in body["top_k"]] == best.tolist()
    assert body["model_version"] == "1"


def test_predict_batch(client, models):
    model = models[1]["forest:1"]
    r = client.post("/predict/batch", json={"model_id": "forest", "instances": [{"features": row}
                                                                                for row in X[::10].tolist()]})
    body = r.json()
    assert body["batch_size"] == len(X[::10])
    assert body["total_latency_ms"] > 0 and "latency_ms" not in body  # realizar's name for a batch
    assert [p["prediction"] for p in body["predictions"]] == model.predict(X[::10]).tolist()


def test_regression_float64_exact(client, models):
    model = models[1]["line:1"]
    r = client.post("/predict", json={"model_id": "line", "features": X[:30, :2].tolist()})
    assert same(r.json()["prediction"], model.predict(X[:30, :2]))


def test_models_lists_provenance(client, models):
    rows = {m["id"]: m for m in client.get("/models").json()["models"]}
    assert set(rows) == {"iris:1", "iris:2", "forest:1", "pca:1", "line:1"}
    iris = rows["iris:2"]
    assert iris["sha256"] == hashlib.sha256((models[0] / "iris" / "2" / "model.apr").read_bytes()).hexdigest()
    assert iris["estimator"] == "LogisticRegression"
    assert iris["class"] == "aprender.linear_model.LogisticRegression"
    assert iris["label"] == "v2-prod" and iris["latest"] and not rows["iris:1"]["latest"]
    assert iris["format"] == "apr" and rows["forest:1"]["format"] == "safetensors"
    assert iris["sklearn_version"] and iris["aprender_version"] == "0.1.0"
    assert iris["signature"] == "unsigned"
    assert iris["warmup"].endswith("; exact fast path for predict, predict_proba, decision_function")
    public = SIGNING_KEY.public_key().public_bytes_raw().hex()
    assert (rows["line:1"]["signature"], rows["line:1"]["signer"]) == ("untrusted", public)


@pytest.mark.parametrize(("body", "status", "code", "message"), [
    (b"{not json", 400, "E_INVALID_INPUT", "not valid JSON"),
    (b"[1, 2]", 400, "E_INVALID_INPUT", "JSON object"),
    (orjson.dumps({"model_id": "iris"}), 400, "E_INVALID_INPUT", "missing 'features'"),
    (orjson.dumps({"model_id": "iris", "features": [1, 2, 3]}), 400, "E_INVALID_INPUT",
     "3 features per row; the model expects 4"),
    (orjson.dumps({"model_id": "iris", "features": ["a", "b", "c", "d"]}), 400, "E_INVALID_INPUT", "strings"),
    (orjson.dumps({"model_id": "iris", "features": [1, None, {}, 4]}), 400, "E_INVALID_INPUT", "only numbers"),
    (orjson.dumps({"model_id": "iris", "features": [[1, 2, 3, 4], [1, 2]]}), 400, "E_INVALID_INPUT",
     "equal-length rows"),
    (orjson.dumps({"model_id": "iris", "features": []}), 400, "E_INVALID_INPUT", "no rows"),
    (orjson.dumps({"model_id": "iris", "features": [[]]}), 400, "E_INVALID_INPUT", "0 features per row"),
    (orjson.dumps({"model_id": "iris", "features": 5}), 400, "E_INVALID_INPUT", "got 0 dimensions"),
    (orjson.dumps({"model_id": "iris", "features": [[[1, 2, 3, 4]]]}), 400, "E_INVALID_INPUT", "got 3 dimensions"),
    (orjson.dumps({"model_id": "iris", "features": [1, 2, 3, 4], "options": {"top_k": 0}}), 400,
     "E_INVALID_INPUT", "top_k"),
    (orjson.dumps({"model_id": "line", "features": [1, 2], "options": {"return_probabilities": True}}), 400,
     "E_INVALID_INPUT", "no output 'predict_proba'"),
    (orjson.dumps({"model_id": "nope", "features": [1, 2, 3, 4]}), 404, "E_NO_MODEL", "model 'nope' not found"),
    (orjson.dumps({"model_id": "iris:9", "features": [1, 2, 3, 4]}), 404, "E_NO_MODEL", "no version '9'"),
    (orjson.dumps({"features": [1, 2, 3, 4]}), 400, "E_INVALID_INPUT", "several models are served"),
    (b"x" * (65 << 10), 413, "E_PAYLOAD_TOO_LARGE", "exceeds the limit"),
])
def test_bad_requests(client, body, status, code, message):
    r = client.post("/predict", content=body)
    assert r.status_code == status, r.text
    assert r.json()["code"] == code
    assert message in r.json()["error"]
    assert client.get("/health").status_code == 200  # still up


def test_bad_batches(client):
    r = client.post("/predict/batch", json={"model_id": "iris", "instances": []})
    assert (r.status_code, r.json()["code"]) == (400, "E_EMPTY_BATCH")
    r = client.post("/predict/batch", json={"model_id": "iris", "instances": [{"x": 1}]})
    assert (r.status_code, r.json()["code"]) == (400, "E_INVALID_INPUT")


def test_chunked_body_over_the_limit_is_413(client):
    def chunks():
        for _ in range(80):
            yield b" " * 1024

    r = client.post("/predict", content=chunks())
    assert r.status_code == 413


def test_unknown_route_and_method(client):
    assert client.get("/nope").status_code == 404
    assert client.get("/predict").status_code == 405


def test_ready_is_503_until_models_are_warm(models, monkeypatch):
    import aprender.serve._models as registry_module

    gate = threading.Event()
    original = registry_module.load_version

    def held(version, limits, policy):  # the real load, held until the test has seen /ready answer 503
        gate.wait(10)
        return original(version, limits, policy)

    monkeypatch.setattr(registry_module, "load_version", held)
    with serving(ServeConfig((str(models[0] / "iris"),)), wait_ready=False) as url:
        assert httpx.get(f"{url}/ready").status_code == 503
        assert httpx.get(f"{url}/health").status_code == 200
        gate.set()
        for _ in range(1000):
            if httpx.get(f"{url}/ready").status_code == 200:
                break
            time.sleep(0.01)
        assert httpx.get(f"{url}/ready").status_code == 200
        assert httpx.post(f"{url}/predict", json={"features": [1, 2, 3, 4]}).json()["model_version"] == "2"


def test_a_model_without_a_feature_matrix_is_503_and_the_rest_serves(tmp_path, serve_repository):
    from aprender.preprocessing import LabelEncoder

    aprender.save(LabelEncoder().fit(["apple", "banana"]), tmp_path / "words.apr")  # it encodes labels, not rows
    with serving(ServeConfig((str(tmp_path / "words.apr"), str(serve_repository[0] / "line")))) as url:
        r = httpx.post(f"{url}/predict", json={"model_id": "words", "features": [1.0]})
        assert (r.status_code, r.json()["code"]) == (503, "E_NO_MODEL")
        assert "takes neither a feature matrix" in r.json()["error"]
        r = httpx.post(f"{url}/predict", json={"model_id": "line", "features": [1.0, 2.0]})
        assert r.status_code == 200
