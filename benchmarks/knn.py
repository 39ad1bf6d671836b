"""KNN at scale: save and load of a KNeighborsClassifier and a KernelDensity on 1M rows, aprender against joblib.

A neighbors estimator's file holds its training data and its KD/Ball tree. aprender stores
the tree's arrays and checks them on load in vectorized passes (schemas/_binary_tree.py);
files written before that store only the leaf size and rebuild the tree from the data,
which the "older file" row measures. KernelDensity's ``tree_`` goes the same way through
the ``binary_tree`` handler. Contenders, for a KD tree, a ball tree and KernelDensity's KD tree:

- save: aprender .apr and .safetensors, joblib;
- load: aprender .apr (full CRC), .apr memory-mapped, .safetensors, an older .apr whose
  tree is rebuilt, joblib.

Saves and loads are interleaved (each round runs every contender once, in a seeded
shuffled order) in one process; medians, min and max. Run from the repository root:

    python benchmarks/knn.py [--rows 1000000] [--features 8] [--repeat 7] [--quick]

Prints the table and rewrites the "knn" section of benchmarks/README.md (``--quick``,
a smoke run on 20,000 rows, writes nothing).
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from _report import Timing, fmt_time, interleaved, machine, write_section

import aprender
from aprender.codec import ModelState, to_state
from aprender.codec.schemas._binary_tree import FIELDS
from aprender.format import apr
from aprender.neighbors import KernelDensity, KNeighborsClassifier

#: section -> what each contender fits
MODELS = {"kd_tree": lambda: KNeighborsClassifier(algorithm="kd_tree"),
          "ball_tree": lambda: KNeighborsClassifier(algorithm="ball_tree"),
          "KernelDensity, kd_tree": lambda: KernelDensity(algorithm="kd_tree")}


def _older_file(model: Any, path: Path) -> None:
    """The .apr an older aprender wrote: the tree as its leaf size only, or a KernelDensity tree as its data
    and settings (either rebuilt on load)."""
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    attrs = meta["model"]["attrs"]
    if "tree_" in attrs:
        attrs["tree_"] = {k: v for k, v in attrs["tree_"].items() if k == "leaf_size" or k not in FIELDS}
        tensors = {name: t for name, t in state.tensors.items() if name.split(".")[-1] not in FIELDS}
    else:
        items = dict(attrs["_tree"]["items"])
        attrs["_tree"] = {"__t__": "dict", "items": [["leaf_size", items["leaf_size"]]]}
        tensors = {name: t for name, t in state.tensors.items() if not name.startswith("_tree.")}
    apr.write_state(ModelState(tensors=tensors, meta=meta), path)


def _answers(model: Any, probe: np.ndarray) -> np.ndarray:
    return model.score_samples(probe) if hasattr(model, "score_samples") else model.kneighbors(probe)[1]


def _run(section: str, rows: int, features: int, repeat: int, folder: Path) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, features))
    y = rng.integers(0, 3, rows)
    model = MODELS[section]().fit(X, y)
    slug = section.replace(", ", "-")
    paths = {name: folder / f"{slug}.{suffix}" for name, suffix in
             [("apr", "apr"), ("safetensors", "safetensors"), ("joblib", "joblib"), ("older", "older.apr")]}
    saves = interleaved({
        "aprender .apr": lambda: aprender.save(model, paths["apr"]),
        "aprender .safetensors": lambda: aprender.save(model, paths["safetensors"]),
        "joblib": lambda: joblib.dump(model, paths["joblib"]),
    }, repeat)
    _older_file(model, paths["older"])
    probe = X[:100]
    expected = _answers(model, probe)
    for path in (paths["apr"], paths["safetensors"], paths["older"]):  # every contender loads a working model
        assert np.array_equal(_answers(aprender.load(path), probe), expected), path
    loads = interleaved({
        "aprender .apr": lambda: aprender.load(paths["apr"]),
        "aprender .apr, mmap": lambda: aprender.load(paths["apr"], mmap=True),
        "aprender .safetensors": lambda: aprender.load(paths["safetensors"]),
        "aprender .apr, older file (tree rebuilt)": lambda: aprender.load(paths["older"]),
        "joblib": lambda: joblib.load(paths["joblib"]),
    }, repeat)
    sizes = {"aprender .apr": paths["apr"].stat().st_size, "aprender .safetensors": paths["safetensors"].stat().st_size,
             "joblib": paths["joblib"].stat().st_size}
    for path in paths.values():
        path.unlink()
    return {"save": saves, "load": loads, "sizes": sizes}


def _rows(kind: str, timings: dict[str, Timing], sizes: dict[str, int] | None) -> list[str]:
    anchor = timings["joblib"].median
    out = []
    for name, t in timings.items():
        size = f"{sizes[name] / 2**20:.1f} MiB" if sizes and name in sizes else ""
        out.append(f"| {kind} | {name} | {fmt_time(t.median)} | {t.spread()} | {t.median / anchor:.2f}x | {size} |")
    return out


def report(results: dict[str, dict[str, Any]], rows: int, features: int, repeat: int, where: str) -> str:
    lines = []
    for algorithm, r in results.items():
        lines += [f"\n### {algorithm}\n", "| | contender | median | min-max | ratio to joblib | file |",
                  "|---|---|---:|---|---:|---:|"]
        lines += _rows("save", r["save"], r["sizes"]) + _rows("load", r["load"], None)
    return (
        "## KNN at scale: save and load\n\n"
        f"`python benchmarks/knn.py`: a KNeighborsClassifier fitted on {rows:,} rows x {features} features "
        f"(standard normal, 3 classes, default leaf size), and a KernelDensity on the same rows, saved and loaded "
        f"{repeat} times, interleaved in a "
        "seeded shuffled order; wall-clock medians in one process. The tree's arrays are stored and checked "
        "on load (the node layout, a permutation of the rows, finite and nested bounds); the older "
        "file stores only the leaf size and rebuilds the tree.\n\n"
        f"Machine: {where}.\n" + "\n".join(lines) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--quick", action="store_true", help="20,000 rows, 2 rounds, README untouched")
    args = parser.parse_args()
    rows, repeat = (20_000, 2) if args.quick else (args.rows, args.repeat)
    where = machine()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        results = {section: _run(section, rows, args.features, repeat, Path(tmp)) for section in MODELS}
    text = report(results, rows, args.features, repeat, where)
    print(text)
    if not args.quick:
        write_section("knn", text)


if __name__ == "__main__":
    main()
