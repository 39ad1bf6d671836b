"""The Open Inference Protocol v2 of ``aprender serve``, driven with tritonclient's HTTP client."""

from __future__ import annotations

import hashlib
import shutil

import httpx
import numpy as np
import pytest
import tritonclient.http as triton
from serve_helpers import X, same, serving
from tritonclient.utils import InferenceServerException

from aprender.serve import ServeConfig

API_KEY = "s3cret"


@pytest.fixture(scope="module")
def models(serve_repository, tmp_path_factory):
    root = tmp_path_factory.mktemp("repo") / "models"
    shutil.copytree(serve_repository[0], root)  # the repository tests add and remove models
    return root, serve_repository[1]


@pytest.fixture(scope="module")
def server(models):
    with serving(ServeConfig((str(models[0]),), api_key=API_KEY, max_body_size=1 << 20)) as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    c = triton.InferenceServerClient(server.removeprefix("http://"))
    yield c
    c.close()


AUTH = {"Authorization": f"Bearer {API_KEY}"}


def _input(rows, binary=True, dtype="FP64"):
    tensor = triton.InferInput("input-0", list(rows.shape), dtype)
    tensor.set_data_from_numpy(rows, binary_data=binary)
    return tensor


def test_health_and_server_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    meta = client.get_server_metadata()
    assert meta["name"] == "aprender" and "binary_tensor_data" in meta["extensions"]


def test_model_metadata(client, models):
    assert client.is_model_ready("iris") and client.is_model_ready("iris", "1")
    meta = client.get_model_metadata("iris")
    assert meta["versions"] == ["1", "2"]
    assert meta["inputs"] == [{"name": "input-0", "datatype": "FP64", "shape": [-1, 4]}]
    assert meta["outputs"] == [{"name": "predict", "datatype": "INT64", "shape": [-1]},
                               {"name": "predict_proba", "datatype": "FP64", "shape": [-1, 3]},
                               {"name": "decision_function", "datatype": "FP64", "shape": [-1, 3]}]
    params = meta["parameters"]
    assert params["sha256"] == hashlib.sha256((models[0] / "iris" / "2" / "model.apr").read_bytes()).hexdigest()
    assert params["estimator"] == "LogisticRegression" and params["version"] == "2"
    pca = client.get_model_metadata("pca", "1")
    assert pca["outputs"] == [{"name": "transform", "datatype": "FP64", "shape": [-1, 3]}]


@pytest.mark.parametrize("binary", [True, False])
def test_infer_equals_the_model(client, models, binary):
    model = models[1]["iris:1"]
    outputs = [triton.InferRequestedOutput("predict", binary_data=binary),
               triton.InferRequestedOutput("predict_proba", binary_data=binary)]
    result = client.infer("iris", [_input(X[:50], binary)], model_version="1", outputs=outputs)
    assert same(result.as_numpy("predict"), model.predict(X[:50]))
    assert same(result.as_numpy("predict_proba"), model.predict_proba(X[:50]))
    assert result.get_response()["model_version"] == "1"


def test_a_large_json_output_is_written_in_chunks_with_the_same_values(client, server, models, monkeypatch):
    """A JSON output of more values than one chunk goes out in parts (here chunks of 7 values), beside
    a binary output and with the request's id: tritonclient reads the same values, bit for bit."""
    from aprender.serve import _v2

    monkeypatch.setattr(_v2, "_CHUNK", 7)
    model = models[1]["iris:1"]
    outputs = [triton.InferRequestedOutput("predict_proba", binary_data=False),
               triton.InferRequestedOutput("predict", binary_data=True)]
    result = client.infer("iris", [_input(X[:50])], model_version="1", outputs=outputs, request_id="big")
    assert same(result.as_numpy("predict_proba"), model.predict_proba(X[:50]))
    assert same(result.as_numpy("predict"), model.predict(X[:50]))
    assert result.get_response()["id"] == "big"
    body = {"inputs": [{"name": "x", "shape": [30, 4], "datatype": "FP64", "data": X[:30].tolist()}],
            "outputs": [{"name": "predict"}, {"name": "predict_proba"}]}
    answer = httpx.post(f"{server}/v2/models/iris/versions/1/infer", json=body)
    assert int(answer.headers["content-length"]) == len(answer.content)
    out = {o["name"]: o for o in answer.json()["outputs"]}
    assert same(out["predict"]["data"], model.predict(X[:30]))
    assert same(np.reshape(out["predict_proba"]["data"], (30, 3)), model.predict_proba(X[:30]))


def test_infer_default_output_and_float32(client, models):
    model = models[1]["iris:2"]
    rows = X[:10].astype(np.float32)
    result = client.infer("iris", [_input(rows, dtype="FP32")])  # no outputs: predict, in binary
    assert same(result.as_numpy("predict"), model.predict(rows))
    pca = models[1]["pca:1"]
    result = client.infer("pca", [_input(X[:5])], outputs=[triton.InferRequestedOutput("transform")])
    assert same(result.as_numpy("transform"), pca.transform(X[:5]))


