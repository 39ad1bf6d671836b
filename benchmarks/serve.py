"""``aprender serve`` under load on loopback, with wrk (Debian package ``wrk``).

Each scenario runs ``wrk`` against a real server started with ``python -m aprender serve``
on 127.0.0.1. Paired scenarios (batching on/off: two servers side by side) alternate their order
run by run; every number is the median of 3 runs of ``--seconds`` each, with the min-max spread.
This machine's 2 cores are shared with other engineers and with wrk itself, so absolute numbers are low and
noisy: read the ratios. Not run in CI. Needs ``wrk`` (``apt-get install wrk``) and the
``serve`` extra.

    python benchmarks/serve.py [--seconds 5] [--no-write]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import orjson
from _report import machine, write_section
from sklearn.datasets import load_iris, make_classification

import aprender
from aprender.ensemble import RandomForestClassifier
from aprender.linear_model import LinearRegression, LogisticRegression

RUNS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(*args: str) -> Iterator[tuple[str, subprocess.Popen, float]]:
    """``aprender serve ARGS`` on a free loopback port; yields (url, process, seconds to ready)."""
    port = _free_port()
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "aprender", "serve", *args, "--port", str(port),
                                "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/v2/health/ready").status_code == 200:
                    break
            if process.poll() is not None or time.perf_counter() - start > 300:
                raise RuntimeError(f"aprender serve {' '.join(args)} did not become ready")
            time.sleep(0.01)
        yield url, process, time.perf_counter() - start
    finally:
        process.terminate()
        process.wait(60)


def _lua_string(data: bytes) -> str:
    return '"' + "".join(f"\\{b}" for b in data) + '"'


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, path: str, body: bytes, headers: dict[str, str], connections: int, seconds: int,
        pid: int) -> dict:
    """One wrk run; requests/s, latency percentiles (ms), errors, and the server's CPU µs per request
    (which, unlike requests/s, does not depend on what else the machine is doing)."""
    lines = ['wrk.method = "POST"', f"wrk.body = {_lua_string(body)}"]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    try:
        cpu = _cpu_seconds(pid)
        out = subprocess.run(["wrk", "-t", "1", "-c", str(connections), "-d", f"{seconds}s", "--latency",
                              "-s", script.name, url + path], capture_output=True, text=True, check=True).stdout
        cpu = _cpu_seconds(pid) - cpu
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


def _median(runs: list[dict], key: str) -> tuple[float, float, float]:
    values = [r[key] for r in runs]
    return statistics.median(values), min(values), max(values)


def _fmt(runs: list[dict]) -> list[str]:
    rps, lo, hi = _median(runs, "rps")
    p50 = _median(runs, "p50")[0]
    p99 = _median(runs, "p99")[0]
    cpu = _median(runs, "cpu_us")[0]
    return [f"{rps:,.0f}", f"{lo:,.0f}-{hi:,.0f}", f"{p50:.2f}", f"{p99:.2f}", str(sum(r["errors"] for r in runs)),
            f"{cpu:,.0f}"]


def _json(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY)


def _binary_infer(rows: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = _json({"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                                "parameters": {"binary_data_size": rows.nbytes}}],
                    "parameters": {"binary_data_output": True}})
    return header + rows.astype("<f8").tobytes(), {"Inference-Header-Content-Length": str(len(header))}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=5, help="length of each wrk run (whole seconds)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave benchmarks/README.md alone")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("this benchmark needs wrk: apt-get install wrk")
    load_before = os.getloadavg()
    seconds = args.seconds
    X, y = load_iris(return_X_y=True)
    Xf, yf = make_classification(n_samples=2000, n_features=20, random_state=0)
    work = Path(tempfile.mkdtemp(prefix="aprender-serve-bench-"))
    rows: list[list[str]] = []
    try:
        small = work / "small"
        (small / "iris" / "1").mkdir(parents=True)
        aprender.save(LogisticRegression(max_iter=1000).fit(X, y), small / "iris" / "1" / "model.apr")
        forest = work / "forest"
        (forest / "forest" / "1").mkdir(parents=True)
        aprender.save(RandomForestClassifier(n_estimators=100, random_state=0).fit(Xf, yf),
                      forest / "forest" / "1" / "model.apr")
        row = X[0].tolist()
        json_headers = {"Content-Type": "application/json"}

        # -- small LogisticRegression over each protocol, 16 connections
        with server(str(small)) as (url, process, _):
            cases = [
                ("`/predict`", "/predict", _json({"features": row}), json_headers),
                ("`/v2/models/iris/infer` JSON", "/v2/models/iris/infer",
                 _json({"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": row}]}),
                 json_headers),
                ("`/v2/models/iris/infer` binary", "/v2/models/iris/infer", *_binary_infer(X[:1])),
                ("`/api/generate` stream:false", "/api/generate",
                 _json({"model": "iris", "prompt": orjson.dumps(row).decode(), "stream": False}), json_headers),
            ]
            for label, path, body, headers in cases:
                assert httpx.post(url + path, content=body, headers=headers).status_code == 200, label
                runs = [wrk(url, path, body, headers, 16, seconds, process.pid) for _ in range(RUNS)]
                rows.append([f"LogisticRegression (iris), {label}", "16", *_fmt(runs)])

        # -- RandomForest(100), single rows, batching on vs off (servers alternate run by run)
        body = _json({"features": Xf[0].tolist()})
        with server(str(forest)) as (on, on_process, _), \
                server(str(forest), "--max-batch-size", "1") as (off, off_process, _):
            for connections in (64, 1):
                results: dict[str, list[dict]] = {"on": [], "off": []}
                for i in range(RUNS):
                    for mode in (("on", "off") if i % 2 == 0 else ("off", "on")):
                        url, pid = (on, on_process.pid) if mode == "on" else (off, off_process.pid)
                        results[mode].append(wrk(url, "/predict", body, json_headers, connections, seconds, pid))
                for mode in ("on", "off"):
                    rows.append([f"RandomForest(100), `/predict` 1 row, batching {mode}", str(connections),
                                 *_fmt(results[mode])])
                on_rps, off_rps = _median(results["on"], "rps")[0], _median(results["off"], "rps")[0]
                delta = _median(results["on"], "p50")[0] - _median(results["off"], "p50")[0]
                rows.append([f"... batching on / off at {connections} connection(s)", str(connections),
                             f"x {on_rps / off_rps:.2f}" if off_rps else "n/a (off: 0 req/s)", "",
                             f"delta p50 {delta:+.2f}" if off_rps else "", "", "", ""])

        # -- start to /v2/health/ready with one small model
        starts = []
        for _ in range(RUNS):
            with server(str(small)) as (_, _, ready):
                starts.append(ready)
        startup = (statistics.median(starts), min(starts), max(starts))

        # -- memory: 4 workers sharing one 100 MB .apr vs one worker
        big = work / "big"
        (big / "big" / "1").mkdir(parents=True)
        rng = np.random.default_rng(0)
        Xb = rng.standard_normal((64, 1000))
        aprender.save(LinearRegression().fit(Xb, rng.standard_normal((64, 12500))), big / "big" / "1" / "model.apr")
        size_mb = (big / "big" / "1" / "model.apr").stat().st_size / 1e6
        pss = {}
        for workers in (1, 4):
            with server(str(big), "--workers", str(workers)) as (url, process, _):
                assert httpx.post(f"{url}/predict", json={"features": Xb[0].tolist()}).status_code == 200
                # every process: the workers and the parent they were forked from (it holds pages they share)
                pids = [process.pid, *_children(process.pid)]
                pss[workers] = _pss_kib([p for p in pids if Path(f"/proc/{p}").exists()]) / 1024
    finally:
        shutil.rmtree(work, ignore_errors=True)

    load_after = os.getloadavg()
    quiet = max(load_before[0], load_after[0]) < 2.5
    sharing = ("The machine was otherwise quiet" if quiet else "**The machine's 2 cores were shared** with other "
               "engineers' jobs")
    verdict = ("Held against the targets of issue 16 (4,000 req/s on `/predict`, 3,000 on v2 and `/api/generate`, "
               "1,500 and 5x for the batched forest, p99 within 10 / 50 ms, start under 3 s), the rows above are "
               "the measurement: one uvicorn worker on the one core wrk leaves it." if quiet else
               "With a load average far above the 2 cores, a server gets a small fraction of one core and these "
               "numbers cannot be held against the targets of issue 16 (4,000 req/s on `/predict`, 3,000 on v2 "
               "and `/api/generate`, 1,500 and 5x for the batched forest, start under 3 s); rerun on a quiet "
               "machine to judge them.")
    table = ["| scenario | connections | req/s (median) | req/s min-max | p50 ms | p99 ms | errors "
             "| server CPU µs/request |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = f"""## Serving: `aprender serve` under wrk

`python benchmarks/serve.py` on {machine()}; wrk {seconds:g} s per run, 1 wrk thread, median of {RUNS} runs
(min-max spread shown), 1 uvicorn worker unless stated. {sharing} (load average {load_before[0]:.1f} before,
{load_after[0]:.1f} after); wrk itself takes one of the two cores.

{chr(10).join(table)}

errors are wrk's non-2xx answers and timeouts (over 2 s). Server CPU µs/request is the server process's
user + system time (`/proc/PID/stat`) over a run divided by the requests it answered: unlike req/s it
does not depend on what else the machine does; 1e6 / it is what one core can serve. {verdict}

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
