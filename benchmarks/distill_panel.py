"""Distillation defaults on a panel of problems: tuned on some groups, reported on one nobody tuned on.

Sixty-one problems that ship with scikit-learn or that its generators make, in eight
groups by the ``half`` field of :data:`PROBLEMS`:

* ``tuning`` and ``seen``: the first split's tuning and held-out halves (8 each). Round
  2 chose the defaults on ``tuning`` and reported ``seen``; having been read, ``seen``
  is a tuning group since.
* ``seen-2``: the second split's held-out half (round 3, 11 problems), run once and
  read: a tuning group since.
* ``issue``: four make_classification problems of issue 30's kind (4,000 labelled
  rows), looked at in round 4 before its held-out half ran.
* ``held-out``: the third split (round 4: 8 classification, 4 regression), written into
  this file before any of its problems ran and before the round's defaults were frozen;
  then run once, with the frozen defaults alone (``--half held-out``).
* ``held-out-5``: six regression problems (round 5), written here before any of them ran
  and before round 5's change to the regression targets was frozen (round 4's regression
  rows had been read); run once (``--half held-out-5``).
* ``held-out-6``: six more regression problems (round 6), likewise before round 6's
  candidate change (regressors cross-fitted at every size), which the tuning problems
  then rejected; run once with round 5's defaults (``--half held-out-6``).
* ``held-out-7``: six more (round 7), before round 7's candidate change (the fallback's
  regression candidate distilled from teachers refitted on the training rows), which the
  tuning problems then rejected; run once with round 5's defaults.

Teacher RandomForest(500), student MLP(32) (``MLPClassifier`` / ``MLPRegressor``,
``max_iter=300``, ``random_state=0``), features standardised on the training rows
(regression targets too). The score is test accuracy (R² for regressors) in points;
the *gap* is teacher minus the student fitted on the hard labels, and the share
closed is ``(distilled - hard) / gap`` where the gap is at least 0.5 points.
Generated problems have one training set and 4,000 fresh test rows (the digits
subsample: 500 training rows, the other 1,297 test); the small shipped
datasets are scored over stratified k folds (every row tested once). Classification
problems also distil a ``LogisticRegression(max_iter=1000)`` student.

Teachers and test predictions are cached under ``$TMPDIR/aprender-distill-panel``
(teachers as .apr files), so a rerun only fits what changed.

Run ``python benchmarks/distill_panel.py --half GROUP`` (one group with the defaults;
writes the ``distill-panel-GROUP`` section of benchmarks/README.md and docs/distill.md),
with no ``--half`` for every group (the ``distill-panel`` section), ``--grid`` to rerun
the tuning grid on the tuning groups (also written), ``--quick`` for a small smoke run
that writes nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from _report import machine, write_section
from sklearn import datasets
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
from sklearn.preprocessing import StandardScaler

import aprender
from aprender.ensemble import RandomForestClassifier, RandomForestRegressor
from aprender.linear_model import LogisticRegression
from aprender.neural_network import MLPClassifier, MLPRegressor

ROOT = Path(__file__).parent.parent
CACHE = Path(tempfile.gettempdir()) / "aprender-distill-panel"
#: Fresh test rows of every generated problem.
N_TEST = 4000
#: A gap below this many points is "teacher not better": no share closed is computed.
MIN_GAP = 0.5


@dataclass(frozen=True)
class Problem:
    """One panel problem: ``load()`` gives all rows; ``n_train`` rows train when generated."""

    name: str
    half: str  # "tuning", "seen" (the first split's held-out half, now tuned on) or "held-out"
    classify: bool
    load: Callable[[], tuple[np.ndarray, np.ndarray]]
    n_train: int | None = None  # n_train rows train, the rest (N_TEST for generated problems) test
    folds: int = 0  # a shipped dataset: stratified k-fold


def _mc(n: int, seed: int, **kwargs: Any) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    return lambda: datasets.make_classification(n_samples=n + N_TEST, random_state=seed, **kwargs)


def _gen(fn: Callable, n: int, seed: int, **kwargs: Any) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    return lambda: fn(n_samples=n + N_TEST, random_state=seed, **kwargs)


def _shipped(fn: Callable) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    return lambda: fn(return_X_y=True)


def _subsample(fn: Callable, seed: int) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """A shipped dataset's rows in a seeded order: the first ``n_train`` train, the rest test."""
    def load() -> tuple[np.ndarray, np.ndarray]:
        X, y = fn(return_X_y=True)
        order = np.random.RandomState(seed).permutation(len(y))
        return X[order], y[order]
    return load


