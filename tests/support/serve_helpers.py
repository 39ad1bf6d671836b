"""A real aprender server on an ephemeral loopback port, and a repository of small models to serve."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sklearn.datasets import load_iris

import aprender
from aprender.decomposition import PCA
from aprender.ensemble import RandomForestClassifier
from aprender.format import apr
from aprender.linear_model import LinearRegression, LogisticRegression
from aprender.serve import ServeConfig, create_app
from aprender.serve._app import server_options

X, y = load_iris(return_X_y=True)
SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _save(model: Any, path: Path, **options: Any) -> Any:
    path.parent.mkdir(parents=True, exist_ok=True)
    aprender.save(model, path, **options)
    return model


def build_repository(root: Path) -> dict[str, Any]:
    """``root/<name>/<N>/model.*`` with models of every served format; returns the fitted models."""
    models = {
        "iris:1": _save(LogisticRegression(max_iter=500, C=0.5).fit(X, y), root / "iris" / "1" / "model.apr"),
        "iris:2": _save(LogisticRegression(max_iter=500).fit(X, y), root / "iris" / "2" / "model.apr"),
        "forest:1": _save(RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y),
                          root / "forest" / "1" / "model.safetensors"),
        "pca:1": _save(PCA(n_components=3).fit(X), root / "pca" / "1" / "model.gguf"),
    }
    (root / "iris" / "model-settings.json").write_bytes(orjson.dumps({"name": "iris", "parameters":
                                                                      {"version": "v2-prod"}}))
    line = LinearRegression().fit(X[:, :2], X[:, 2])
    path = root / "line" / "1" / "model.apr"
    path.parent.mkdir(parents=True)
    apr.save_signed(line, path, SIGNING_KEY)
    models["line:1"] = line
    return models


@contextlib.contextmanager
def serving(config: ServeConfig, wait_ready: bool = True) -> Iterator[str]:
    """Run the app with uvicorn in a thread on 127.0.0.1:<ephemeral>; yield its base URL."""
    app = create_app(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                                           **server_options(config)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        while wait_ready and httpx.get(f"{url}/ready").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the test server's models did not become ready")
            time.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def same(a: Any, b: Any) -> bool:
    """Exactly equal arrays: same shape, same values (float64 bits included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype.kind == b.dtype.kind and bool(np.array_equal(a, b))


def start_serve(*args: str) -> tuple[subprocess.Popen, str, float]:
    """``aprender serve ARGS --port 0`` in a child process: (process, its URL once ready, a deadline)."""
    process = subprocess.Popen([sys.executable, "-m", "aprender", "serve", *args, "--port", "0", "--log-level",
                                "info"], stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = None
    deadline = time.monotonic() + 300  # a guard against a hang, not a timing assertion
    try:
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            match = re.search(r"Uvicorn running on (http://[\d.]+:\d+)", line)
            url = match.group(1) if match else None
        assert url is not None, "the server did not start"
        while httpx.get(f"{url}/v2/health/ready").status_code != 200:  # answered by a worker
            assert time.monotonic() < deadline
            time.sleep(0.05)
    except BaseException:
        process.kill()
        process.wait()
        process.stderr.close()
        raise
    return process, url, deadline
