"""The inference routes answered from ASGI messages (no Starlette Request/Response): the same
bytes, headers and errors as every other route."""

from __future__ import annotations

import orjson
import pytest
from serve_helpers import X


def test_predict_headers_and_body(serve_client, serve_repository):
    r = serve_client.post("/predict", json={"model_id": "iris", "features": X[3].tolist()})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert int(r.headers["content-length"]) == len(r.content)
    body = orjson.loads(r.content)
    assert list(body) == ["prediction", "latency_ms", "model_version"]
    assert body["prediction"] == serve_repository[1]["iris:2"].predict(X[3:4])[0]


def test_a_body_in_several_chunks(serve_client, serve_repository):
    data = orjson.dumps({"model_id": "iris:1", "features": X[:5].tolist()})

    def chunks():
        for i in range(0, len(data), 7):
            yield data[i:i + 7]

    r = serve_client.post("/predict", content=chunks())
    assert r.json()["prediction"] == serve_repository[1]["iris:1"].predict(X[:5]).tolist()


@pytest.mark.parametrize("path", ["/predict", "/v2/models/iris/infer", "/v2/models/iris/versions/1/infer",
                                  "/api/generate", "/api/chat"])
def test_wrong_method_is_405_in_the_common_error_shape(serve_client, path):
    r = serve_client.get(path)
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"
    assert r.json() == {"error": f"Method Not Allowed: GET {path}", "code": "E_METHOD_NOT_ALLOWED"}


def test_unknown_model_is_404_before_the_body_is_read(serve_client):
    r = serve_client.post("/v2/models/nope/infer", content=b"x" * (65 << 10))
    assert r.status_code == 404 and r.json()["code"] == "E_NO_MODEL"
    r = serve_client.post("/v2/models/iris/infer", content=b"x" * (65 << 10))
    assert r.status_code == 413 and r.json()["code"] == "E_PAYLOAD_TOO_LARGE"


def test_generate_streams_ndjson(serve_client, serve_repository):
    r = serve_client.post("/api/generate", json={"model": "iris", "prompt": orjson.dumps(X[5].tolist()).decode()})
    assert r.headers["content-type"] == "application/x-ndjson"
    first, last = [orjson.loads(line) for line in r.content.splitlines()]
    assert first["response"] == str(serve_repository[1]["iris:2"].predict(X[5:6])[0]) and first["done"] is False
    assert last["response"] == "" and last["done"] is True and last["eval_count"] == 1


def test_an_internal_error_is_500_and_the_server_stays_up(serve_client, monkeypatch):
    from aprender.serve._models import Registry

    async def broken(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(Registry, "infer", broken)
    r = serve_client.post("/predict", json={"model_id": "iris", "features": X[0].tolist()})
    assert r.status_code == 500
    assert r.json() == {"error": "internal error: RuntimeError: boom", "code": "E_INTERNAL"}
    monkeypatch.undo()
    assert serve_client.post("/predict", json={"model_id": "iris", "features": X[0].tolist()}).status_code == 200
    text = serve_client.get("/metrics").text
    assert 'rest_server_requests_total{method="POST",path="/predict",status_code="500"} 1.0' in text
