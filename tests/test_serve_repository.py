"""The model repository of ``aprender serve``: layout, settings, refusals, signatures; the CLI's checks."""

from __future__ import annotations

import asyncio
import shutil

import numpy as np
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from serve_helpers import SIGNING_KEY, X, y

import aprender
from aprender.cli import main
from aprender.format import apr
from aprender.linear_model import LogisticRegression
from aprender.serve import Batcher, Overloaded, Policy, RepositoryError, Settings, scan

TRUSTED = SIGNING_KEY.public_key().public_bytes_raw()


@pytest.fixture(scope="module")
def repo(serve_repository):
    return serve_repository[0]


def test_layout_versions_and_settings(repo):
    models = scan([repo], Policy())
    assert sorted(models) == ["forest", "iris", "line", "pca"]
    assert list(models["iris"]) == [1, 2]
    iris = models["iris"][2]
    assert (iris.format, iris.mmap, iris.settings.version) == ("apr", True, "v2-prod")
    assert (models["pca"][1].format, models["pca"][1].estimator) == ("gguf", "PCA")
    assert scan([repo / "iris"], Policy())["iris"].keys() == {1, 2}  # one model's folder


@pytest.mark.parametrize("suffix", [".pkl", ".pickle", ".joblib"])
def test_pickles_are_refused_unopened(tmp_path, suffix):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(b"\x80\x04cos\nsystem\n")  # would run code if unpickled
    with pytest.raises(RepositoryError, match=r"never loads it\. .*joblib\.load"):
        scan([path], Policy())
    version = tmp_path / "repo" / "m" / "1"
    version.mkdir(parents=True)
    shutil.copy(path, version / path.name)
    with pytest.raises(RepositoryError, match=r"aprender\.save"):
        scan([tmp_path / "repo"], Policy())


def test_onnx_unknown_suffix_and_empty_folders_are_refused(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")
    with pytest.raises(RepositoryError, match="ONNX files are not served"):
        scan([tmp_path / "m.onnx"], Policy())
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(RepositoryError, match=r"cannot serve a '\.txt' file"):
        scan([tmp_path / "m.txt"], Policy())
    (tmp_path / "empty").mkdir()
    with pytest.raises(RepositoryError, match="no models"):
        scan([tmp_path / "empty"], Policy())
    (tmp_path / "r" / "m" / "1").mkdir(parents=True)
    with pytest.raises(RepositoryError, match="no model file"):
        scan([tmp_path / "r"], Policy())
    with pytest.raises(FileNotFoundError):
        scan([tmp_path / "missing"], Policy())


@pytest.mark.parametrize(("settings", "message"), [
    ({"max_batch_size": -1}, "max_batch_size"),
    ({"max_batch_time": "soon"}, "max_batch_time"),
    ({"outputs": [{"name": "explain"}]}, "unknown output 'explain'"),
    ({"name": "a:b"}, "'name'"),
    ([], "JSON object"),
])
def test_bad_settings(settings, message):
    with pytest.raises(RepositoryError, match=message):
        Settings.from_json(settings)


def test_settings_file_that_is_not_json(tmp_path):
    build = tmp_path / "m" / "1"
    build.mkdir(parents=True)
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), build / "model.apr")
    (tmp_path / "m" / "model-settings.json").write_text("{oops")
    with pytest.raises(RepositoryError, match="not valid JSON"):
        scan([tmp_path], Policy())


def test_signatures(repo, tmp_path):
    line = repo / "line" / "1" / "model.apr"
    assert scan([line], Policy(True, (TRUSTED,)))["model"][1].signature == "trusted"
    other = Ed25519PrivateKey.from_private_bytes(bytes(32)).public_key().public_bytes_raw()
    with pytest.raises(RepositoryError, match="not a --trusted-key"):
        scan([line], Policy(True, (other,)))
    with pytest.raises(RepositoryError, match="not signed and --require-signature"):
        scan([repo / "iris"], Policy(True, (TRUSTED,)))
    tampered = tmp_path / "tampered.apr"
    data = bytearray(line.read_bytes())
    data[100] ^= 1
    tampered.write_bytes(bytes(data))
    with pytest.raises(RepositoryError, match="tampered"):
        scan([tampered], Policy())


def test_encrypted_and_duplicate_names_are_refused(tmp_path):
    model = LogisticRegression(max_iter=500).fit(X, y)
    apr.save_encrypted(model, tmp_path / "secret.apr", "pw")
    with pytest.raises(RepositoryError, match="encrypted"):
        scan([tmp_path / "secret.apr"], Policy())
    (tmp_path / "a").mkdir()
    aprender.save(model, tmp_path / "a" / "m.apr")
    aprender.save(model, tmp_path / "m.safetensors")
    with pytest.raises(RepositoryError, match="already served"):
        scan([tmp_path / "a" / "m.apr", tmp_path / "m.safetensors"], Policy())


def test_cli_help(capsys):
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: aprender serve ") and "--json" in out and "127.0.0.1" in out


