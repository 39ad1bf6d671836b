"""Save/load time and file size: aprender (SafeTensors and .apr) vs pickle, joblib and skops.

Every backend runs in the same process on the same fitted model, **interleaved**: each
round saves (or loads) with every backend once, in an order shuffled from round to
round, so machine noise falls on all of them alike. Medians, min and max are printed.
Run from the repository root:

    python benchmarks/persistence.py [--quick] [--only TEXT]

Prints a table and rewrites the "persistence" section of benchmarks/README.md and the
benchmark summary of the project README.
"""

from __future__ import annotations

import argparse
import os
import pickle  # the baseline being measured; aprender itself never imports it
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import skops.io as sio
from _report import TOP_README, Timing, fmt_time, interleaved, machine, write_section
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


def _logreg_10x64() -> Any:
    X, y = make_classification(n_samples=2_000, n_features=64, n_informative=32, n_classes=10, random_state=0)
    return LogisticRegression(max_iter=2000).fit(X, y)


def _kmeans_8() -> Any:
    X, _ = make_blobs(n_samples=2_000, n_features=16, centers=8, random_state=0)
    return KMeans(n_clusters=8, n_init=1, random_state=0).fit(X)


def _decision_tree() -> Any:
    from aprender.tree import DecisionTreeClassifier

    X, y = make_classification(n_samples=2_000, n_features=20, random_state=0)
    return DecisionTreeClassifier(random_state=0).fit(X, y)


def _forest_10() -> Any:
    from aprender.ensemble import RandomForestClassifier

    X, y = make_classification(n_samples=2_000, n_features=20, random_state=0)
    return RandomForestClassifier(n_estimators=10, random_state=0, n_jobs=1).fit(X, y)


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


def _extra_trees() -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    X, y = make_classification(n_samples=2_000, n_features=20, random_state=0)
    return ExtraTreesClassifier(n_estimators=200, random_state=0, n_jobs=1).fit(X, y)


def _grid_search() -> Any:
    from sklearn.model_selection import GridSearchCV

    from aprender.pipeline import make_pipeline

    X, y = load_digits(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    return GridSearchCV(pipe, {"logisticregression__C": [0.01, 0.1, 1.0]}, cv=3).fit(X, y)


def _stacking() -> Any:
    from sklearn.ensemble import StackingClassifier
    from sklearn.svm import LinearSVC

    from aprender.ensemble import RandomForestClassifier

    X, y = load_digits(return_X_y=True)
    estimators = [("forest", RandomForestClassifier(n_estimators=20, random_state=0)), ("svc", LinearSVC())]
    return StackingClassifier(estimators, final_estimator=LogisticRegression(max_iter=500), cv=3).fit(X, y)


def _booster_data() -> tuple[np.ndarray, np.ndarray]:
    # Enough rows for LightGBM to grow its full 63 leaves per tree.
    return make_classification(n_samples=20_000, n_features=20, random_state=0)


def _xgboost() -> Any:
    from xgboost import XGBClassifier

    return XGBClassifier(n_estimators=500, max_depth=6, random_state=0, n_jobs=1).fit(*_booster_data())


def _lightgbm() -> Any:
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_estimators=500, num_leaves=63, random_state=0, n_jobs=1, verbose=-1).fit(*_booster_data())


def _catboost() -> Any:
    from catboost import CatBoostClassifier

    model = CatBoostClassifier(iterations=500, depth=6, random_seed=0, thread_count=1, verbose=False,
                               allow_writing_files=False)
    return model.fit(*_booster_data())


def _xgboost_pipeline() -> Any:
    from xgboost import XGBClassifier

    from aprender.pipeline import make_pipeline

    return make_pipeline(StandardScaler(), XGBClassifier(n_estimators=200, max_depth=6, random_state=0, n_jobs=1)
                         ).fit(*_booster_data())


MODELS: list[tuple[str, Callable[[], Any]]] = [
    ("LogisticRegression, 10 classes x 64 features", _logreg_10x64),
    ("KMeans, k=8", _kmeans_8),
    ("DecisionTree", _decision_tree),
    ("RandomForest, 10 trees", _forest_10),
    ("Ridge, 100 MB coef_", _ridge_100mb),
    ("Ridge, 100 MB Fortran-ordered coef_", _ridge_100mb_multi),
    ("LogisticRegression, 10 classes", _logreg_10_classes),
    ("KMeans, k=256", _kmeans_256),
    ("StandardScaler + LogisticRegression", _pipeline),
    ("RandomForest, 200 trees", _forest),
    ("HistGradientBoosting, 200 iters", _hist_boosting),
    ("ExtraTrees, 200 trees", _extra_trees),
    ("GridSearchCV (scaler + LogisticRegression, 3 C x 3 folds), whole", _grid_search),
    ("StackingClassifier (forest + LinearSVC -> LogisticRegression)", _stacking),
    ("XGBClassifier, 500 trees of depth 6", _xgboost),
    ("LGBMClassifier, 500 trees of 63 leaves", _lightgbm),
    ("CatBoostClassifier, 500 trees of depth 6", _catboost),
    ("StandardScaler + XGBClassifier, 200 trees", _xgboost_pipeline),
]


