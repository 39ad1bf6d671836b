"""Save/load time and file size: aprender SafeTensors vs pickle, joblib and skops.

All four run in the same process on the same fitted models, so the ratios are
comparable even on a noisy machine. Run from the repository root:

    python benchmarks/persistence.py [--quick]

Prints a table and rewrites the "persistence" section of benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import pickle  # the baseline being measured; aprender itself never imports it
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import skops.io as sio
from _report import machine, median_seconds, write_section
from sklearn.datasets import load_digits, make_blobs, make_classification

import aprender
from aprender.cluster import KMeans
from aprender.linear_model import LogisticRegression, Ridge
from aprender.preprocessing import StandardScaler


def _ridge_100mb() -> Any:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 12_500_000))
    return Ridge(alpha=1.0).fit(X, rng.standard_normal(2))  # coef_: 12.5M float64 = 100 MB


def _ridge_100mb_multi() -> Any:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((256, 12_500))
    Y = rng.standard_normal((256, 1_000))
    # coef_ is 1000 x 12500 float64 = 100 MB and Fortran-ordered: written C-ordered,
    # restored Fortran-ordered, so aprender pays a transposing copy each way.
    return Ridge(alpha=1.0).fit(X, Y)


def _logreg_10_classes() -> Any:
    X, y = load_digits(return_X_y=True)
    return LogisticRegression(max_iter=2000).fit(X / 16.0, y)


def _kmeans_256() -> Any:
    X, _ = make_blobs(n_samples=20_000, n_features=32, centers=256, random_state=0)
    return KMeans(n_clusters=256, n_init=1, max_iter=50, random_state=0).fit(X)


def _pipeline() -> Any:
    from aprender.pipeline import make_pipeline

    X, y = load_digits(return_X_y=True)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)


def _forest() -> Any:
    from aprender.ensemble import RandomForestClassifier

    X, y = make_classification(n_samples=2_000, n_features=20, random_state=0)
    return RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=1).fit(X, y)


def _hist_boosting() -> Any:
    from aprender.ensemble import HistGradientBoostingClassifier

    X, y = make_classification(n_samples=5_000, n_features=20, random_state=0)
    return HistGradientBoostingClassifier(max_iter=200, early_stopping=False, random_state=0).fit(X, y)


MODELS: list[tuple[str, Callable[[], Any]]] = [
    ("Ridge, 100 MB coef_", _ridge_100mb),
    ("Ridge, 100 MB Fortran-ordered coef_", _ridge_100mb_multi),
    ("LogisticRegression, 10 classes", _logreg_10_classes),
    ("KMeans, k=256", _kmeans_256),
    ("StandardScaler + LogisticRegression", _pipeline),
    ("RandomForest, 200 trees", _forest),
    ("HistGradientBoosting, 200 iters", _hist_boosting),
]


NOTE = (
    "Small models miss the target: aprender validates the file, parses its JSON metadata and checks the "
    "hyperparameters (about 0.1 ms), and writes atomically through a temporary file and a rename, while "
    "pickle checks nothing. A Fortran-ordered array costs a transposing copy on save and on load, because "
    "tensors are stored C-ordered with their original order recorded."
)


def _skops_load(path: Path) -> Any:
    return sio.load(path, trusted=sio.get_untrusted_types(file=path))


def _backends(model: Any) -> dict[str, tuple[Callable[[Path], None], Callable[[Path], Any]]]:
    def pickle_save(path: Path) -> None:
        with open(path, "wb") as f:
            pickle.dump(model, f, protocol=5)

    def pickle_load(path: Path) -> Any:
        with open(path, "rb") as f:
            return pickle.load(f)

    return {
        "pickle": (pickle_save, pickle_load),
        "joblib": (lambda p: joblib.dump(model, p), joblib.load),
        "skops": (lambda p: sio.dump(model, p), _skops_load),
        "aprender": (lambda p: aprender.save(model, p), aprender.load),
    }


def measure(model: Any, folder: Path, repeat: int) -> dict[str, tuple[float, float, int]]:
    """(save seconds, load seconds, bytes) per backend."""
    results = {}
    for name, (save, load) in _backends(model).items():
        path = folder / f"model.{'safetensors' if name == 'aprender' else name}"
        save_s = median_seconds(lambda s=save, p=path: s(p), repeat)
        load_s = median_seconds(lambda ld=load, p=path: ld(p), repeat)
        results[name] = (save_s, load_s, path.stat().st_size)
    return results


def _fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _fmt_size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    args = parser.parse_args()
    rows = [
        "| Model | Format | Save | Load | Size | Save / pickle | Load / pickle |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in MODELS:
            try:
                model = build()
            except ImportError as exc:
                print(f"skipping {label}: {exc}")
                continue
            big = "100 MB" in label
            repeat = 3 if args.quick else (7 if big else 31)
            results = measure(model, Path(tmp), repeat)
            base_save, base_load, _ = results["pickle"]
            save_ratio, load_ratio = results["aprender"][0] / base_save, results["aprender"][1] / base_load
            verdicts.append(f"- {label}: load {load_ratio:.2f}x, save {save_ratio:.2f}x pickle "
                            f"({'met' if max(load_ratio, save_ratio) <= 1.0 else 'missed'})")
            for name, (save_s, load_s, size) in results.items():
                line = (f"| {label} | {name} | {_fmt_time(save_s)} | {_fmt_time(load_s)} | {_fmt_size(size)} | "
                        f"{save_s / base_save:.2f}x | {load_s / base_load:.2f}x |")
                rows.append(line)
                print(line, flush=True)
    table = "\n".join(rows)
    write_section(
        "persistence",
        "## Persistence: aprender SafeTensors vs pickle, joblib, skops\n\n"
        f"Medians of repeated save/load runs in one process (`python benchmarks/persistence.py`). "
        f"Load means file to a ready estimator. Ratios below 1.00x beat pickle.\n\n"
        f"Machine: {machine()}\n\n{table}\n\nTarget: aprender load <= 1.0x and save <= 1.0x pickle.\n\n"
        + "\n".join(verdicts) + "\n\n" + NOTE,
    )


if __name__ == "__main__":
    main()
