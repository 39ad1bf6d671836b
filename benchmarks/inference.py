"""Inference latency: scikit-learn ``predict`` vs ONNX Runtime on the exported model.

For each model: one row (median of ``--repeat`` rounds, >= 200) and a 10,000-row batch
(median of 7 rounds), both engines in the same process on the same data. Each round
runs both engines once, in an order that alternates from round to round, and every
round takes the next row of the data: repeating one row back to back would keep a
tree's path in the caches and flatter whichever engine ran second. ONNX Runtime runs
the ``to_onnx()`` graph (float32, no ZipMap) with one intra-op thread, like
scikit-learn's single-threaded predict, and only the label output is fetched. Run from
the repository root:

    python benchmarks/inference.py [--repeat 300]

Prints a table and rewrites the "inference" section of benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
from _report import Timing, interleaved, machine, write_section
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from aprender.decomposition import PCA
from aprender.ensemble import RandomForestClassifier
from aprender.format.onnx import input_feed, to_onnx
from aprender.linear_model import LogisticRegression
from aprender.neural_network import MLPClassifier
from aprender.pipeline import make_pipeline
from aprender.preprocessing import StandardScaler

BATCH = 10_000


def _data() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=BATCH, n_features=20, n_informative=12, n_classes=3, random_state=0)


MODELS: dict[str, Callable[[], Any]] = {
    "LogisticRegression": lambda: LogisticRegression(max_iter=1000),
    "RandomForestClassifier (100 trees, depth 10)": lambda: RandomForestClassifier(
        n_estimators=100, max_depth=10, random_state=0),
    "Pipeline (StandardScaler + PCA(10) + LogisticRegression)": lambda: make_pipeline(
        StandardScaler(), PCA(n_components=10), LogisticRegression(max_iter=1000)),
    "MLPClassifier (64, 32)": lambda: MLPClassifier(hidden_layer_sizes=(64, 32), max_iter=200, random_state=0),
}


def _session(model: Any) -> tuple[ort.InferenceSession, Any]:
    onx = to_onnx(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(onx.SerializeToString(), options, providers=["CPUExecutionProvider"]), onx


def measure(name: str, model: Any, X: np.ndarray, repeat: int) -> dict[str, Any]:
    sess, onx = _session(model)
    rows = [X[i : i + 1] for i in range(repeat)]
    feeds = [input_feed(onx, row) for row in rows]
    batch = input_feed(onx, X)
    agree = float(np.mean(sess.run(["label"], batch)[0] == model.predict(X)))
    calls = {"n": 0}

    def next_row(_name: str) -> None:  # both engines get the same row in a round, a new row each round
        calls["n"] += 1

    def row() -> int:
        return (calls["n"] - 1) // 2

    single = interleaved({"sklearn": lambda: model.predict(rows[row()]),
                          "ort": lambda: sess.run(["label"], feeds[row()])}, repeat, setup=next_row)
    full = interleaved({"sklearn": lambda: model.predict(X), "ort": lambda: sess.run(["label"], batch)}, 7)
    return {"name": name, "sk_row": single["sklearn"], "ort_row": single["ort"], "sk_batch": full["sklearn"],
            "ort_batch": full["ort"], "agree": agree}


def _us(t: Timing) -> str:
    return f"{t.median * 1e6:,.1f} µs ({t.min * 1e6:,.0f}-{t.max * 1e6:,.0f})"


def table(rows: list[dict[str, Any]], repeat: int) -> str:
    lines = [
        f"sklearn `predict` vs ONNX Runtime {ort.__version__} on the `to_onnx()` graph (float32, one thread). "
        f"One row: median (min-max) of {repeat} interleaved rounds, a different row each round; batch: "
        f"{BATCH:,} rows, median of 7 interleaved rounds. "
        f"Data: `make_classification`, 20 features, 3 classes. Machine: {machine()}.",
        "",
        "| model | sklearn 1 row | ORT 1 row | ORT speed-up | sklearn 10k rows | ORT 10k rows | ORT speed-up "
        "| labels agree |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {_us(r['sk_row'])} | {_us(r['ort_row'])} "
            f"| **{r['sk_row'].median / r['ort_row'].median:,.1f}x** | {r['sk_batch'].median * 1e3:,.1f} ms "
            f"| {r['ort_batch'].median * 1e3:,.1f} ms | {r['sk_batch'].median / r['ort_batch'].median:,.1f}x "
            f"| {r['agree']:.2%} |"
        )
    ratios = [r["sk_row"].median / r["ort_row"].median for r in rows]
    lines += [
        "",
        f"Target: ONNX Runtime at least 10x faster than scikit-learn on a single row: met by "
        f"{sum(x >= 10 for x in ratios)} of {len(ratios)} models ({min(ratios):,.1f}x to {max(ratios):,.1f}x). "
        "Each ORT call follows a scikit-learn call on another row, as in a service that does more than "
        "predict: run back to back on one row, ORT is several times faster again (its data stay in the "
        "caches), which is what earlier versions of this table measured. scikit-learn pays its input "
        "validation on every call, which dominates one-row latency; on large batches both engines run "
        "compiled loops and the gap narrows (a forest is evaluated by sklearn tree by tree in Cython, by "
        "ORT in one TreeEnsemble kernel).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300, help="single-row calls per median (>= 200)")
    args = parser.parse_args()
    repeat = max(args.repeat, 200)
    X, y = _data()
    rows = []
    for name, make in MODELS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(X, y)
        rows.append(measure(name, model, X, repeat))
        r = rows[-1]
        print(f"{name:60s} 1 row {r['sk_row'].median / r['ort_row'].median:7.1f}x   {BATCH} rows "
              f"{r['sk_batch'].median / r['ort_batch'].median:6.1f}x   labels agree {r['agree']:.2%}")
    markdown = table(rows, repeat)
    print()
    print(markdown)
    write_section("inference", markdown)


if __name__ == "__main__":
    main()