def test_cli_refuses_before_binding(tmp_path, capsys):
    (tmp_path / "model.joblib").write_bytes(b"not opened")
    assert main(["serve", str(tmp_path / "model.joblib"), "--port", "1"]) == 1
    assert "aprender.save(joblib.load(" in capsys.readouterr().err
    model = tmp_path / "m.apr"
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), model)
    assert main(["serve", str(model), "--require-signature"]) == 2
    assert "--require-signature needs at least one --trusted-key" in capsys.readouterr().err
    key = tmp_path / "trusted.pub"
    key.write_bytes(SIGNING_KEY.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
    assert main(["serve", str(model), "--require-signature", "--trusted-key", str(key)]) == 1
    assert "not signed" in capsys.readouterr().err
    assert main(["serve", str(model), "--json", "--require-signature", "--trusted-key", str(key)]) == 1
    assert "not signed" in capsys.readouterr().out  # --json reports the error as JSON on stdout


def test_batcher_merges_splits_and_isolates_failures():
    calls = []

    def run(X):
        calls.append(X.shape[0])
        if np.isnan(X).any():
            raise ValueError("NaN row")
        return {"double": 2 * X, "sum": X.sum(axis=1)}

    async def scenario():
        batcher = Batcher(run, max_batch_size=4, max_batch_time=0.0, max_queue=8)
        rows = [np.full((1, 2), float(i)) for i in range(5)]
        rows[3] = np.array([[np.nan, 1.0]])
        first = asyncio.ensure_future(batcher.submit(rows[0]))
        await asyncio.sleep(0)  # the batcher is idle: the first request is dispatched alone, at once
        rest = [asyncio.ensure_future(batcher.submit(r)) for r in rows[1:]]
        return await asyncio.gather(first, *rest, return_exceptions=True)

    results = asyncio.run(scenario())
    assert calls[0] == 1  # the first request found the batcher idle and went at once
    assert calls[1] == 4  # the next four waited together ... and failed on the NaN row,
    assert calls[2:] == [1, 1, 1, 1]  # so they were rerun one by one
    assert isinstance(results[3], ValueError)
    for i in (0, 1, 2, 4):
        assert results[i]["double"].tolist() == [[2.0 * i, 2.0 * i]]
        assert results[i]["sum"].tolist() == [2.0 * i]


def test_batcher_queue_is_bounded_and_respects_rows():
    calls = []

    def run(X):
        calls.append(X.shape[0])
        return {"x": X}

    async def scenario():
        batcher = Batcher(run, max_batch_size=3, max_batch_time=0.0, max_queue=2)
        first = asyncio.ensure_future(batcher.submit(np.zeros((1, 1))))
        await asyncio.sleep(0)
        waiting = [asyncio.ensure_future(batcher.submit(np.zeros((2, 1)))) for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(Overloaded):
            await batcher.submit(np.zeros((1, 1)))
        await asyncio.gather(first, *waiting)

    asyncio.run(scenario())
    assert calls == [1, 2, 2]  # 2 + 2 rows exceed max_batch_size=3: two calls


def test_batcher_waits_for_rows_up_to_max_batch_time():
    calls = []

    def run(X):
        calls.append(X.shape[0])
        return {"x": X}

    async def scenario():
        batcher = Batcher(run, max_batch_size=4, max_batch_time=5.0, max_queue=8)
        first = asyncio.ensure_future(batcher.submit(np.zeros((1, 1))))
        await asyncio.sleep(0)
        # queued while the first call runs: the next call waits until 4 rows are there (not 5 s)
        rest = [asyncio.ensure_future(batcher.submit(np.zeros((1, 1)))) for _ in range(4)]
        await asyncio.gather(first, *rest)

    asyncio.run(scenario())
    assert calls == [1, 4]


def test_batcher_runs_small_calls_on_the_event_loop_and_still_merges():
    import threading

    calls = []

    def run(X):
        calls.append((X.shape[0], threading.current_thread() is threading.main_thread()))
        return {"x": X}

    async def scenario():
        batcher = Batcher(run, max_batch_size=4, max_batch_time=0.0, max_queue=8, inline_rows=4)
        first = asyncio.ensure_future(batcher.submit(np.zeros((1, 1))))
        rest = [asyncio.ensure_future(batcher.submit(np.zeros((1, 1)))) for _ in range(3)]
        await asyncio.gather(first, *rest)
        await batcher.submit(np.zeros((5, 1)))  # more than inline_rows: in a thread

    asyncio.run(scenario())
    assert calls == [(4, True), (5, False)]


def test_settings_round_trip_from_file(tmp_path):
    folder = tmp_path / "m"
    (folder / "3").mkdir(parents=True)
    aprender.save(LogisticRegression(max_iter=500).fit(X, y), folder / "3" / "model.safetensors")
    (folder / "model-settings.json").write_bytes(orjson.dumps({
        "name": "served", "implementation": "mlserver_sklearn.SKLearnModel", "max_batch_size": 16,
        "max_batch_time": 0.002, "outputs": [{"name": "predict_proba"}], "parameters": {"version": "gold"}}))
    version = scan([tmp_path], Policy())["served"][3]
    assert version.settings == Settings("served", 16, 0.002, ("predict_proba",), "gold")
