"""Every inference route against values of every JSON kind in every field a client fills: the answer is
a 4xx with a JSON error, never a 5xx (an exception of the server's own code escaping as 'internal
error'), and the server answers the next request. Each value stands for a class of lie (wrong kind,
wrong nesting, numbers past float64, strings where numbers go, lists where names go)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import orjson
import pytest
from serve_helpers import serving

import aprender
from aprender.linear_model import LinearRegression
from aprender.serve import ServeConfig

VALUES = [None, True, 2**64 - 1, 1e308, "x", "", [], {}, [[]], [[1, 2]], [[1, 2], [1]], {"a": 1}, [{"a": 1}],
          [None, None], ["1", "2"], [[[1, 2]]], [[["x"]]], "[1, 2]", [[1e308, -1e308]]]


def _bodies(value: object) -> Iterator[tuple[str, bytes, str]]:
    """(path, body, content type) of each route with ``value`` in each field."""
    def post(path: str, body: object) -> tuple[str, bytes, str]:
        return path, orjson.dumps(body), "application/json"

    yield post("/predict", {"model_id": "line", "features": value})
    yield post("/predict", {"model_id": value, "features": [1, 2]})
    yield post("/predict", {"features": [1, 2], "options": {"return_probabilities": True, "top_k": value}})
    yield post("/predict/batch", {"model_id": "line", "instances": value})
    yield post("/predict/batch", {"model_id": "line", "instances": [{"features": value}]})
    yield post("/invocations", {"dataframe_split": {"columns": value, "data": value}})
    yield post("/invocations", {"dataframe_split": {"columns": ["a", "b"], "data": value}})
    yield post("/invocations", {"dataframe_records": value})
    yield post("/invocations", {"instances": value})
    yield post("/invocations", {"inputs": {"a": value}})
    yield "/invocations", f"a,b\n1,2\n{value},2\n".encode(), "text/csv"
    yield post("/api/generate", {"model": "line", "prompt": orjson.dumps(value).decode(), "stream": False,
                                 "options": {"output": value}})
    yield post("/api/generate", {"model": "line", "prompt": value, "stream": value, "keep_alive": value})
    yield post("/api/chat", {"model": "line", "messages": value, "stream": False})
    yield post("/api/chat", {"model": "line", "messages": [{"role": value, "content": value}], "stream": False})
    yield post("/api/embed", {"model": "line", "input": value})
    yield post("/api/show", {"model": value})
    tensor = {"name": "input-0", "shape": [1, 2], "datatype": "FP64", "data": value}
    yield post("/v2/models/line/infer", {"inputs": [tensor], "outputs": value})
    yield post("/v2/models/line/infer", {"inputs": [{**tensor, "data": [1, 2], "parameters": value}],
                                         "parameters": value, "id": value})
    yield post("/v2/models/line/infer", {"inputs": [{**tensor, "shape": value}]})
    yield post("/v2/models/line/infer", {"inputs": [{**tensor, "datatype": value}]})
    yield post("/v2/models/line/infer", {"inputs": value})
    yield post("/v2/models/line/infer", {"inputs": [{**tensor, "data": [1, 2]}],
                                         "outputs": [{"name": "predict", "parameters": value}]})
    yield post("/v2/models/line/versions/1/infer", {"inputs": [{**tensor, "data": [1, 2], "name": value}]})


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[httpx.Client]:
    root: Path = tmp_path_factory.mktemp("hostile")
    path = root / "line" / "1" / "model.apr"
    path.parent.mkdir(parents=True)
    aprender.save(LinearRegression().fit(np.arange(8.0).reshape(4, 2), np.arange(4.0)), path)
    with serving(ServeConfig((str(root),))) as url, httpx.Client(base_url=url, timeout=20.0) as http:
        yield http


@pytest.mark.parametrize("value", VALUES, ids=lambda v: orjson.dumps(v).decode()[:24])
def test_no_value_in_any_field_is_an_internal_error(client, value):
    failures = []
    for path, body, kind in _bodies(value):
        response = client.post(path, content=body, headers={"content-type": kind})
        if response.status_code >= 500 or (response.status_code >= 400 and "error" not in response.json()):
            failures.append(f"{path} {body[:120]!r}: {response.status_code} {response.text[:160]}")
    assert not failures, "\n".join(failures)
    assert client.post("/predict", json={"features": [1.0, 2.0]}).status_code == 200
