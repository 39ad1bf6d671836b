"""Zoo cases of the tree family: decision trees, random forests, gradient boosting.

Every case here runs through every format's roundtrip tests (see zoo.py). Forests
and boosting are kept small (10-20 trees, shallow) so the suite stays fast.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits
from zoo import Case, diabetes, iris

from aprender.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from aprender.tree import DecisionTreeClassifier, DecisionTreeRegressor

_NAMES = np.array(["setosa", "versicolor", "virginica"])


def _fit(est, X, y):
    # One OpenMP thread: HistGradientBoosting's threads spin and crawl on a loaded 2-core CI box.
    with threadpool_limits(1, user_api="openmp"):
        return est.fit(X, y)


def _classify(est, labels=None):
    X, y = iris()
    return _fit(est, X, y if labels is None else labels[y]), X


def _regress(est):
    X, y = diabetes()
    return _fit(est, X, y), X


def _with_missing(X: np.ndarray) -> np.ndarray:
    """Every 7th value of feature 2 missing: exercises the trees' missing-value branches."""
    X = X.copy()
    X[::7, 2] = np.nan
    return X


def _hgb_missing():
    X, y = diabetes()
    X = _with_missing(X)
    est = HistGradientBoostingRegressor(max_iter=20, early_stopping=True, validation_fraction=0.2, random_state=0)
    return _fit(est, X, y), X


CASES = [
    Case("DecisionTreeClassifier", lambda: _classify(DecisionTreeClassifier(random_state=0))),
    Case("DecisionTreeClassifier-strings", lambda: _classify(
        DecisionTreeClassifier(max_depth=3, random_state=0), _NAMES)),
    Case("DecisionTreeRegressor", lambda: _regress(DecisionTreeRegressor(max_depth=6, random_state=0))),
    Case("RandomForestClassifier", lambda: _classify(
        RandomForestClassifier(n_estimators=15, max_depth=5, oob_score=True, random_state=0))),
    Case("RandomForestClassifier-strings", lambda: _classify(
        RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0), _NAMES)),
    Case("RandomForestRegressor", lambda: _regress(
        RandomForestRegressor(n_estimators=12, max_depth=5, random_state=0))),
    Case("GradientBoostingClassifier", lambda: _classify(
        GradientBoostingClassifier(n_estimators=15, max_depth=2, subsample=0.8, random_state=0))),
    Case("GradientBoostingClassifier-binary", lambda: _classify(
        GradientBoostingClassifier(n_estimators=15, max_depth=2, random_state=0), np.arange(3) == 1)),
    Case("GradientBoostingRegressor", lambda: _regress(
        GradientBoostingRegressor(n_estimators=15, max_depth=3, loss="huber", random_state=0))),
    Case("HistGradientBoostingClassifier", lambda: _classify(
        HistGradientBoostingClassifier(max_iter=20, random_state=0))),
    Case("HistGradientBoostingRegressor-missing", _hgb_missing),
]