# The first split (tuning / held-out, 8 problems each) was fixed here before any
# result. Its held-out half has since been run and read, so it is no longer unseen:
# both first halves are now tuning problems ("seen" names the first split's held-out
# half). The second held-out half below was written into this file before any of
# its problems was run and before the defaults of this round were chosen; it is run
# once, with the frozen defaults. Its problems are new generator settings, seeds and
# sizes: small labelled sets with 4,000 fresh test rows (so a 0.5-point difference is
# 20 test rows, not a fraction of one), a digits subsample, and the problem of issue
# 30 (make_classification at scikit-learn's own defaults, 4,000 labelled rows).
PROBLEMS = [
    # tuning: the first split's tuning half
    Problem("digits", "tuning", True, _shipped(datasets.load_digits), folds=2),
    Problem("iris", "tuning", True, _shipped(datasets.load_iris), folds=5),
    Problem("mc 4000x20, 8 inf, 3 classes", "tuning", True,
            _mc(4000, 1, n_features=20, n_informative=8, n_redundant=4, n_classes=3), 4000),
    Problem("mc 2000x10, binary 85/15", "tuning", True,
            _mc(2000, 2, n_features=10, n_informative=4, n_redundant=2, weights=[0.85], flip_y=0.02), 2000),
    Problem("mc 5000x30, 5 classes, 3 clusters", "tuning", True,
            _mc(5000, 3, n_features=30, n_informative=12, n_redundant=6, n_classes=5, n_clusters_per_class=3,
                class_sep=0.8), 5000),
    Problem("moons 2000, noise 0.3", "tuning", True, _gen(datasets.make_moons, 2000, 4, noise=0.3), 2000),
    Problem("friedman1 2000", "tuning", False, _gen(datasets.make_friedman1, 2000, 5, noise=1.0), 2000),
    Problem("make_regression 2000x20, 10 inf", "tuning", False,
            _gen(datasets.make_regression, 2000, 6, n_features=20, n_informative=10, noise=20.0), 2000),
    # tuning, seen: the first split's held-out half
    Problem("breast cancer", "seen", True, _shipped(datasets.load_breast_cancer), folds=3),
    Problem("wine", "seen", True, _shipped(datasets.load_wine), folds=5),
    Problem("mc 4000x20, 10 inf, 4 classes", "seen", True,
            _mc(4000, 11, n_features=20, n_informative=10, n_redundant=2, n_classes=4), 4000),
    Problem("mc 3000x40, binary, 6 inf, flip 5%", "seen", True,
            _mc(3000, 12, n_features=40, n_informative=6, n_redundant=4, flip_y=0.05), 3000),
    Problem("mc 1500x15, 3 classes 60/30/10", "seen", True,
            _mc(1500, 13, n_features=15, n_informative=6, n_redundant=3, n_classes=3, weights=[0.6, 0.3]), 1500),
    Problem("circles 2000, noise 0.2", "seen", True,
            _gen(datasets.make_circles, 2000, 14, noise=0.2, factor=0.5), 2000),
    Problem("friedman2 2000", "seen", False, _gen(datasets.make_friedman2, 2000, 15, noise=30.0), 2000),
    Problem("friedman3 2000", "seen", False, _gen(datasets.make_friedman3, 2000, 16, noise=0.1), 2000),
    # seen-2: the second split's held-out half (round 3), run once and read: a tuning group since
    Problem("mc 4000x20 (sklearn defaults: 2 inf, binary)", "seen-2", True, _mc(4000, 30), 4000),
    Problem("mc 150x8, binary, 4 inf", "seen-2", True,
            _mc(150, 31, n_features=8, n_informative=4, n_redundant=2), 150),
    Problem("mc 300x12, 3 classes, 5 inf", "seen-2", True,
            _mc(300, 32, n_features=12, n_informative=5, n_redundant=3, n_classes=3), 300),
    Problem("mc 600x25, binary 70/30, 6 inf, flip 3%", "seen-2", True,
            _mc(600, 33, n_features=25, n_informative=6, n_redundant=4, weights=[0.7], flip_y=0.03), 600),
    Problem("mc 1000x16, 4 classes, 2 clusters", "seen-2", True,
            _mc(1000, 34, n_features=16, n_informative=8, n_redundant=2, n_classes=4, class_sep=0.9), 1000),
    Problem("digits, 500-row subsample", "seen-2", True, _subsample(datasets.load_digits, 35), 500),
    Problem("moons 400, noise 0.25", "seen-2", True, _gen(datasets.make_moons, 400, 36, noise=0.25), 400),
    Problem("circles 800, noise 0.1, factor 0.6", "seen-2", True,
            _gen(datasets.make_circles, 800, 37, noise=0.1, factor=0.6), 800),
    Problem("friedman1 500, noise 0.5", "seen-2", False,
            _gen(datasets.make_friedman1, 500, 38, noise=0.5), 500),
    Problem("make_regression 300x8, 4 inf", "seen-2", False,
            _gen(datasets.make_regression, 300, 39, n_features=8, n_informative=4, noise=10.0), 300),
    Problem("friedman3 1000, noise 0.05", "seen-2", False,
            _gen(datasets.make_friedman3, 1000, 40, noise=0.05), 1000),
    # issue: make_classification with 4,000 labelled rows, issue 30's kind of problem,
    # looked at in round 4 (before its held-out half ran) to see whether the MLP's
    # defaults needed to change for it; a tuning group
    Problem("mc 4000x20, 5 inf, 3 classes", "issue", True,
            _mc(4000, 50, n_features=20, n_informative=5, n_redundant=2, n_classes=3), 4000),
    Problem("mc 4000x20, 6 inf, binary, flip 10%", "issue", True,
            _mc(4000, 51, n_features=20, n_informative=6, n_redundant=2, flip_y=0.1), 4000),
    Problem("mc 4000x30, 8 inf, 4 classes, sep 0.8", "issue", True,
            _mc(4000, 52, n_features=30, n_informative=8, n_redundant=4, n_classes=4, class_sep=0.8), 4000),
    Problem("mc 4000x20, 4 inf, binary, 2 clusters", "issue", True,
            _mc(4000, 53, n_features=20, n_informative=4, n_redundant=4, n_clusters_per_class=2), 4000),
    # held-out: the third split (round 4), written here before any of its problems ran
    # and before this round's one change (the LogisticRegression student's weights) was
    # frozen; run once, with the frozen defaults
    Problem("mc 4000x20, 6 inf, 3 classes, flip 5%", "held-out", True,
            _mc(4000, 60, n_features=20, n_informative=6, n_redundant=3, n_classes=3, flip_y=0.05), 4000),
    Problem("mc 4000x25, 10 inf, binary, sep 0.7", "held-out", True,
            _mc(4000, 61, n_features=25, n_informative=10, n_redundant=5, class_sep=0.7), 4000),
    Problem("mc 4000x20, 5 inf, 4 classes, 2 clusters", "held-out", True,
            _mc(4000, 62, n_features=20, n_informative=5, n_redundant=2, n_classes=4), 4000),
    Problem("hastie 10.2, 2000", "held-out", True, _gen(datasets.make_hastie_10_2, 2000, 63), 2000),
    Problem("gaussian quantiles 1500, 6 features, 3 classes", "held-out", True,
            _gen(datasets.make_gaussian_quantiles, 1500, 64, n_features=6, n_classes=3), 1500),
    Problem("mc 800x10, binary 90/10", "held-out", True,
            _mc(800, 65, n_features=10, n_informative=4, n_redundant=2, weights=[0.9]), 800),
    Problem("moons 1000, noise 0.35", "held-out", True, _gen(datasets.make_moons, 1000, 66, noise=0.35), 1000),
    Problem("mc 2500x50, 8 inf, 5 classes", "held-out", True,
            _mc(2500, 67, n_features=50, n_informative=8, n_redundant=6, n_classes=5), 2500),
    Problem("diabetes", "held-out", False, _shipped(datasets.load_diabetes), folds=5),
    Problem("friedman1 1000, noise 1", "held-out", False, _gen(datasets.make_friedman1, 1000, 68, noise=1.0), 1000),
    Problem("make_regression 1000x15, 5 inf", "held-out", False,
            _gen(datasets.make_regression, 1000, 69, n_features=15, n_informative=5, noise=25.0), 1000),
    Problem("sparse uncorrelated 1500", "held-out", False,
            _gen(datasets.make_sparse_uncorrelated, 1500, 70, n_features=10), 1500),
    # held-out-5: regression only (round 5), written here before any of its problems ran and
    # before round 5's change to the regression targets was frozen; round 4's regression
    # rows had been read by then. Run once, with the frozen defaults
    Problem("make_regression 600x10, 6 inf", "held-out-5", False,
            _gen(datasets.make_regression, 600, 80, n_features=10, n_informative=6, noise=15.0), 600),
    Problem("friedman2 800, noise 20", "held-out-5", False,
            _gen(datasets.make_friedman2, 800, 81, noise=20.0), 800),
    Problem("friedman1 3000, noise 2", "held-out-5", False,
            _gen(datasets.make_friedman1, 3000, 82, noise=2.0), 3000),
    Problem("sparse uncorrelated 400", "held-out-5", False,
            _gen(datasets.make_sparse_uncorrelated, 400, 83, n_features=8), 400),
    Problem("make_regression 2500x30, 15 inf, rank 10", "held-out-5", False,
            _gen(datasets.make_regression, 2500, 84, n_features=30, n_informative=15, noise=40.0,
                 effective_rank=10), 2500),
    Problem("friedman3 500, noise 0.1", "held-out-5", False,
            _gen(datasets.make_friedman3, 500, 85, noise=0.1), 500),
    # held-out-6: regression only (round 6), written here before any of its problems ran and
    # before round 6's change (regressors always cross-fitted) was frozen; round 5's rows had
    # been read by then. Run once, with the frozen defaults
    Problem("friedman1 1500, noise 1.5", "held-out-6", False,
            _gen(datasets.make_friedman1, 1500, 90, noise=1.5), 1500),
    Problem("make_regression 800x12, 8 inf", "held-out-6", False,
            _gen(datasets.make_regression, 800, 91, n_features=12, n_informative=8, noise=20.0), 800),
    Problem("sparse uncorrelated 2000", "held-out-6", False,
            _gen(datasets.make_sparse_uncorrelated, 2000, 92, n_features=12), 2000),
    Problem("friedman3 1500, noise 0.2", "held-out-6", False,
            _gen(datasets.make_friedman3, 1500, 93, noise=0.2), 1500),
    Problem("friedman2 400, noise 50", "held-out-6", False,
            _gen(datasets.make_friedman2, 400, 94, noise=50.0), 400),
    Problem("make_regression 4000x20, 10 inf, noise 60", "held-out-6", False,
            _gen(datasets.make_regression, 4000, 95, n_features=20, n_informative=10, noise=60.0), 4000),
    # held-out-7: regression only (round 7), written here before any of its problems ran and
    # before round 7's change (the fallback's candidate distilled from teachers refitted on
    # the training rows) was frozen; rounds 4-6 had been read by then. Run once
    Problem("friedman1 2500, noise 1.8", "held-out-7", False,
            _gen(datasets.make_friedman1, 2500, 100, noise=1.8), 2500),
    Problem("sparse uncorrelated 700", "held-out-7", False,
            _gen(datasets.make_sparse_uncorrelated, 700, 101, n_features=6), 700),
    Problem("make_regression 1500x10, 3 inf", "held-out-7", False,
            _gen(datasets.make_regression, 1500, 102, n_features=10, n_informative=3, noise=30.0), 1500),
    Problem("friedman3 800, noise 0.15", "held-out-7", False,
            _gen(datasets.make_friedman3, 800, 103, noise=0.15), 800),
    Problem("friedman2 3000, noise 100", "held-out-7", False,
            _gen(datasets.make_friedman2, 3000, 104, noise=100.0), 3000),
    Problem("friedman1 600, noise 3", "held-out-7", False,
            _gen(datasets.make_friedman1, 600, 105, noise=3.0), 600),
]

