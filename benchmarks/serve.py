"""``aprender serve`` beside MLServer 1.7 under load on loopback, with wrk (Debian package ``wrk``).

Both servers serve the same fitted scikit-learn models: aprender from ``.apr`` files, MLServer
(``mlserver_sklearn.SKLearnModel``) from joblib files of the same objects, or for a lone XGBoost or
LightGBM model its own runtime (``mlserver_xgboost``, ``mlserver_lightgbm``) on the library's native
model file. Both answer the same
Open Inference Protocol v2 JSON bodies, checked to give 200 and the same predictions before any
timing. Each server is one process pinned to one core; wrk and this script are pinned to the
other. Per row, the servers' wrk runs are interleaved in seeded shuffled rounds (after an untimed
warm-up run each); every number is the median of ``--runs`` runs of ``--seconds`` each, with the
min-max spread. A second table measures aprender alone (protocols, adaptive batching, start-up
and memory).

MLServer runs from a venv of its own that this script builds once with ``python -m venv`` and
pip (``--mlserver-venv``, default ``~/.cache/aprender-bench/mlserver-venv``): ``mlserver``,
``mlserver-sklearn``, ``mlserver-xgboost`` and ``mlserver-lightgbm`` 1.7, with this environment's
scikit-learn, numpy, scipy, pandas, xgboost and lightgbm versions
so that the joblib files load and both servers compute with the same libraries. Nothing is
installed into this environment. Not run in CI. Needs ``wrk`` (``apt-get install wrk``), the
``serve`` extra, 2 cores and, on first run, PyPI.

    python benchmarks/serve.py [--seconds 5] [--runs 3] [--no-write] [--mlserver-venv PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import joblib
import lightgbm
import numpy as np
import orjson
import pandas as pd
from _report import machine, shuffled_rounds, write_section
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_iris, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from xgboost import XGBClassifier

import aprender

#: The server's core and the one wrk (and this script) run on.
SERVER_CORE, CLIENT_CORE = 1, 0
#: Concurrent connections of the comparison rows.
CONNECTIONS = 16
#: The goal: aprender's req/s at least this many times MLServer's, at an equal or lower p99.
GOAL = 5.0
MLSERVER = ("mlserver==1.7.*", "mlserver-sklearn==1.7.*", "mlserver-xgboost==1.7.*", "mlserver-lightgbm==1.7.*")
DEFAULT_VENV = Path.home() / ".cache" / "aprender-bench" / "mlserver-venv"
#: Written into the venv once it is complete: the requirements it was built with.
_MARKER = "aprender-bench.json"
#: MLServer's adaptive batching for the ``forest-batched`` row: aprender's default row limit for
#: forests; MLServer batches only with a wait window (``max_batch_time`` > 0), aprender without one.
MLSERVER_BATCHING = {"max_batch_size": 64, "max_batch_time": 0.001}
JSON_HEADERS = {"Content-Type": "application/json"}


# -- MLServer's venv -------------------------------------------------------------------------------

def _requirements() -> list[str]:
    import scipy
    import sklearn
    import xgboost

    return [*MLSERVER, f"scikit-learn=={sklearn.__version__}", f"numpy=={np.__version__}",
            f"scipy=={scipy.__version__}", f"pandas=={pd.__version__}", f"xgboost=={xgboost.__version__}",
            f"lightgbm=={lightgbm.__version__}"]


def _foreign_env() -> dict[str, str]:
    """This environment's variables without what would point another interpreter at our packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def mlserver_venv(path: Path) -> Path:
    """The ``bin`` folder of the MLServer venv at ``path``, built first if it is missing or was built
    for other versions; exits saying why when it cannot be built."""
    wanted = _requirements()
    marker = path / _MARKER
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return path / "bin"
    if path.exists() and not marker.exists():
        sys.exit(f"{path} exists and is not an MLServer venv built by this script: remove it or pass another "
                 "--mlserver-venv")
    if not (3, 9) <= sys.version_info[:2] <= (3, 12):
        sys.exit(f"MLServer 1.7 installs on Python 3.9-3.12, this is {sys.version.split()[0]}: run this script "
                 "with one of those")
    shutil.rmtree(path, ignore_errors=True)  # ours, built for other versions
    print(f"building the MLServer venv {path}: {' '.join(wanted)}", file=sys.stderr)
    python = str(path / "bin" / "python")
    try:
        for command in ([sys.executable, "-m", "venv", str(path)],
                        [python, "-m", "pip", "install", "--quiet", *wanted],
                        [python, "-c", "import mlserver, mlserver_sklearn, mlserver_xgboost, mlserver_lightgbm"]):
            subprocess.run(command, check=True, capture_output=True, text=True, env=_foreign_env())
    except (OSError, subprocess.CalledProcessError) as error:
        shutil.rmtree(path, ignore_errors=True)
        detail = getattr(error, "stderr", None) or str(error)
        sys.exit(f"cannot build the MLServer venv at {path}; {detail.strip()[-3000:]}")
    marker.write_text(json.dumps(wanted))
    return path / "bin"


