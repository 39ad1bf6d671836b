"""Shared fitted models for the roundtrip tests of every format.

Each ``Case`` builds one fitted estimator and the rows to run inference on. Format
tests parametrize over ``CASES`` so that every estimator in the zoo is exercised by
every backend. ``CASES`` holds the cases below plus the ``CASES`` list of every
``tests/support/cases_*.py`` module (one per estimator family). Keep fits small: the whole
suite must stay fast on 2 cores.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_diabetes, load_iris

from aprender.cluster import KMeans
from aprender.linear_model import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge
from aprender.preprocessing import StandardScaler

#: Inference methods compared after a roundtrip, where the estimator has them.
INFERENCE_METHODS = (
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "transform",
    "score_samples",
    "kneighbors",
)


@dataclass(frozen=True)
class Case:
    """A named recipe for a fitted estimator and its inference rows."""

    id: str
    build: Callable[[], tuple[Any, Any]]

    def make(self) -> tuple[Any, Any]:
        """The fitted estimator and its rows, fitted once per test process: treat as read-only."""
        return _fitted(self)

    def fresh(self) -> tuple[Any, Any]:
        """A newly fitted estimator, for tests that change it or compare two fits."""
        return self.build()

    def __repr__(self) -> str:
        return self.id


@cache
def _fitted(case: Case) -> tuple[Any, Any]:
    return case.build()


@cache
def iris() -> tuple[np.ndarray, np.ndarray]:
    return load_iris(return_X_y=True)


@cache
def diabetes() -> tuple[np.ndarray, np.ndarray]:
    return load_diabetes(return_X_y=True)


def _fit_classifier(est: Any) -> tuple[Any, np.ndarray]:
    X, y = iris()
    return est.fit(X, y), X


def _fit_regressor(est: Any) -> tuple[Any, np.ndarray]:
    X, y = diabetes()
    return est.fit(X, y), X


def _fit_unsupervised(est: Any) -> tuple[Any, np.ndarray]:
    X, _ = iris()
    return est.fit(X), X


BASE_CASES: list[Case] = [
    Case("LinearRegression", lambda: _fit_regressor(LinearRegression())),
    Case("LinearRegression-multi", lambda: (
        LinearRegression().fit(diabetes()[0], np.c_[diabetes()[1], diabetes()[1] ** 0.5]), diabetes()[0])),
    Case("Ridge", lambda: _fit_regressor(Ridge(alpha=0.5))),
    Case("Lasso", lambda: _fit_regressor(Lasso(alpha=0.1))),
    Case("ElasticNet", lambda: _fit_regressor(ElasticNet(alpha=0.01, l1_ratio=0.3))),
    Case("LogisticRegression", lambda: _fit_classifier(LogisticRegression(max_iter=1000))),
    Case("LogisticRegression-binary", lambda: (LogisticRegression().fit(iris()[0], iris()[1] == 1), iris()[0])),
    Case("LogisticRegression-strings", lambda: (LogisticRegression(max_iter=1000).fit(
        iris()[0], np.array(["setosa", "versicolor", "virginica"])[iris()[1]]), iris()[0])),
    Case("KMeans", lambda: _fit_unsupervised(KMeans(n_clusters=3, n_init=2, random_state=0))),
    Case("StandardScaler", lambda: _fit_unsupervised(StandardScaler())),
]


def _family_cases() -> list[Case]:
    from pathlib import Path

    cases = []
    for path in sorted(Path(__file__).parent.glob("cases_*.py")):
        cases.extend(importlib.import_module(path.stem).CASES)
    return cases


CASES: list[Case] = BASE_CASES + _family_cases()


def outputs(est: Any, X: Any) -> dict[str, Any]:
    """Every available inference method's output on ``X``."""
    out = {}
    for name in INFERENCE_METHODS:
        if hasattr(est, name):
            out[name] = getattr(est, name)(X)
    return out


def assert_identical_outputs(original: Any, loaded: Any, X: Any) -> None:
    """The loaded estimator reproduces every output bit for bit."""
    expected, actual = outputs(original, X), outputs(loaded, X)
    assert expected, f"{type(original).__name__} has no inference method to compare"
    assert expected.keys() == actual.keys()
    for name, value in expected.items():
        values = value if isinstance(value, tuple) else (value,)
        others = actual[name] if isinstance(actual[name], tuple) else (actual[name],)
        for a, b in zip(values, others, strict=True):
            if sp.issparse(a):  # vectorizers, one-hot encoders: compare the matrix type, then the values
                assert type(a) is type(b), f"{name}: {type(a).__name__} != {type(b).__name__}"
                a, b = a.toarray(), b.toarray()
            a, b = np.asarray(a), np.asarray(b)
            assert a.dtype == b.dtype, f"{name}: dtype {a.dtype} != {b.dtype}"
            assert a.shape == b.shape, f"{name}: shape {a.shape} != {b.shape}"
            assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), f"{name} differs after the roundtrip"