#: The tuning grid: (temperature, transfer-set size as a multiple of the training rows or
#: "auto", alpha). Regressors ignore the temperature.
GRID = [(t, size, 0.7) for t in (0.5, 1.0, 3.0) for size in (1, 4, "auto")] + [(1.0, 4, 0.3), (1.0, 4, 1.0)]


def splits(problem: Problem, quick: bool) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """Standardised (X_train, X_test, y_train, y_test) per split."""
    X, y = problem.load()
    if problem.folds:
        cut = StratifiedKFold if problem.classify else KFold
        folds = cut(problem.folds, shuffle=True, random_state=0).split(X, y)
        parts = [(X[a], X[b], y[a], y[b]) for a, b in folds]
    else:
        stratify = y if problem.classify else None
        parts = [train_test_split(X, y, test_size=len(y) - problem.n_train, random_state=0, stratify=stratify)]
        parts = [(p[0], p[1], p[2], p[3]) for p in parts]
    if quick:
        parts = [(a[:400], b[:400], c[:400], d[:400]) for a, b, c, d in parts[:1]]
    out = []
    for X_tr, X_te, y_tr, y_te in parts:
        scaler = StandardScaler().fit(X_tr)
        if not problem.classify:
            mean, std = y_tr.mean(), y_tr.std()
            y_tr, y_te = (y_tr - mean) / std, (y_te - mean) / std
        out.append((scaler.transform(X_tr), scaler.transform(X_te), y_tr, y_te))
    return out


