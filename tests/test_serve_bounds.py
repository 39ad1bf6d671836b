"""A model that runs without a time or memory bound cannot stall ``aprender serve``: warm-up and inference
bounds, the failed state in the index and the ready routes, and the other models served meanwhile."""

from __future__ import annotations

import asyncio
import copy
import os
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from serve_helpers import X, serving, start_serve
from stall_models import Stall
from state_edit import find

import aprender
from aprender.codec import ModelState, to_state
from aprender.format import safetensors
from aprender.linear_model import LinearRegression
from aprender.preprocessing import PolynomialFeatures
from aprender.serve import Batcher, ServeConfig
from aprender.serve._batching import TimedOut
from aprender.serve._bounded import run_bounded

#: The inference bound; the warm-up bound is longer, so that the hog meets its memory bound first.
BOUND = 0.5
WARMUP = 8.0
#: Generous: the machine is shared; these guard against a hang, they do not measure speed.
SLACK = 20.0


def _polynomial_lie(path: Path) -> None:
    """A real scikit-learn model whose file is valid in every byte and lies only in meaning: a
    PolynomialFeatures of one feature claiming degree 10**7 (and the output width that follows), whose
    transform of one row takes over a minute in a Python loop while it fills 80 MB."""
    state = to_state(PolynomialFeatures(degree=3).fit(np.zeros((2, 1))))
    meta = copy.deepcopy(state.meta)
    node = find(meta, "PolynomialFeatures")
    node["params"]["degree"] = node["attrs"]["_max_degree"] = 10**7
    node["attrs"]["_n_out_full"] = node["attrs"]["n_output_features_"] = 10**7 + 1
    path.parent.mkdir(parents=True)
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))


def _repository(root: Path) -> Path:
    """good (a linear model), stall (warm-up takes 60 s), hog (warm-up grows memory), slow (fast warm-up,
    but a call takes as many seconds as its first input column says), poly (a lying scikit-learn file:
    failed at warm-up, or refused at load once a rule bounds its degree)."""
    models = {"good": LinearRegression().fit(X[:, :2], X[:, 2]),
              "stall": Stall(delay=60.0).fit(X[:, :2]),
              "hog": Stall(delay=60.0, grow=16).fit(X[:, :2]),
              "slow": Stall().fit(X[:, :2])}
    for name, model in models.items():
        path = root / name / "1" / "model.apr"
        path.parent.mkdir(parents=True)
        aprender.save(model, path)
    _polynomial_lie(root / "poly" / "1" / "model.safetensors")
    return root


def _infer(url: str, name: str, value: float) -> httpx.Response:
    body = {"inputs": [{"name": "input-0", "shape": [1, 2], "datatype": "FP64", "data": [value, 0.0]}]}
    return httpx.post(f"{url}/v2/models/{name}/infer", json=body, timeout=SLACK)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    config = ServeConfig((str(_repository(tmp_path_factory.mktemp("bounds"))),), warmup_timeout=WARMUP,
                         infer_timeout=BOUND, warmup_memory=64 << 20)
    start = time.monotonic()
    with serving(config) as url:
        yield url, time.monotonic() - start


def test_the_server_is_ready_once_every_model_is_loaded_or_failed(server):
    url, waited = server
    assert waited < 3 * WARMUP + SLACK  # two bounded failures, not their 60 s of work
    reply = httpx.get(f"{url}/v2/health/ready")
    assert reply.status_code == 200
    states = reply.json()["models"]
    assert {name: s["state"] for name, s in states.items()} == {
        "good": "READY", "hog": "UNAVAILABLE", "poly": "UNAVAILABLE", "slow": "READY", "stall": "UNAVAILABLE"}
    assert f"did not finish within {WARMUP:g} s" in states["stall"]["reason"]
    assert "grew the server's memory" in states["hog"]["reason"]


