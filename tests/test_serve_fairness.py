"""Overload and fairness of ``aprender serve``, shown by causality on a real server (httpx on 127.0.0.1):
what must not wait for a busy model is answered while that model is held busy, never by a clock."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import orjson
from serve_helpers import X, same, serving

from aprender.serve import ServeConfig
from aprender.serve import _models as registry_module
from aprender.serve._tensors import OFFLOAD_BYTES, Parser


def _hold_calls(monkeypatch, held_if):
    """Make model calls whose input satisfies ``held_if`` wait for the returned gate (in their
    thread), setting ``entered`` when one starts; ``calls`` records every call's rows."""
    gate, entered, calls = threading.Event(), threading.Event(), []
    real_runner = registry_module._runner

    def held_runner(model, outputs):
        run = real_runner(model, outputs)

        def held(X):
            calls.append(len(X))
            if held_if(X):
                entered.set()
                gate.wait(30)
            return run(X)

        return held

    monkeypatch.setattr(registry_module, "_runner", held_runner)
    return gate, entered, calls


async def _until(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.005)


def _v2(rows: np.ndarray, output: str = "predict") -> dict:
    return {"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64", "data": rows.tolist()}],
            "outputs": [{"name": output}]}


def test_a_shed_request_is_answered_while_the_model_is_busy(serve_repository, monkeypatch):
    """--max-queue 1 with calls of 8 rows: one call held busy, the requests that fit in the next call
    all queue (a queue bound below the batch size does not cut the batches short), and the one that
    finds the next call full gets its 503 while the held call is still running, before its body is
    even read."""
    root, fitted = serve_repository
    gate, entered, calls = _hold_calls(monkeypatch, lambda X: len(X) == 2)
    parts = [(0, 2), (2, 5), (5, 8), (8, 10)]  # held, then 3 + 3 + 2 rows: the next call's 8

    async def scenario(url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            def send(a, b):
                return asyncio.ensure_future(client.post("/v2/models/pca/infer", json=_v2(X[a:b], "transform")))

            held = send(*parts[0])
            await _until(entered)
            queued = [send(a, b) for a, b in parts[1:]]
            while (await client.get("/v1/metrics")).json()["queue_depth"] != len(queued):
                await asyncio.sleep(0.005)
            refused = await client.post("/v2/models/pca/infer", json=_v2(X[10:11], "transform"))
            unread = await client.post("/v2/models/pca/infer", content=b"{not even JSON")
            busy = not held.done()  # the 503s came back while the held call was still running
            gate.set()
            return refused, unread, busy, [await held] + [await q for q in queued]

    with serving(ServeConfig((str(root / "pca"),), max_queue=1, max_batch_size=8)) as url:
        calls.clear()  # (warm-up)
        refused, unread, busy, answers = asyncio.run(scenario(url))
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1" and busy
    assert refused.json() == {"error": "service_overloaded", "code": "E_OVERLOADED", "retry_after_ms": 100}
    assert unread.status_code == 503  # refused before its body was read (it would be a 400)
    assert calls == [2, 8]  # the three queued requests went in one call
    pca = fitted["pca:1"]
    for answer, (a, b) in zip(answers, parts, strict=True):
        assert answer.status_code == 200
        assert same(np.reshape(answer.json()["outputs"][0]["data"], (b - a, 3)), pca.transform(X[a:b]))


def _parser_pids() -> list[int]:
    """This process's children running the JSON parser."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == os.getpid() and b"aprender.serve._tensors" in command:
                pids.append(int(entry.name))
    return pids


def test_a_large_json_request_does_not_hold_up_other_models(serve_repository, monkeypatch):
    """A JSON request of 50,000 rows (2 MB) to one model, stopped first while its body is being parsed
    (the parser process, SIGSTOP) and then while its model call runs (held): 1-row requests to
    another model are answered meanwhile, and the large one's answer is exact."""
    root, fitted = serve_repository
    big = np.random.default_rng(0).standard_normal((50_000, 2))
    body = orjson.dumps(_v2(big), option=orjson.OPT_SERIALIZE_NUMPY)
    assert len(body) > OFFLOAD_BYTES
    gate, entered, _ = _hold_calls(monkeypatch, lambda X: len(X) == len(big))
    parsing, real_parse = threading.Event(), Parser.parse

    async def parse(self, body):  # observes, and changes nothing
        parsing.set()
        return await real_parse(self, body)

    monkeypatch.setattr(Parser, "parse", parse)
    line, iris = fitted["line:1"], fitted["iris:2"]

    async def small_answers(client, n=3):
        answers = [await client.post("/v2/models/iris/infer", json=_v2(X[i:i + 1])) for i in range(n)]
        return all(a.status_code == 200 and a.json()["outputs"][0]["data"] == iris.predict(X[i:i + 1]).tolist()
                   for i, a in enumerate(answers))

    async def scenario(url):
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            warm = await client.post("/v2/models/line/infer", json=_v2(X[:, :2][:3]))  # no parser yet
            assert warm.status_code == 200 and not _parser_pids()
            gate.set()
            first = await client.post("/v2/models/line/infer", content=body)  # starts the parser
            gate.clear()
            parsing.clear()
            (pid,) = _parser_pids()
            os.kill(pid, signal.SIGSTOP)
            try:
                large = asyncio.ensure_future(client.post("/v2/models/line/infer", content=body))
                await _until(parsing)  # the large body is on its way to the stopped parser
                during_parse = await small_answers(client)
                parse_pending = not large.done()
            finally:
                os.kill(pid, signal.SIGCONT)
            await _until(entered)
            during_call = await small_answers(client)
            call_pending = not large.done()
            gate.set()
            return first, await large, during_parse, parse_pending, during_call, call_pending

    with serving(ServeConfig((str(root / "line"), str(root / "iris")))) as url:
        first, large, during_parse, parse_pending, during_call, call_pending = asyncio.run(scenario(url))
    assert during_parse and parse_pending and during_call and call_pending
    expected = line.predict(big)
    for answer in (first, large):
        assert answer.status_code == 200
        assert same(answer.json()["outputs"][0]["data"], expected)  # floats written exactly, in chunks


def _big_rows(n: int = 30_000) -> list[list[float]]:
    rows = np.random.default_rng(0).standard_normal((n, 2)).tolist()
    assert len(orjson.dumps(rows)) > OFFLOAD_BYTES
    return rows


def test_a_large_json_request_is_refused_as_a_small_one_is(serve_repository):
    """The parser process gives the same errors as parsing on the event loop."""
    root, _ = serve_repository
    rows = _big_rows()
    rows[21_234][1] = "x"
    body = orjson.dumps({"inputs": [{"name": "input-0", "shape": [len(rows), 2], "datatype": "FP64", "data": rows}]})
    small = orjson.dumps({"inputs": [{"name": "input-0", "shape": [1, 2], "datatype": "FP64", "data": [[0, "x"]]}]})
    with serving(ServeConfig((str(root / "line"),))) as url:
        answers = [httpx.post(f"{url}/v2/models/line/infer", content=b) for b in (body, small, body[:-9])]
    assert [a.status_code for a in answers] == [400, 400, 400]
    assert answers[0].json()["error"] == answers[1].json()["error"] == \
        "input 'input-0': 'data' does not hold FP64 values (or null)"
    assert answers[2].json()["error"].startswith("request body is not valid JSON")


def test_a_parser_killed_between_requests_is_replaced(serve_repository):
    root, fitted = serve_repository
    rows = np.array(_big_rows())
    with serving(ServeConfig((str(root / "line"),))) as url:
        first = httpx.post(f"{url}/v2/models/line/infer", json=_v2(rows))
        (pid,) = _parser_pids()
        os.kill(pid, signal.SIGKILL)
        while pid in _parser_pids():
            time.sleep(0.005)
        after = httpx.post(f"{url}/v2/models/line/infer", json=_v2(rows))
        replaced = _parser_pids()
    assert first.status_code == after.status_code == 200 and len(replaced) == 1 and replaced != [pid]
    assert same(after.json()["outputs"][0]["data"], fitted["line:1"].predict(rows))
    assert _parser_pids() == []  # stopped with the server