# -- servers ---------------------------------------------------------------------------------------

def _free_ports(n: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:  # all bound at once, so the ports differ
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


@dataclass(frozen=True)
class Server:
    """A running server: its name in the tables, base URL, process id and seconds to ready."""

    name: str
    url: str
    pid: int
    ready: float


def _server_env(env: Mapping[str, str]) -> dict[str, str]:
    # One core each: a BLAS thread pool as wide as the machine would only contend with itself.
    return {**env, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _server(name: str, command: list[str], port: int, *, env: Mapping[str, str],
            cwd: Path | None = None) -> Iterator[Server]:
    """``command`` pinned to SERVER_CORE until ``/v2/health/ready`` answers 200; stopped on exit."""
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        start = time.perf_counter()
        process = subprocess.Popen(["taskset", "-c", str(SERVER_CORE), *command], stdout=log, stderr=log,
                                   env=_server_env(env), cwd=cwd)
        try:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{url}/v2/health/ready").status_code == 200:
                        break
                if process.poll() is not None or time.perf_counter() - start > 300:
                    log.seek(0)
                    raise RuntimeError(f"{name} ({' '.join(command)}) did not become ready:\n"
                                       + log.read().decode(errors="replace")[-3000:])
                time.sleep(0.01)
            yield Server(name, url, process.pid, time.perf_counter() - start)
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def aprender_server(*args: str) -> contextlib.AbstractContextManager[Server]:
    """``python -m aprender serve ARGS`` on a free loopback port."""
    (port,) = _free_ports(1)
    return _server("aprender", [sys.executable, "-m", "aprender", "serve", *args, "--port", str(port),
                                "--log-level", "warning"], port, env=os.environ)


def mlserver_server(bin_dir: Path, repository: Path) -> contextlib.AbstractContextManager[Server]:
    """``mlserver start REPOSITORY`` on free loopback ports, its inference in the server process."""
    http, grpc, metrics = _free_ports(3)
    # parallel_workers 0: inference in the one server process, as aprender does. debug false: no
    # access log (aprender writes none). Its Prometheus middleware stays on, as aprender records the
    # same rest_server_requests metrics on every request; gRPC cannot be turned off (idle here).
    settings = {"host": "127.0.0.1", "http_port": http, "grpc_port": grpc, "metrics_port": metrics,
                "parallel_workers": 0, "debug": False, "load_models_at_startup": True}
    (repository / "settings.json").write_text(json.dumps(settings))
    return _server("MLServer", [str(bin_dir / "mlserver"), "start", str(repository)], http,
                   env=_foreign_env(), cwd=repository)


# -- wrk -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    """One server, route and request body to load."""

    server: Server
    path: str
    body: bytes
    headers: Mapping[str, str]


def _lua_string(data: bytes) -> str:
    return '"' + "".join(f"\\{b}" for b in data) + '"'


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(target: Target, connections: int, seconds: int) -> dict:
    """One wrk run; requests/s, latency percentiles (ms), errors, and the server's CPU µs per request
    (which, unlike requests/s, does not depend on what else the machine is doing)."""
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(target.body)}"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in target.headers.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    try:
        cpu = _cpu_seconds(target.server.pid)
        out = subprocess.run(["taskset", "-c", str(CLIENT_CORE), "wrk", "-t", "1", "-c", str(connections),
                              "-d", f"{seconds}s", "--latency", "-s", script.name, target.server.url + target.path],
                             capture_output=True, text=True, check=True).stdout
        cpu = _cpu_seconds(target.server.pid) - cpu
    finally:
        os.unlink(script.name)

    def ms(label: str) -> float:
        value, unit = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    errors = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    errors += sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": ms("50%"), "p99": ms("99%"),
            "errors": errors, "cpu_us": cpu / requests * 1e6 if requests else float("nan")}


