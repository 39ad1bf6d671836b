"""Server CPU time per request of ``aprender serve`` for chosen rows of benchmarks/serve.py, alone.

The same models, repository and one-row v2 JSON bodies as ``serve.py``, the same wrk runs (server
pinned to one core, wrk to the other); no MLServer, no README table. CPU µs per request is the
server process's own user + system time over the requests wrk completed, so unlike requests/s it
hardly depends on what else the machine runs: the number to compare before and after a change to
the serving path (run it once with ``PYTHONPATH`` set to each checkout).

    python benchmarks/serve_cpu.py [--seconds 3] [--runs 3] [--connections 16] [--serve-args ARGS] [MODEL ...]

MODEL: iris, forest, frame, xgboost, lightgbm, frame-xgboost (default: the three boosted ones).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from serve import JSON_HEADERS, Target, answer, aprender_server, fit_models, write_repositories, wrk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["xgboost", "lightgbm", "frame-xgboost"])
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--serve-args", default="", help="more options of aprender serve, e.g. '--max-batch-size 1'")
    args = parser.parse_args()
    models = {model.name: model for model in fit_models()}
    with tempfile.TemporaryDirectory() as work:
        repo, _ = write_repositories(list(models.values()), Path(work))
        for name in args.models:
            with aprender_server(str(repo / name), *args.serve_args.split()) as server:
                target = Target(server, f"/v2/models/{name}/infer", models[name].body, JSON_HEADERS)
                answer(target)
                wrk(target, args.connections, 1)  # untimed: first requests, allocator, caches
                runs = [wrk(target, args.connections, args.seconds) for _ in range(args.runs)]
            cpu = statistics.median(r["cpu_us"] for r in runs)
            rps = statistics.median(r["rps"] for r in runs)
            p99 = statistics.median(r["p99"] for r in runs)
            print(f"{name:14s} {cpu:8,.0f} CPU µs/request  {rps:8,.0f} req/s  p99 {p99:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