def mlp(classify: bool) -> Any:
    cls = MLPClassifier if classify else MLPRegressor
    return cls(hidden_layer_sizes=(32,), max_iter=300, random_state=0)


def logistic() -> LogisticRegression:
    return LogisticRegression(max_iter=1000)


class Runner:
    """Fits and caches teachers and test predictions for one problem's splits."""

    def __init__(self, problem: Problem, quick: bool) -> None:
        self.problem, self.quick = problem, quick
        self.parts = splits(problem, quick)
        self.trees = 30 if quick else 500
        self._teachers: dict[int, Any] = {}
        slug = "".join(c if c.isalnum() else "-" for c in problem.name)
        self.folder = CACHE / (f"{slug}-quick" if quick else slug)
        self.folder.mkdir(parents=True, exist_ok=True)

    def teacher(self, i: int) -> Any:
        if i not in self._teachers:
            path = self.folder / f"teacher-{i}.apr"
            if path.exists():
                self._teachers[i] = aprender.load(path)
            else:
                cls = RandomForestClassifier if self.problem.classify else RandomForestRegressor
                X_tr, _, y_tr, _ = self.parts[i]
                model = cls(n_estimators=self.trees, random_state=0, n_jobs=1).fit(X_tr, y_tr)
                aprender.save(model, path)
                self._teachers[i] = model
        return self._teachers[i]

    def predictions(self, key: str, fit: Callable[[int], Any]) -> tuple[np.ndarray, dict]:
        """Test predictions over every split of the model ``fit(split)`` returns, cached under ``key``."""
        path = self.folder / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".npz")
        meta_path = path.with_suffix(".json")
        if path.exists() and meta_path.exists():
            return np.load(path)["pred"], json.loads(meta_path.read_text())
        preds, records, seconds = [], [], 0.0
        for i in range(len(self.parts)):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model = fit(i)
            seconds += time.perf_counter() - start
            preds.append(np.asarray(model.predict(self.parts[i][1])))
            fallback = getattr(model, "provenance_", {}).get("fallback")
            records.append(fallback)
        pred = np.concatenate(preds)
        meta = {"key": key, "seconds": seconds, "fallback": records}
        np.savez(path, pred=pred)
        meta_path.write_text(json.dumps(meta, default=str))
        return pred, meta

    def score(self, pred: np.ndarray) -> float:
        """Accuracy (or R²) in points over every split's test rows."""
        y = np.concatenate([p[3] for p in self.parts])
        return 100 * float(np.mean(pred == y) if self.problem.classify else r2_score(y, pred))

    def teacher_score(self) -> float:
        return self.score(self.predictions("teacher", lambda i: self.teacher(i))[0])

    def hard_score(self, student: Callable[[], Any], name: str) -> float:
        return self.score(self.predictions(f"hard {name}", lambda i: student().fit(self.parts[i][0],
                                                                                   self.parts[i][2]))[0])

    def distilled(self, student: Callable[[], Any], name: str, tag: str, **kwargs: Any) -> tuple[float, dict]:
        def fit(i: int) -> Any:
            X_tr, _, y_tr, _ = self.parts[i]
            return aprender.distill(self.teacher(i), student(), X_tr, y_tr, **kwargs)

        pred, meta = self.predictions(f"distill {name} {tag} {sorted(kwargs.items())}", fit)
        return self.score(pred), meta