def test_infer_json_without_content_type(server, models):
    model = models[1]["line:1"]
    body = {"id": "r1", "inputs": [{"name": "x", "shape": [3, 2], "datatype": "FP64",
                                    "data": X[:3, :2].ravel().tolist()}]}
    r = httpx.post(f"{server}/v2/models/line/versions/1/infer", content=httpx.Request("POST", "/", json=body).content)
    assert r.status_code == 200
    out = r.json()
    assert out["id"] == "r1" and out["outputs"][0]["name"] == "predict"
    assert same(out["outputs"][0]["data"], model.predict(X[:3, :2]))


def test_infer_errors(client, server):
    with pytest.raises(InferenceServerException, match="model 'nope' not found") as info:
        client.infer("nope", [_input(X[:1])])
    assert info.value.status() == "404"
    with pytest.raises(InferenceServerException, match="no version '7'") as info:
        client.infer("iris", [_input(X[:1])], model_version="7")
    assert info.value.status() == "404"
    with pytest.raises(InferenceServerException, match="3 features per row; the model expects 4"):
        client.infer("iris", [_input(X[:2, :3])])
    with pytest.raises(InferenceServerException, match="no output 'transform'"):
        client.infer("iris", [_input(X[:2])], outputs=[triton.InferRequestedOutput("transform")])
    strings = triton.InferInput("input-0", [1, 4], "BYTES")
    strings.set_data_from_numpy(np.array([["a", "b", "c", "d"]], dtype=object))
    with pytest.raises(InferenceServerException, match="this model takes numbers") as info:
        client.infer("iris", [strings])
    assert info.value.status() == "400"
    with pytest.raises(InferenceServerException, match="exceeds the limit") as info:
        client.infer("iris", [_input(np.zeros((40000, 4)))])
    assert info.value.status() == "413"
    header = b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "parameters": {"binary_data_size": 32}}]}'
    for body, headers, message in [
        (b"{", {}, "not valid JSON"),
        (b'{"inputs": []}', {}, "a non-empty list of tensors"),
        (b'{"inputs": [{"name": "x", "shape": [], "datatype": "FP64", "data": [1]}]}', {}, "got 0 dimensions"),
        (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": [1, 2]}]}', {}, "do not fill"),
        (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP64", "data": ["a", 1, 2, 3]}]}', {},
         "does not hold FP64"),
        (header + b"\0" * 8, {"Inference-Header-Content-Length": "500"}, "Inference-Header-Content-Length"),
        (header + b"\0" * 8, {"Inference-Header-Content-Length": str(len(header))}, "binary_data_size"),
    ]:
        r = httpx.post(f"{server}/v2/models/iris/infer", content=body, headers=headers)
        assert r.status_code == 400, r.text
        assert message in r.json()["error"]
    assert httpx.get(f"{server}/v2/models/nope").status_code == 404
    assert httpx.get(f"{server}/v2/models/nope/ready").status_code == 404
    assert client.is_server_live()  # still up


def test_repository_needs_the_api_key(client):
    with pytest.raises(InferenceServerException) as info:
        client.get_model_repository_index()
    assert info.value.status() == "401"
    with pytest.raises(InferenceServerException):
        client.unload_model("iris", headers={"Authorization": "Bearer wrong"})


def test_repository_index_unload_load_and_new_models(client, models):
    root, fitted = models
    index = client.get_model_repository_index(headers=AUTH)
    assert {(m["name"], m["version"], m["state"]) for m in index} >= {("iris", "1", "READY"), ("iris", "2", "READY")}
    client.unload_model("forest", headers=AUTH)
    assert not client.is_model_ready("forest")
    with pytest.raises(InferenceServerException) as info:
        client.infer("forest", [_input(X[:1])])
    assert info.value.status() == "404"
    assert ("forest", "", "UNAVAILABLE") in {(m["name"], m["version"], m["state"])
                                             for m in client.get_model_repository_index(headers=AUTH)}
    client.load_model("forest", headers=AUTH)
    assert client.is_model_ready("forest")
    # a model added to the repository while the server runs is served after a load, without restart
    shutil.copytree(root / "iris", root / "iris2")
    (root / "iris2" / "model-settings.json").unlink()
    with pytest.raises(InferenceServerException):
        client.infer("iris2", [_input(X[:1])])
    client.load_model("iris2", headers=AUTH)
    result = client.infer("iris2", [_input(X[:5])], model_version="1")
    assert same(result.as_numpy("predict"), fitted["iris:1"].predict(X[:5]))
    with pytest.raises(InferenceServerException) as info:
        client.load_model("missing", headers=AUTH)
    assert info.value.status() == "404"
    (root / "bad" / "1").mkdir(parents=True)
    (root / "bad" / "1" / "model.pkl").write_bytes(b"never opened")
    with pytest.raises(InferenceServerException, match=r"never loads it.*aprender\.save\(joblib\.load") as info:
        client.load_model("bad", headers=AUTH)
    assert info.value.status() == "400"
    shutil.rmtree(root / "bad")
