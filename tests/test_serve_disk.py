"""What the server does when the repository changes under it: writes in place, truncation, links out.

The server runs as a real ``aprender serve`` child process, so a SIGBUS from a mapped file that
shrinks fails the test instead of killing pytest.
"""

from __future__ import annotations

import hashlib
import os
import shutil

import httpx
import numpy as np
import pytest
from serve_helpers import X, same, serving, start_serve

import aprender
from aprender.decomposition import PCA
from aprender.serve import Policy, RepositoryError, ServeConfig, scan

_RNG = np.random.RandomState(0)
_WIDE = _RNG.normal(size=(420, 400))  # PCA(400) components: 1.28 MB, memory-mapped when served (>= 1 MiB)


def _wide_pca(seed: int) -> PCA:
    return PCA(n_components=400, random_state=seed).fit(_WIDE + seed)


def _infer(url: str, rows: np.ndarray) -> np.ndarray:
    body = {"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                        "data": rows.ravel().tolist()}]}
    reply = httpx.post(f"{url}/v2/models/wide/infer", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    return np.reshape(reply.json()["outputs"][0]["data"], (rows.shape[0], -1))


def _sha256(url: str) -> str:
    rows = {row["name"]: row for row in httpx.get(f"{url}/models", timeout=60).json()["models"]}
    return rows["wide"]["sha256"]


def test_writes_to_a_served_file_change_nothing_until_it_is_reloaded(tmp_path):
    folder = tmp_path / "repo" / "wide" / "1"
    folder.mkdir(parents=True)
    served, other = _wide_pca(0), _wide_pca(1)
    path = folder / "model.apr"
    aprender.save(served, path)
    aprender.save(other, tmp_path / "other.apr")
    original, replacement = path.read_bytes(), (tmp_path / "other.apr").read_bytes()
    assert len(original) == len(replacement) >= 1 << 20 and original != replacement
    rows = _WIDE[:3]
    process, url, _ = start_serve(str(tmp_path / "repo"), "--api-key", "k")
    try:
        assert same(_infer(url, rows), served.transform(rows))
        assert _sha256(url) == hashlib.sha256(original).hexdigest()

        with open(path, "r+b") as f:  # `cp other.apr model.apr`: the same inode, rewritten in place
            f.write(replacement)
        assert same(_infer(url, rows), served.transform(rows))
        assert _sha256(url) == hashlib.sha256(original).hexdigest()

        os.truncate(path, 100)  # a map of the file itself would raise SIGBUS on the next read
        assert same(_infer(url, rows), served.transform(rows))
        assert process.poll() is None

        with open(path, "r+b") as f:
            f.write(replacement)
        headers = {"Authorization": "Bearer k"}
        reload = httpx.post(f"{url}/v2/repository/models/wide/load", headers=headers, timeout=60)
        assert reload.status_code == 200, reload.text
        assert same(_infer(url, rows), other.transform(rows))  # the answers and the digest change together
        assert _sha256(url) == hashlib.sha256(replacement).hexdigest()
    finally:
        process.terminate()
        code = process.wait(60)
        process.stderr.close()
    assert code == 0


def test_links_out_of_the_repository_are_refused_and_never_quoted(tmp_path):
    secret = tmp_path / "shadow"
    secret.write_bytes(b"root:*:19000:0:99999:7:::\n")
    repo = tmp_path / "repo"
    (repo / "x" / "1").mkdir(parents=True)
    os.symlink(secret, repo / "x" / "1" / "model.apr")
    with pytest.raises(RepositoryError, match="resolves outside the repository") as info:
        scan([repo], Policy())
    assert "726f6f74" not in str(info.value) and "root:" not in str(info.value)
    # allowed explicitly, the link is followed: it is then refused as what it is, still unquoted
    with pytest.raises(RepositoryError, match="unrecognised file format") as info:
        scan([repo], Policy(allow_outside_links=True))
    assert "726f6f74" not in str(info.value) and "root:" not in str(info.value)


def test_a_link_out_added_later_is_refused_by_the_load_route(tmp_path, serve_repository):
    root, fitted = serve_repository
    repo = tmp_path / "repo"
    shutil.copytree(root / "line", repo / "line")
    secret = tmp_path / "shadow"
    secret.write_bytes(b"root:*:19000:0:99999:7:::\n")
    with serving(ServeConfig((str(repo),), api_key="k")) as url:
        (repo / "x" / "1").mkdir(parents=True)
        os.symlink(secret, repo / "x" / "1" / "model.apr")
        reply = httpx.post(f"{url}/v2/repository/models/x/load", headers={"Authorization": "Bearer k"})
        assert reply.status_code == 400
        assert "resolves outside the repository" in reply.text
        assert "726f6f74" not in reply.text and "root:" not in reply.text
        # a link inside the repository is served as usual
        (repo / "y" / "1").mkdir(parents=True)
        os.symlink(repo / "line" / "1" / "model.apr", repo / "y" / "1" / "model.apr")
        reply = httpx.post(f"{url}/v2/repository/models/y/load", headers={"Authorization": "Bearer k"})
        assert reply.status_code == 200, reply.text
        answer = httpx.post(f"{url}/predict", json={"model_id": "y", "features": X[:2, :2].tolist()})
        assert same(answer.json()["prediction"], fitted["line:1"].predict(X[:2, :2]))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_path_that_is_no_regular_file_when_opened_is_refused_at_once(tmp_path, kind):
    """The scan sees a regular file, but the path may be swapped before the load opens it: a FIFO would
    block the open for ever (in a thread no one can stop), a device would read without end."""
    import threading

    from aprender.serve._snapshot import NotAFile, snapshot

    path = tmp_path / "model.apr"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("/dev/zero", path)
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            with snapshot(path):
                outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome and isinstance(outcome[0], NotAFile), outcome
    assert "is not a regular file" in str(outcome[0])