def source_tag() -> str:
    """Hash of the distillation code: cached runs of the defaults are redone when it changes."""
    digest = hashlib.sha256()
    for path in sorted([*(ROOT / "aprender" / "distill").glob("*.py"), *(ROOT / "aprender").glob("*distill*.py")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def grid_kwargs(config: tuple, n_train: int) -> dict[str, Any]:
    temperature, size, alpha = config
    return {"temperature": temperature, "alpha": alpha, "validation_fraction": 0.0, "fallback": False,
            "transfer_size": size if size == "auto" else max(1, int(size * n_train))}


def closed(t: float, h: float, d: float) -> float | None:
    return (d - h) / (t - h) if t - h >= MIN_GAP else None


def kept_summary(metas: list[dict | None]) -> str:
    """Which candidate each split kept: ``untested`` when its held-out rows were too few to compare."""
    kept = ["no fallback" if not m else m["kept"] + ("" if m.get("decided", True) else " (untested)")
            for m in metas]
    return ", ".join(f"{k.replace('_', '-')}" + (f" x{kept.count(k)}" if len(kept) > 1 else "")
                     for k in sorted(set(kept))) or "-"


def run_grid(problems: list[Problem], quick: bool) -> list[str]:
    """The tuning grid (no fallback, no rows held out): mean share closed and worst deficit per config and kind."""
    results: dict[tuple, list[tuple[float | None, float]]] = {}
    for problem in problems:
        runner = Runner(problem, quick)
        t, h = runner.teacher_score(), runner.hard_score(partial(mlp, problem.classify), "mlp")
        n_train = len(runner.parts[0][0])
        for config in GRID[:1] if quick else GRID:
            if not problem.classify and config[0] != 1.0:
                continue  # the temperature does not apply
            d, _ = runner.distilled(partial(mlp, problem.classify), "mlp", "grid", **grid_kwargs(config, n_train))
            results.setdefault((problem.classify, *config), []).append((closed(t, h, d), d - h))
            print(f"grid {problem.name}: T={config[0]} size={config[1]} alpha={config[2]}: teacher {t:.2f} "
                  f"hard {h:.2f} distilled {d:.2f}", flush=True)
    lines = ["| Problems | T | Transfer set | alpha | Mean share closed (problems with a gap) | "
             "Worst distilled - hard |",
             "|---|---:|---|---:|---:|---:|"]
    for (classify, temperature, size, alpha), rows in sorted(results.items(), key=lambda kv: not kv[0][0]):
        shares = [c for c, _ in rows if c is not None]
        label = "auto (10 x rows, 20,000-60,000)" if size == "auto" else (
            "training rows only" if size == 1 else f"{size} x training rows")
        mean = f"{100 * np.mean(shares):.0f}% ({len(shares)})" if shares else "- (0)"
        kind = f"{len(rows)} classification" if classify else f"{len(rows)} regression"
        lines.append(f"| {kind} | {temperature if classify else '-'} | {label} | {alpha} | {mean} | "
                     f"{min(d for _, d in rows):+.2f} |")
    return lines


def run_defaults(problems: list[Problem], quick: bool) -> tuple[list[str], dict[str, str]]:
    """Per problem: teacher, hard-label and distilled MLP (defaults), and the logistic student."""
    tag = source_tag()
    mlp_rows = ["| Problem | Rows (train / test) | Teacher | Hard-label MLP | Distilled MLP | "
                "Share of the gap closed | Distilled - hard | Same, `random_state` 1 / 2 | Kept | Fit (s) |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    lr_rows = ["| Problem | Hard-label LR | Distilled LR, `fallback=False` | Defaults | Defaults - better of the "
               "two | Kept |", "|---|---:|---:|---:|---:|---|"]
    shares, deficits, lr_gaps = [], [], []
    for problem in problems:
        runner = Runner(problem, quick)
        t, h = runner.teacher_score(), runner.hard_score(partial(mlp, problem.classify), "mlp")
        d, meta = runner.distilled(partial(mlp, problem.classify), "mlp", f"defaults {tag}")
        share = closed(t, h, d)
        if share is not None:
            shares.append(share)
        deficits.append(d - h)
        n_train = sum(len(p[0]) for p in runner.parts) // len(runner.parts)
        # The same defaults with distill's other seeds (split and synthesis): how much of
        # distilled - hard is the seed. Reported beside seed 0, which the summary counts.
        others = [runner.distilled(partial(mlp, problem.classify), "mlp", f"defaults {tag}", random_state=seed)[0]
                  for seed in ((1, 2) if not quick else ())]
        n_test = sum(len(p[1]) for p in runner.parts)
        mlp_rows.append(f"| {problem.name} | {n_train:,} / {n_test:,} | {t:.2f} | {h:.2f} | {d:.2f} | "
                        f"{'teacher not better' if share is None else f'{100 * share:.0f}%'} | {d - h:+.2f} | "
                        f"{' / '.join(f'{o - h:+.2f}' for o in others) or '-'} | "
                        f"{kept_summary(meta['fallback'])} | {meta['seconds']:.0f} |")
        print(mlp_rows[-1], flush=True)
        if problem.classify:
            lh = runner.hard_score(logistic, "lr")
            lp, _ = runner.distilled(logistic, "lr", "pure", validation_fraction=0.0, fallback=False)
            ld, lmeta = runner.distilled(logistic, "lr", f"defaults {tag}")
            lr_gaps.append(ld - max(lh, lp))
            lr_rows.append(f"| {problem.name} | {lh:.2f} | {lp:.2f} | {ld:.2f} | {ld - max(lh, lp):+.2f} | "
                           f"{kept_summary(lmeta['fallback'])} |")
            print(lr_rows[-1], flush=True)
    summary = {
        "mean": f"{100 * np.mean(shares):.0f}% over {len(shares)} problems with a gap" if shares else "-",
        "worst": f"{min(deficits):+.2f} points" if deficits else "-",
        "lr": f"{min(lr_gaps):+.2f} points" if lr_gaps else "-",
    }
    return [*mlp_rows, *(["", *lr_rows] if lr_gaps else [])], summary


#: The groups of :data:`PROBLEMS`, in the order the report gives them.
TITLES = {
    "held-out-7": "Held-out regression problems (round 7: run once, with the frozen defaults)",
    "held-out-6": "Held-out regression problems (round 6: run once, with the frozen defaults)",
    "held-out-5": "Held-out regression problems (round 5: run once, with the frozen defaults)",
    "held-out": "Held-out half (third split, round 4: run once, with the frozen defaults)",
    "issue": "Tuning, issue 30's kind (make_classification, 4,000 labelled rows; looked at in round 4)",
    "seen-2": "Tuning, seen in round 3 (the second split's held-out half)",
    "tuning": "Tuning half (the first split's tuning half)",
    "seen": "Tuning half, seen (the first split's held-out half: reported in the first round, tuned on since)",
}


def section(halves: dict[str, tuple[list[str], dict[str, str]]], grid: list[str] | None) -> str:
    from aprender.distillation import distill

    defaults = {k: v.default for k, v in __import__("inspect").signature(distill).parameters.items()
                if k in ("temperature", "alpha", "transfer_size", "validation_fraction")}
    lines = [f"Machine: {machine()}.", "",
             "Defaults: " + ", ".join(f"`{k}={v!r}`" for k, v in defaults.items()) + "; RF(500) teacher, "
             "MLP(32) student (`max_iter=300`), test accuracy (R² for regressors) in points. "
             "Generated problems: the stated training rows and 4,000 fresh test rows; shipped datasets: "
             "k-fold (stratified for classifiers), every row tested once; the digits subsample: 500 training "
             "rows, the other 1,297 test. Below 1,000 labelled rows the fallback cross-fits (5 folds over every "
             "labelled row).", ""]
    for half, title in TITLES.items():
        if half not in halves:
            continue
        rows, summary = halves[half]
        logistic = (f"; LogisticRegression student, worst defaults - better of the two {summary['lr']}"
                    if summary["lr"] != "-" else "")
        lines += [f"**{title}**: mean share of the gap closed {summary['mean']}; worst distilled - hard "
                  f"{summary['worst']}{logistic}.", "", *rows, ""]
    if grid:
        lines += ["**Tuning grid** (tuning problems only; no rows held out, no fallback):", "", *grid, ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke run; writes nothing")
    parser.add_argument("--grid", action="store_true", help="also run the tuning grid on the tuning problems")
    parser.add_argument("--half", choices=(*TITLES, "all"), default="all",
                        help="one group (written to its own section) or all of them")
    parser.add_argument("--only", help="problems whose name contains this text")
    args = parser.parse_args(argv)
    chosen = [p for p in PROBLEMS if not args.only or args.only in p.name]
    if args.quick:
        chosen = [p for p in chosen if p.name in ("iris", "friedman1 2000", "wine", "friedman3 2000")]
    grid = run_grid([p for p in chosen if not p.half.startswith("held-out")], args.quick) if args.grid else None
    if grid:
        print("\n".join(grid), flush=True)
    halves = {}
    for half in TITLES:
        if args.half in (half, "all"):
            halves[half] = run_defaults([p for p in chosen if p.half == half], args.quick)
    text = section(halves, grid)
    print(text)
    if not args.quick and not args.only:
        name = "distill-panel" if args.half == "all" else f"distill-panel-{args.half}"
        write_section(name, text)
        write_section(name, text, readme=ROOT / "docs/distill.md")


if __name__ == "__main__":
    sys.exit(main())
