"""The Ollama-compatible API of ``aprender serve``, driven with the official ``ollama`` client."""

from __future__ import annotations

import hashlib
import json

import httpx
import numpy as np
import ollama
import pytest
from serve_helpers import X, same, serving

from aprender.serve import ServeConfig


@pytest.fixture(scope="module")
def models(serve_repository):
    return serve_repository


@pytest.fixture(scope="module")
def server(models):
    with serving(ServeConfig((str(models[0]),))) as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return ollama.Client(host=server)


def test_root_and_version(server):
    r = httpx.get(server + "/")
    assert (r.status_code, r.text) == (200, "Ollama is running")
    assert httpx.head(server + "/").status_code == 200
    assert httpx.get(server + "/api/version").json() == {"version": "0.1.0"}


def test_generate_one_row(client, models):
    model = models[1]["iris:2"]
    reply = client.generate(model="iris", prompt=json.dumps(X[60].tolist()), stream=False)
    assert json.loads(reply.response) == model.predict(X[60:61])[0]
    assert reply.done and reply.done_reason == "stop" and reply.eval_count == 1
    assert reply.total_duration > 0


def test_generate_stream_rows_and_probabilities(client, models):
    model = models[1]["iris:1"]
    chunks = list(client.generate(model="iris:1", prompt=json.dumps(X[:15].tolist()),
                                  options={"output": "predict_proba"}, stream=True))
    assert [c.done for c in chunks] == [False, True]
    assert same(json.loads(chunks[0].response), model.predict_proba(X[:15]))  # float64 exact
    assert chunks[1].done_reason == "stop" and chunks[1].prompt_eval_count == 15


def test_chat(client, models):
    model = models[1]["line:1"]
    messages = [{"role": "system", "content": "ignored"}, {"role": "user", "content": json.dumps(X[:3, :2].tolist())}]
    reply = client.chat(model="line:latest", messages=messages, stream=False)
    assert reply.message.role == "assistant"
    assert same(json.loads(reply.message.content), model.predict(X[:3, :2]))
    streamed = list(client.chat(model="line", messages=messages, stream=True))
    assert same(json.loads(streamed[0].message.content), model.predict(X[:3, :2])) and streamed[-1].done


def test_embed_is_transform(client, models):
    pca = models[1]["pca:1"]
    reply = client.embed(model="pca", input=[json.dumps(row) for row in X[:4].tolist()])
    assert same(reply.embeddings, pca.transform(X[:4]))
    assert same(client.embed(model="pca", input=json.dumps(X[9].tolist())).embeddings, pca.transform(X[9:10]))


def test_list_show_ps(client, models):
    listed = {m.model: m for m in client.list().models}
    assert {"iris:latest", "iris:1", "iris:2", "pca:latest", "forest:1", "line:latest"} <= set(listed)
    digest = hashlib.sha256((models[0] / "iris" / "2" / "model.apr").read_bytes()).hexdigest()
    assert listed["iris:latest"].digest == listed["iris:2"].digest == digest
    assert listed["iris:2"].details.family == "LogisticRegression" and listed["iris:2"].details.format == "apr"
    shown = client.show("iris")
    assert shown.modelinfo["aprender.sha256"] == digest
    assert shown.modelinfo["aprender.estimator"] == "LogisticRegression"
    assert shown.modelinfo["aprender.class"] == "aprender.linear_model.LogisticRegression"
    assert "embedding" in client.show("pca").capabilities
    running = {m.model for m in client.ps().models}
    assert {"iris:2", "pca:1"} <= running


def test_keep_alive_zero_unloads_and_empty_prompt_loads(client):
    reply = client.generate(model="forest", prompt="", keep_alive=0)
    assert reply.done_reason == "unload"
    assert "forest:1" not in {m.model for m in client.ps().models}
    reply = client.generate(model="forest", prompt="")
    assert reply.done_reason == "load"
    assert "forest:1" in {m.model for m in client.ps().models}


@pytest.mark.parametrize(("call", "status", "message"), [
    (lambda c: c.generate(model="nope", prompt="[1]", stream=False), 404, "model 'nope' not found"),
    (lambda c: c.generate(model="iris:5", prompt="[1]", stream=False), 404, "no version '5'"),
    (lambda c: c.generate(model="iris", prompt="[1, 2]", stream=False), 400, "the model expects 4"),
    (lambda c: c.generate(model="iris", prompt="setosa?", stream=False), 400, "the prompt is not valid JSON"),
    (lambda c: c.generate(model="iris", prompt="5", stream=False), 400, "got 0 dimensions"),
    (lambda c: c.generate(model="iris", prompt="[1, 2, 3, 4]", options={"output": "x"}), 400, "options.output"),
    (lambda c: list(c.generate(model="iris", prompt="[[1, 2, 3, 4], [1]]", stream=True)), 400, "equal-length rows"),
    (lambda c: c.embed(model="iris", input="[1, 2, 3, 4]"), 400, "no transform()"),
    (lambda c: c.embed(model="pca", input="[1, 2]"), 400, "the model expects 4"),
    (lambda c: c.chat(model="line", messages=[{"role": "user", "content": "{}"}], stream=False), 400,
     "numbers"),
    (lambda c: c.pull("llama3"), 501, "'pull' is not supported"),
    (lambda c: c.delete("iris"), 501, "'delete' is not supported"),
    (lambda c: c.copy("iris", "iris-copy"), 501, "'copy' is not supported"),
])
def test_errors_raise_response_error(client, call, status, message):
    with pytest.raises(ollama.ResponseError) as info:
        call(client)
    assert info.value.status_code == status
    assert message in info.value.error
    assert client.list().models  # still up


def test_outputs_match_predictions_in_bulk(client, models):
    forest = models[1]["forest:1"]
    reply = client.generate(model="forest", prompt=json.dumps(X.tolist()), stream=False)
    assert same(np.array(json.loads(reply.response)), forest.predict(X))


def test_unloading_with_keep_alive_zero_needs_the_api_key(models):
    """An unload by keep_alive 0 changes what every client's next request costs (a whole load), so under
    --api-key it needs the key, as the repository's unload route does; loading by an empty prompt stays
    open (a request loads its model anyway)."""
    with serving(ServeConfig((str(models[0]),), api_key="k")) as url:
        body = {"model": "forest", "prompt": "", "keep_alive": 0, "stream": False}
        for route, payload in (("/api/generate", body),
                               ("/api/chat", {**body, "messages": [{"role": "user", "content": "[1, 2, 3, 4]"}]})):
            reply = httpx.post(url + route, json=payload)
            assert reply.status_code == 401, reply.text
            assert "forest:1" in {m["model"] for m in httpx.get(url + "/api/ps").json()["models"]}
        reply = httpx.post(url + "/api/generate", json=body, headers={"Authorization": "Bearer k"})
        assert reply.status_code == 200 and reply.json()["done_reason"] == "unload"
        assert httpx.post(url + "/api/generate", json={**body, "keep_alive": None}).json()["done_reason"] == "load"