def measure(targets: Mapping[str, Target], connections: int, seconds: int, runs: int) -> dict[str, list[dict]]:
    """``runs`` wrk runs of every target, interleaved in seeded shuffled rounds, after one untimed
    1-second run of each (first requests, allocator and caches)."""
    for target in targets.values():
        wrk(target, connections, 1)
    results: dict[str, list[dict]] = {name: [] for name in targets}
    for round_ in shuffled_rounds(list(targets), runs):
        for name in round_:
            results[name].append(wrk(targets[name], connections, seconds))
    return results


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def _fmt(runs: list[dict]) -> list[str]:
    rps = [r["rps"] for r in runs]
    return [f"{_median(runs, 'rps'):,.0f}", f"{min(rps):,.0f}-{max(rps):,.0f}", f"{_median(runs, 'p50'):.2f}",
            f"{_median(runs, 'p99'):.2f}", str(sum(r["errors"] for r in runs)), f"{_median(runs, 'cpu_us'):,.0f}"]


# -- models and requests ---------------------------------------------------------------------------

def _json(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)


def v2_tensor(rows: np.ndarray) -> bytes:
    """A v2 JSON request of one ``input-0`` FP64 tensor."""
    return _json({"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                              "data": rows.ravel().tolist()}]})


def v2_frame(frame: pd.DataFrame) -> bytes:
    """MLServer's pandas-codec v2 JSON request: one input per column, BYTES for strings."""
    inputs = []
    for column in frame.columns:
        strings = not pd.api.types.is_numeric_dtype(frame[column])
        inputs.append({"name": column, "shape": [len(frame)], "datatype": "BYTES" if strings else "FP64",
                       "data": frame[column].astype(str if strings else float).tolist()})
    return _json({"parameters": {"content_type": "pd"}, "inputs": inputs})


def _binary_infer(rows: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = _json({"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                                "parameters": {"binary_data_size": rows.nbytes}}],
                    "parameters": {"binary_data_output": True}})
    return header + rows.astype("<f8").tobytes(), {"Inference-Header-Content-Length": str(len(header))}


def _churn_frame(n: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """A DataFrame of number and string columns, and labels that depend on both."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.uniform(18, 80, n).round(), "income": rng.normal(50, 15, n).round(1),
                          "city": rng.choice(["Lyon", "Paris", "Nice", "Lille", "Nantes"], n),
                          "plan": rng.choice(["basic", "pro", "team"], n)})
    score = (frame["age"] - 45) / 15 + (frame["city"] == "Paris") - (frame["plan"] == "basic")
    return frame, (score + rng.normal(0, 0.5, n) > 0).to_numpy().astype(int)


@dataclass(frozen=True)
class Model:
    """A fitted model, the one-row v2 body both servers get, its own predictions for that row, the
    MLServer runtime that serves it (a key of :data:`RUNTIMES`) and what that runtime answers."""

    name: str
    estimator: object
    body: bytes
    expected: list
    runtime: str = "sklearn"
    mlserver_expected: list | None = None


def _save_joblib(estimator: object, path: Path) -> None:
    joblib.dump(estimator, path)


def _save_xgboost(estimator: object, path: Path) -> None:
    estimator.save_model(path)  # type: ignore[attr-defined]


def _save_lightgbm(estimator: object, path: Path) -> None:
    estimator.booster_.save_model(path)  # type: ignore[attr-defined]


#: MLServer runtime -> (its implementation, the file it loads, how that file is written).
RUNTIMES = {"sklearn": ("mlserver_sklearn.SKLearnModel", "model.joblib", _save_joblib),
            "xgboost": ("mlserver_xgboost.XGBoostModel", "model.json", _save_xgboost),
            "lightgbm": ("mlserver_lightgbm.LightGBMModel", "model.bst", _save_lightgbm)}


def fit_models() -> list[Model]:
    X, y = load_iris(return_X_y=True)
    Xf, yf = make_classification(n_samples=2000, n_features=20, random_state=0)
    frame, yd = _churn_frame(2000)
    pipeline = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                                ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])]),
                             LogisticRegression(max_iter=1000))
    boosted = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                               ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])]),
                            XGBClassifier(n_estimators=200, max_depth=6, random_state=0, n_jobs=1))
    xgb = XGBClassifier(n_estimators=200, max_depth=6, random_state=0, n_jobs=1).fit(Xf, yf)
    lgbm = lightgbm.LGBMClassifier(n_estimators=200, random_state=0, n_jobs=1, verbose=-1).fit(Xf, yf)
    fitted = [("iris", LogisticRegression(max_iter=1000).fit(X, y), X[:1], "sklearn"),
              ("forest", RandomForestClassifier(n_estimators=100, random_state=0).fit(Xf, yf), Xf[:1], "sklearn"),
              ("frame", pipeline.fit(frame, yd), frame.iloc[:1], "sklearn"),
              ("xgboost", xgb, Xf[:1], "xgboost"),
              ("lightgbm", lgbm, Xf[:1], "lightgbm"),
              ("frame-xgboost", boosted.fit(frame, yd), frame.iloc[:1], "sklearn")]
    # MLServer's lightgbm runtime answers Booster.predict: the positive class's probability, not the label.
    return [Model(name, estimator, v2_frame(row) if isinstance(row, pd.DataFrame) else v2_tensor(row),
                  estimator.predict(row).tolist(), runtime,
                  estimator.booster_.predict(row).tolist() if runtime == "lightgbm" else None)
            for name, estimator, row, runtime in fitted]


def write_repositories(models: list[Model], work: Path) -> tuple[Path, Path]:
    """aprender's repository (``NAME/1/model.apr``) and MLServer's (``NAME/`` with the file its runtime
    loads and its ``model-settings.json``; ``forest-batched`` is ``forest`` with MLServer's adaptive batching)."""
    apr, mls = work / "aprender", work / "mlserver"
    for model in models:
        (apr / model.name / "1").mkdir(parents=True)
        aprender.save(model.estimator, apr / model.name / "1" / "model.apr")
        batched = [("", {})] + ([("-batched", MLSERVER_BATCHING)] if model.name == "forest" else [])
        implementation, file, save = RUNTIMES[model.runtime]
        for suffix, batching in batched:
            folder = mls / (model.name + suffix)
            folder.mkdir(parents=True)
            save(model.estimator, folder / file)
            (folder / "model-settings.json").write_text(json.dumps(
                {"name": model.name + suffix, "implementation": implementation,
                 "parameters": {"uri": f"./{file}"}, **batching}))
    return apr, mls


def answer(target: Target) -> httpx.Response:
    """The answer to one request of ``target``; raises unless it is 200 (no run times errors)."""
    response = httpx.post(target.server.url + target.path, content=target.body, headers=dict(target.headers))
    if response.status_code != 200:
        raise RuntimeError(f"{target.server.name} {target.path} answered {response.status_code}: {response.text}")
    return response


def predictions(target: Target) -> list:
    """The ``predict`` output of one v2 request."""
    outputs = {output["name"]: output for output in answer(target).json()["outputs"]}
    return np.ravel(outputs["predict"]["data"]).tolist()


# -- the two tables --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One comparison row: a label, the aprender model and the MLServer model (same estimator)."""

    label: str
    model: str
    mlserver_model: str


ROWS = (Row("LogisticRegression (iris), 4 numbers", "iris", "iris"),
        Row("RandomForest(100), 20 numbers", "forest", "forest"),
        Row("RandomForest(100), 20 numbers; MLServer adaptive batching 64 rows / 1 ms", "forest", "forest-batched"),
        Row("DataFrame pipeline (scaler + one-hot + LogisticRegression), 2 numbers + 2 strings, pandas codec",
            "frame", "frame"),
        Row("XGBClassifier(200, depth 6), 20 numbers; MLServer's xgboost runtime on XGBoost's JSON model",
            "xgboost", "xgboost"),
        Row("LGBMClassifier(200), 20 numbers; MLServer's lightgbm runtime on LightGBM's model text",
            "lightgbm", "lightgbm"),
        Row("DataFrame pipeline (scaler + one-hot + XGBClassifier(200, depth 6)), 2 numbers + 2 strings, "
            "pandas codec", "frame-xgboost", "frame-xgboost"))


def compare(models: list[Model], apr_repo: Path, mls_repo: Path, bin_dir: Path, seconds: int,
            runs: int) -> tuple[list[list[str]], list[list[str]], dict[str, float]]:
    """The comparison rows (per server), the ratio rows, and each server's seconds to ready."""
    by_name = {model.name: model for model in models}
    table, ratios = [], []
    with aprender_server(str(apr_repo)) as ours, mlserver_server(bin_dir, mls_repo) as theirs:
        for row in ROWS:
            model = by_name[row.model]
            targets = {server.name: Target(server, f"/v2/models/{name}/infer", model.body, JSON_HEADERS)
                       for server, name in ((ours, row.model), (theirs, row.mlserver_model))}
            for target in targets.values():
                got = predictions(target)
                expected = model.expected if target.server is ours else model.mlserver_expected or model.expected
                if got != expected:
                    raise RuntimeError(f"{target.server.name} predicted {got} for {row.model}, the model "
                                       f"{expected}")
            results = measure(targets, CONNECTIONS, seconds, runs)
            for name, server_runs in results.items():
                table.append([row.label, name, str(CONNECTIONS), *_fmt(server_runs)])
            a, m = results["aprender"], results["MLServer"]
            ratio = _median(a, "rps") / _median(m, "rps") if _median(m, "rps") else float("inf")
            p99_a, p99_m = _median(a, "p99"), _median(m, "p99")
            # MLServer's own timeouts are its result, not a miss of aprender's goal.
            met = ratio >= GOAL and p99_a <= p99_m and not any(r["errors"] for r in a)
            ratios.append([row.label, f"x {ratio:.2f}", f"{p99_a:.2f} / {p99_m:.2f}", "yes" if met else "**no**"])
        ready = {ours.name: ours.ready, theirs.name: theirs.ready}
    return table, ratios, ready


def aprender_alone(models: list[Model], apr_repo: Path, work: Path, seconds: int,
                   runs: int) -> tuple[list[list[str]], tuple[float, float, float], dict[int, float], float]:
    """aprender's own rows: protocols, batching on/off, start-up, and memory of 1 vs 4 workers."""
    by_name = {model.name: model for model in models}
    X = load_iris().data
    row = X[0].tolist()
    table: list[list[str]] = []
    single = apr_repo / "iris"

    # -- small LogisticRegression over each protocol
    with aprender_server(str(single)) as server:
        cases = [
            ("`/predict`", "/predict", _json({"features": row}), JSON_HEADERS),
            ("`/v2/models/iris/infer` JSON", "/v2/models/iris/infer", by_name["iris"].body, JSON_HEADERS),
            ("`/v2/models/iris/infer` binary", "/v2/models/iris/infer", *_binary_infer(X[:1])),
            ("`/api/generate` stream:false", "/api/generate",
             _json({"model": "iris", "prompt": orjson.dumps(row).decode(), "stream": False}), JSON_HEADERS),
        ]
        for label, path, body, headers in cases:
            target = Target(server, path, body, headers)
            answer(target)
            results = measure({"aprender": target}, CONNECTIONS, seconds, runs)["aprender"]
            table.append([f"LogisticRegression (iris), {label}", str(CONNECTIONS), *_fmt(results)])

    # -- RandomForest(100), single rows, batching on vs off (two servers, interleaved)
    forest = apr_repo / "forest"
    body = by_name["forest"].body
    with aprender_server(str(forest)) as on, aprender_server(str(forest), "--max-batch-size", "1") as off:
        targets = {mode: Target(server, "/v2/models/forest/infer", body, JSON_HEADERS)
                   for mode, server in (("on", on), ("off", off))}
        for connections in (64, 1):
            results = measure(targets, connections, seconds, runs)
            for mode in ("on", "off"):
                table.append([f"RandomForest(100), v2 JSON 1 row, batching {mode}", str(connections),
                              *_fmt(results[mode])])
            on_rps, off_rps = _median(results["on"], "rps"), _median(results["off"], "rps")
            delta = _median(results["on"], "p50") - _median(results["off"], "p50")
            table.append([f"... batching on / off at {connections} connection(s)", str(connections),
                          f"x {on_rps / off_rps:.2f}" if off_rps else "n/a (off: 0 req/s)", "",
                          f"delta p50 {delta:+.2f}" if off_rps else "", "", "", ""])

    # -- start to /v2/health/ready with one small model
    starts = []
    for _ in range(runs):
        with aprender_server(str(single)) as server:
            starts.append(server.ready)
    startup = (statistics.median(starts), min(starts), max(starts))

    # -- memory: 4 workers sharing one 100 MB .apr vs one worker
    big = work / "big" / "big" / "1"
    big.mkdir(parents=True)
    rng = np.random.default_rng(0)
    Xb = rng.standard_normal((64, 1000))
    aprender.save(LinearRegression().fit(Xb, rng.standard_normal((64, 12500))), big / "model.apr")
    size_mb = (big / "model.apr").stat().st_size / 1e6
    pss = {}
    for workers in (1, 4):
        with aprender_server(str(work / "big"), "--workers", str(workers)) as server:
            answer(Target(server, "/predict", _json({"features": Xb[0]}), JSON_HEADERS))
            # every process: the workers and the parent they were forked from (it holds pages they share)
            pids = [server.pid, *_children(server.pid)]
            pss[workers] = _pss_kib([p for p in pids if Path(f"/proc/{p}").exists()]) / 1024
    return table, startup, pss, size_mb


def _pss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def _markdown(header: list[str], rows: list[list[str]], align: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=_positive, default=5, help="length of each wrk run (whole seconds)")
    parser.add_argument("--runs", type=_positive, default=3, help="timed wrk runs per server and row")
    parser.add_argument("--no-write", action="store_true", help="print only; leave benchmarks/README.md alone")
    parser.add_argument("--mlserver-venv", type=Path, default=DEFAULT_VENV, metavar="PATH",
                        help=f"MLServer's venv, built there if missing (default {DEFAULT_VENV})")
    args = parser.parse_args()
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"this benchmark needs {tool}: apt-get install {'wrk' if tool == 'wrk' else 'util-linux'}")
    if not {SERVER_CORE, CLIENT_CORE} <= os.sched_getaffinity(0):
        sys.exit(f"this benchmark pins the servers to core {SERVER_CORE} and wrk to core {CLIENT_CORE}; "
                 f"this process may run on {sorted(os.sched_getaffinity(0))}")
    bin_dir = mlserver_venv(args.mlserver_venv.expanduser())
    os.sched_setaffinity(0, {CLIENT_CORE})  # this script's own work (fitting, checks) stays off the server's core
    seconds, runs = args.seconds, args.runs
    load_before, where = os.getloadavg(), machine()
    mlserver_version = subprocess.run([str(bin_dir / "python"), "-c", "import mlserver; print(mlserver.__version__)"],
                                      capture_output=True, text=True, check=True, env=_foreign_env()).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="aprender-serve-bench-"))
    try:
        models = fit_models()
        apr_repo, mls_repo = write_repositories(models, work)
        compared, ratios, ready = compare(models, apr_repo, mls_repo, bin_dir, seconds, runs)
        alone, startup, pss, size_mb = aprender_alone(models, apr_repo, work, seconds, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    load_after = os.getloadavg()
    quiet = max(load_before[0], load_after[0]) < 2.5
    sharing = ("The machine was otherwise quiet" if quiet else "**The machine's 2 cores were shared** with other "
               "work, so every number below is noisy")
    met = sum(r[-1] == "yes" for r in ratios)
    columns = ["req/s (median)", "req/s min-max", "p50 ms", "p99 ms", "errors", "server CPU µs/request"]
    text = f"""## Serving: `aprender serve` beside MLServer {mlserver_version}, under wrk

`python benchmarks/serve.py` on {where}; wrk {seconds:g} s per run, 1 wrk thread, median of {runs} runs
(min-max spread shown). Each server is one process pinned to core {SERVER_CORE} (`taskset`), wrk to core
{CLIENT_CORE}. {sharing} (load average {load_before[0]:.1f} before, {load_after[0]:.1f} after).

### aprender / MLServer

The same fitted scikit-learn objects, saved as `.apr` for aprender and with joblib for MLServer
(`mlserver_sklearn.SKLearnModel`, `model-settings.json` with `parameters.uri`), or for the lone XGBoost and
LightGBM models as the library's native file for MLServer's own runtime (`mlserver_xgboost.XGBoostModel` on
`save_model`'s JSON, `mlserver_lightgbm.LightGBMModel` on the booster's model text; that runtime answers
`Booster.predict`, the positive class's probability, where aprender answers the label and the probabilities),
MLServer in a venv of its own with the same scikit-learn, numpy, scipy, pandas, XGBoost and LightGBM. Both get
the same v2 JSON body, one row per request: one `input-0` FP64 tensor `[1, n]`, or for the DataFrame models
MLServer's pandas codec (`"content_type": "pd"`, one input per column, BYTES for strings); before timing, each
server answered it with 200 and the model's own prediction. Each row alternates the two servers in seeded
shuffled rounds after an untimed 1 s warm-up each,
{CONNECTIONS} connections. Both at their defaults but for: MLServer `parallel_workers: 0` (inference in its
one server process, as aprender does) and `debug: false` (no access log; aprender writes none). Left on:
Prometheus metrics in both (aprender has no switch for them, and records the same `rest_server_requests`
metrics MLServer's middleware does) and MLServer's gRPC server (idle; it cannot be turned off). aprender
batches concurrent rows of forests (up to 64, no wait) by default, MLServer does not: the third row gives
MLServer adaptive batching of up to 64 rows with its shortest useful window (it batches only with a wait).

{_markdown(["model, request", "server", "connections", *columns], compared, ["---", "---"] + ["---:"] * 7)}

{_markdown(["model, request", "aprender / MLServer req/s", "p99 ms aprender / MLServer",
            f"goal (>= {GOAL:g}x, p99 <=, no aprender errors)"], ratios, ["---", "---:", "---:", "---"])}

The goal holds on {met} of {len(ratios)} rows. Start to `/v2/health/ready` with all the models above:
aprender {ready["aprender"]:.2f} s, MLServer {ready["MLServer"]:.2f} s (one start each).

### aprender alone

{_markdown(["scenario", "connections", *columns], alone, ["---"] + ["---:"] * 7)}

errors are wrk's non-2xx answers and timeouts (over 2 s). Server CPU µs/request is the server process's
user + system time (`/proc/PID/stat`) over a run divided by the requests it answered: unlike req/s it
does not depend on what else the machine does; 1e6 / it is what one core can serve.

- Start to `/v2/health/ready` with one small model (process start, imports, scan, load, warm-up):
  median {startup[0]:.2f} s (min {startup[1]:.2f}, max {startup[2]:.2f}).
- Memory, one {size_mb:.0f} MB `.apr` LinearRegression memory-mapped: 1 worker {pss[1]:.0f} MiB PSS,
  4 workers {pss[4]:.0f} MiB PSS in total, the parent they are forked from included (x {pss[4] / pss[1]:.2f};
  target <= 1.5x). PSS splits shared pages (the page cache of the mapped weights, and the imports and
  models the workers share copy-on-write with their parent) between the processes that map them;
  the 4 workers and their parent take {pss[4] - pss[1]:.0f} MiB more than one worker.
"""
    print(text)
    if not args.no_write:
        write_section("serve", text)


if __name__ == "__main__":
    main()