NOTE = (
    "Load means file to a ready estimator. aprender validates the file, parses its JSON metadata and checks "
    "the hyperparameters, and writes atomically through a temporary file and a rename; pickle checks nothing "
    "and runs whatever the file says. A Fortran-ordered array costs a transposing copy on save and on load, "
    "because tensors are stored C-ordered with their original order recorded.\n\n"
    "Where a small model's load goes beyond pickle's: a SafeTensors load reads the file once into one buffer "
    "(every tensor is a view into it) and then pays for its checks, none of which pickle makes: the header's "
    "JSON and every tensor's dtype, shape and offsets (the tensors must tile the data section), the metadata "
    "JSON, each metadata node against its declared fields, each fitted attribute's name against the class, "
    "the family's shape checks, and the hyperparameters (remembered once they passed). A .apr load adds the "
    "CRC32 of the whole file and its binary index. A tree adds NumPy passes that prove its child indices "
    "form a tree before scikit-learn, which follows them without bounds checks, sees them; a forest makes "
    "them once for all its trees, which is why forests of 100 trees and more load faster than pickle and "
    "small trees do not. A save writes through an unnamed temporary file that is linked and renamed over "
    "the destination (atomic, and a killed save leaves nothing), where pickle truncates the file in place.\n\n"
    "An XGBoost, LightGBM or CatBoost model is stored as checked arrays, never as the library's own bytes: a load "
    "checks them, writes the library's model from them (XGBoost's UBJSON, LightGBM's model text, CatBoost's "
    "JSON) and has the library parse that, where pickle hands the library its own bytes unchecked. CatBoost "
    "reads its binary model (an internal FlatBuffers layout aprender does not write) in about a millisecond; "
    "parsing its JSON takes most of a CatBoost load."
)

#: Models whose every backend saves and loads in a few ms: many more rounds cost seconds, and spread
#: the median over them, where 41 rounds fit inside one burst of another tenant's work.
SMALL_MODELS = frozenset(["LogisticRegression, 10 classes x 64 features", "KMeans, k=8", "DecisionTree",
                          "RandomForest, 10 trees", "LogisticRegression, 10 classes", "KMeans, k=256",
                          "StandardScaler + LogisticRegression"])
SMALL_ROUNDS = 201

#: Suffix of each backend's file; aprender's two formats are separate contenders.
SUFFIXES = {"pickle": "pkl", "joblib": "joblib", "skops": "skops", "safetensors": "safetensors", "apr": "apr"}


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
        "safetensors": (lambda p: aprender.save(model, p), aprender.load),
        "apr": (lambda p: aprender.save(model, p), aprender.load),
    }


def measure(model: Any, folder: Path, repeat: int, *, settle: bool = False) -> dict[str, tuple[Timing, Timing, int]]:
    """(save timing, load timing, bytes) per backend, every backend interleaved with the others.

    With ``settle``, ``os.sync()`` runs (untimed) before every save: the writeback of a
    100 MB file outlasts the next save, which would otherwise pay for it, whoever it is.
    """
    backends = _backends(model)
    paths = {name: folder / f"model.{SUFFIXES[name]}" for name in backends}
    saves = interleaved({name: (lambda s=save, p=paths[name]: s(p)) for name, (save, _) in backends.items()}, repeat,
                        setup=(lambda _name: os.sync()) if settle else None)
    loads = interleaved({name: (lambda ld=load, p=paths[name]: ld(p)) for name, (_, load) in backends.items()},
                        repeat)
    return {name: (saves[name], loads[name], paths[name].stat().st_size) for name in backends}


#: Run in a fresh interpreter: the first and the second load of one file, in seconds.
_FIRST_LOAD = """
import sys, time
import aprender
start = time.perf_counter(); aprender.load(sys.argv[1]); first = time.perf_counter() - start
start = time.perf_counter(); aprender.load(sys.argv[1]); second = time.perf_counter() - start
print(first, second)
"""
#: The small models whose first load in a fresh process is measured.
FIRST_LOAD_MODELS = ("LogisticRegression, 10 classes x 64 features", "KMeans, k=8", "DecisionTree",
                     "RandomForest, 10 trees", "StandardScaler + LogisticRegression")