def test_the_index_and_each_model_report_the_failure(server):
    url, _ = server
    rows = {r["name"]: r for r in httpx.post(f"{url}/v2/repository/index").json()}
    assert rows["stall"]["state"] == "UNAVAILABLE" and "abandoned" in rows["stall"]["reason"]
    assert rows["good"]["state"] == "READY" and rows["good"]["loaded"]
    stall = httpx.get(f"{url}/v2/models/stall/ready")
    assert stall.status_code == 503 and not stall.json()["ready"] and f"within {WARMUP:g} s" in stall.json()["error"]
    assert httpx.get(f"{url}/v2/models/good/ready").json()["ready"]
    # a failed model is not loaded again by its requests (its abandoned work would run twice)
    refused = _infer(url, "stall", 0.0)
    assert refused.status_code == 503 and "did not finish" in refused.json()["error"]


def test_the_abandoned_warm_ups_end(server):
    deadline = time.monotonic() + SLACK
    while any(t.name.startswith("aprender-bounded") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "an abandoned warm-up is still running"
        time.sleep(0.05)


def test_a_call_over_its_bound_answers_504_while_other_models_are_served(server):
    url, _ = server
    stuck = _infer(url, "slow", SLACK / 2)  # a 10 s call against a 0.5 s bound
    assert stuck.status_code == 504 and stuck.json()["code"] == "E_TIMEOUT"
    assert stuck.json()["error"].startswith("model 'slow:1' did not answer within 0.5 s")
    answered = [_infer(url, "good", 1.0) for _ in range(5)]  # while the slow call still runs
    assert all(r.status_code == 200 for r in answered)
    expected = LinearRegression().fit(X[:, :2], X[:, 2]).predict(np.array([[1.0, 0.0]]))
    assert answered[0].json()["outputs"][0]["data"] == expected.tolist()
    # the slow model's next request waits behind its stuck call, and is answered with the same error
    assert _infer(url, "slow", 0.0).status_code == 504


def test_load_route_retries_a_failed_model(server):
    url, _ = server
    reply = httpx.post(f"{url}/v2/repository/models/stall/load", timeout=SLACK)
    assert reply.status_code == 503 and f"did not finish within {WARMUP:g} s" in reply.json()["error"]


def test_workers_share_the_failed_state(tmp_path, monkeypatch):
    root = _repository(tmp_path)
    support = str(Path(__file__).parent / "support")  # where the server imports Stall from (--trust)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [support, os.environ.get("PYTHONPATH")])))
    process, url, _ = start_serve(str(root), "--workers", "2", "--warmup-timeout", str(WARMUP),
                                  "--trust", "stall_models:passthrough")
    try:
        for _ in range(4):  # answered by either worker
            states = httpx.get(f"{url}/v2/health/ready").json()["models"]
            assert [states[m]["state"] for m in ("good", "stall", "poly")] == ["READY", "UNAVAILABLE", "UNAVAILABLE"]
            assert f"did not finish within {WARMUP:g} s" in states["stall"]["reason"]
            assert _infer(url, "good", 1.0).status_code == 200
    finally:
        process.terminate()
        process.wait(SLACK)
        process.stderr.close()


def test_bounded_work_returns_its_result_or_raises_its_error():
    assert asyncio.run(run_bounded(sum, [1, 2], seconds=SLACK, memory=1 << 30, what="a sum")) == 3
    with pytest.raises(ZeroDivisionError):
        asyncio.run(run_bounded(lambda: 1 / 0, seconds=None, memory=None, what="a division"))


def test_a_request_past_its_bound_leaves_the_batcher_queue():
    release = threading.Event()

    def run(X):
        release.wait(SLACK)
        return {"x": X}

    async def main():
        batcher = Batcher(run, max_batch_size=1, max_batch_time=0.0, max_queue=8, timeout=0.2)
        first = asyncio.ensure_future(batcher.submit(np.zeros((1, 1))))  # computing, stuck
        await asyncio.sleep(0.05)
        with pytest.raises(TimedOut):
            await batcher.submit(np.zeros((1, 1)))  # queued behind it, then gone
        assert batcher.queued == 0
        with pytest.raises(TimedOut):
            await first
        release.set()

    asyncio.run(main())