def first_load(path: Path, processes: int) -> tuple[float, float]:
    """Medians over fresh interpreters (after ``import aprender``) of the first and the second load of ``path``.

    The first load imports what the file names (its classes' modules and schemas); the
    registry imports nothing else.
    """
    # As after a pip install, modules come from bytecode: a run with PYTHONDONTWRITEBYTECODE set would
    # compile aprender's sources in every process. The first process writes the bytecode and is not counted.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [subprocess.run([sys.executable, "-c", _FIRST_LOAD, str(path)], capture_output=True, text=True,
                           check=True, env=env).stdout.split() for _ in range(processes + 1)][1:]
    return statistics.median(float(r[0]) for r in runs), statistics.median(float(r[1]) for r in runs)


def _fmt_size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke run)")
    parser.add_argument("--only", metavar="TEXT", help="only the models whose label contains TEXT; prints the rows "
                                                       "and leaves the READMEs alone")
    args = parser.parse_args()
    rows = [
        "| Model | Backend | Save (median) | Save min-max | Load (median) | Load min-max | Size "
        "| Save / pickle | Load / pickle |",
        "|---|---|---:|---|---:|---|---:|---:|---:|",
    ]
    summary = ["| Model | load SafeTensors | load .apr | save | joblib load | skops load |",
               "|---|---:|---:|---:|---:|---:|"]
    first_rows = ["| Model | Format | First load | Second load | First - second |", "|---|---|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in MODELS:
            if args.only is not None and args.only not in label:
                continue
            try:
                model = build()
            except ImportError as exc:
                print(f"skipping {label}: {exc}")
                continue
            big = "100 MB" in label
            repeat = 3 if args.quick else (11 if big else SMALL_ROUNDS if label in SMALL_MODELS else 41)
            results = measure(model, Path(tmp), repeat, settle=big)
            base_save, base_load = results["pickle"][0].median, results["pickle"][1].median

            def ratio(name: str, which: int, base: float, r: dict = results) -> str:
                return f"{r[name][which].median / base:.2f}x"

            for name, (save, load, size) in results.items():
                line = (f"| {label} | {name} | {fmt_time(save.median)} | {save.spread()} | {fmt_time(load.median)} "
                        f"| {load.spread()} | {_fmt_size(size)} | {save.median / base_save:.2f}x "
                        f"| {load.median / base_load:.2f}x |")
                rows.append(line)
                print(line, flush=True)
            summary.append(f"| {label} | {ratio('safetensors', 1, base_load)} | {ratio('apr', 1, base_load)} "
                           f"| {ratio('safetensors', 0, base_save)} | {ratio('joblib', 1, base_load)} "
                           f"| {ratio('skops', 1, base_load)} |")
            if label in FIRST_LOAD_MODELS:
                for fmt in ("safetensors", "apr"):
                    first, second = first_load(Path(tmp) / f"model.{SUFFIXES[fmt]}", 3 if args.quick else 9)
                    first_rows.append(f"| {label} | {fmt} | {fmt_time(first)} | {fmt_time(second)} "
                                      f"| {fmt_time(first - second)} |")
                    print(first_rows[-1], flush=True)
    if args.only is not None:
        return
    where = f"Machine: {machine()}. {repeat_note(args.quick)}"
    write_section(
        "persistence",
        "## Persistence: aprender (SafeTensors, .apr) vs pickle, joblib, skops\n\n"
        "`python benchmarks/persistence.py`: every backend in one process, interleaved round by round in a seeded "
        "shuffled order; medians with the fastest and slowest run. Ratios are to pickle protocol 5 writing and "
        f"reading a file; below 1.00x beats pickle.\n\n{where}\n\n" + "\n".join(rows) + "\n\n" + NOTE
        + "\n\n### First load in a fresh process\n\nMedians over fresh interpreters that ran `import aprender`, "
        "then loaded one file twice. The first load also imports the modules of the classes the file names "
        "(and nothing else: the registry and the namesake packages import lazily).\n\n" + "\n".join(first_rows),
    )
    write_section(
        "persistence-summary",
        "Load and save time as a ratio to pickle protocol 5 (below 1.00x is faster), medians of interleaved "
        f"runs. {where}\n\n" + "\n".join(summary),
        TOP_README,
    )


def repeat_note(quick: bool) -> str:
    """How many rounds each median is over."""
    return ("3 rounds per model (quick run)." if quick else f"{SMALL_ROUNDS} rounds per small model (the linear "
            "models, KMeans, the DecisionTree, the 10-tree forest and the pipeline), 11 per 100 MB model, 41 for "
            "the others.") + (
        " Before each save of a 100 MB model every backend gets an untimed `os.sync()`, so no save pays for the "
        "writeback of the one before.")


if __name__ == "__main__":
    main()
