"""Exact fast paths for the estimators served most: scikit-learn's own arithmetic, without its
per-call input checks.

A served request's rows are already a 2-D float64 array of the right width, yet scikit-learn
validates them again on every call: in scikit-learn 1.9 that costs ~0.4 ms of a one-row
``LogisticRegression.predict`` (dataframe detection, array-API dispatch, finiteness), and a
forest pays ~50 µs per tree for its joblib loop. For linear models, trees and forests the
arithmetic after the checks is a few numpy operations, repeated here in the same order, so the
results are the same bits. XGBoost and LightGBM estimators get their booster's own predict
(:mod:`aprender.serve._fast_boosters`). A fast path is used only when

- the estimator's method is the very scikit-learn function the kernel repeats (a subclass that
  overrides it keeps its own method),
- the kernel gives bit-identical outputs to the method on probe rows at warm-up (:func:`fast_method`),
- and, per call, the rows are float64 and finite (after the float32 cast, for trees; XGBoost and
  LightGBM take missing values, as their wrappers do, and are probed with them): anything else goes
  to the estimator's method, which converts or refuses it with its own error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit

from aprender.serve._fast_boosters import BOOSTER_KERNELS, TAKE_MISSING

__all__ = ["fast_method"]

Kernel = Callable[[np.ndarray], "np.ndarray | None"]


def _linear_scores(est: Any) -> Kernel | None:
    """``LinearClassifierMixin.decision_function`` after ``validate_data``."""
    coef, intercept = est.coef_, est.intercept_
    if not isinstance(coef, np.ndarray):  # sparse coef_ (sparsify()): scikit-learn's own path
        return None
    coef_t = coef.T if coef.ndim == 2 else coef

    def scores(X: np.ndarray) -> np.ndarray:
        s = X @ coef_t + intercept
        return s.reshape(-1) if s.ndim > 1 and s.shape[1] == 1 else s

    return scores


def _linear_classes(est: Any) -> Kernel | None:
    """``LinearClassifierMixin.predict``: the class of the best score (of a positive one if binary)."""
    scores, classes = _linear_scores(est), est.classes_
    if scores is None:
        return None

    def predict(X: np.ndarray) -> np.ndarray:
        s = scores(X)
        indices = (s > 0).astype(np.intp) if s.ndim == 1 else s.argmax(axis=1)
        return classes.take(indices, axis=0)

    return predict


def _logistic_proba(est: Any) -> Kernel | None:
    """``LogisticRegression.predict_proba``: expit (binary) or scikit-learn's in-place softmax."""
    scores = _linear_scores(est)
    if scores is None:
        return None
    binary = np.size(est.classes_) <= 2

    def proba(X: np.ndarray) -> np.ndarray:
        s = scores(X)
        if binary:
            p = expit(s, out=s)
            return np.stack([1 - p, p], axis=1)
        s -= s.max(axis=1).reshape(-1, 1)
        np.exp(s, out=s)
        s /= s.sum(axis=1).reshape(-1, 1)
        return s

    return proba


def _linear_regression(est: Any) -> Kernel | None:
    """``LinearModel.predict`` (``_decision_function`` after ``validate_data``)."""
    coef, intercept = est.coef_, est.intercept_
    if not isinstance(coef, np.ndarray):
        return None
    coef_t = coef if coef.ndim == 1 else coef.T
    return lambda X: X @ coef_t + intercept


def _float32(X: np.ndarray) -> np.ndarray | None:
    """Trees compare float32 features; a value that overflows float32 is scikit-learn's error to raise."""
    with np.errstate(over="ignore"):  # scikit-learn's own call warns, then raises
        X32 = X.astype(np.float32)
    return X32 if math.isfinite(X32.sum()) else None  # (a finite sum that overflows takes the method)


def _summed(trees: list[Any], column: slice | int) -> Callable[[np.ndarray], np.ndarray | None]:
    """The forests' ``_accumulate_prediction`` loop: tree outputs added in order, then averaged."""

    def run(X: np.ndarray) -> np.ndarray | None:
        X32 = _float32(X)
        if X32 is None:
            return None
        total = None
        for tree in trees:
            value = tree.predict(X32)[:, column]
            if total is None:
                total = np.zeros(value.shape, dtype=np.float64)
            total += value
        total /= len(trees)
        return total

    return run


def _forest_proba(est: Any) -> Kernel | None:
    if est.n_outputs_ != 1:
        return None
    return _summed([e.tree_ for e in est.estimators_], slice(None, int(est.n_classes_)))


def _forest_classes(est: Any) -> Kernel | None:
    proba, classes = _forest_proba(est), est.classes_
    if proba is None:
        return None

    def predict(X: np.ndarray) -> np.ndarray | None:
        p = proba(X)
        return None if p is None else classes.take(p.argmax(axis=1), axis=0)

    return predict


def _forest_regression(est: Any) -> Kernel | None:
    if est.n_outputs_ != 1:
        return None
    return _summed([e.tree_ for e in est.estimators_], 0)


def _tree_proba(est: Any) -> Kernel | None:
    if est.n_outputs_ != 1:
        return None
    tree, n_classes = est.tree_, int(est.n_classes_)

    def proba(X: np.ndarray) -> np.ndarray | None:
        X32 = _float32(X)
        return None if X32 is None else tree.predict(X32)[:, :n_classes]

    return proba


def _tree_predict(est: Any) -> Kernel | None:
    """``BaseDecisionTree.predict``: the best class of the leaf, or its value for a regressor."""
    if est.n_outputs_ != 1:
        return None
    tree = est.tree_
    classes = getattr(est, "classes_", None)

    def predict(X: np.ndarray) -> np.ndarray | None:
        X32 = _float32(X)
        if X32 is None:
            return None
        values = tree.predict(X32)
        return values[:, 0] if classes is None else classes.take(values.argmax(axis=1), axis=0)

    return predict


#: The scikit-learn function a method must be (not merely override), by module and qualified name
#: (no import needed to look it up) -> the kernel repeating its arithmetic.
_KERNELS: dict[tuple[str, str], Callable[[Any], Kernel | None]] = {
    ("sklearn.linear_model._base", "LinearClassifierMixin.decision_function"): _linear_scores,
    ("sklearn.linear_model._base", "LinearClassifierMixin.predict"): _linear_classes,
    ("sklearn.linear_model._logistic", "LogisticRegression.predict_proba"): _logistic_proba,
    ("sklearn.linear_model._base", "LinearModel.predict"): _linear_regression,
    ("sklearn.linear_model._base", "MultiOutputLinearModel.predict"): _linear_regression,  # super().predict
    ("sklearn.linear_model._ridge", "Ridge.predict"): _linear_regression,  # super().predict
    ("sklearn.ensemble._forest", "ForestClassifier.predict_proba"): _forest_proba,
    ("sklearn.ensemble._forest", "ForestClassifier.predict"): _forest_classes,
    ("sklearn.ensemble._forest", "ForestRegressor.predict"): _forest_regression,
    ("sklearn.tree._classes", "DecisionTreeClassifier.predict_proba"): _tree_proba,
    ("sklearn.tree._classes", "BaseDecisionTree.predict"): _tree_predict,
    **BOOSTER_KERNELS,
}


def _probes(n_features: int, missing: bool = False) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    probes = [np.zeros((1, n_features)), rng.standard_normal((8, n_features)),
              rng.standard_normal((3, n_features)) * 1e3]
    if missing:  # a missing value in every column, one row entirely missing
        gaps = rng.standard_normal((n_features + 1, n_features))
        gaps[np.arange(n_features), np.arange(n_features)] = np.nan
        gaps[-1] = np.nan
        probes.append(gaps)
    return probes


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def fast_method(estimator: Any, name: str, n_features: int) -> Callable[[np.ndarray], Any] | None:
    """``estimator.<name>`` through a fast kernel, or None if there is none giving the same bits.

    The callable returned takes what the method takes: rows that are not finite float64 go to
    the method itself.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> fast = fast_method(model, "predict_proba", 1)
    >>> X = np.array([[0.5], [2.5]])
    >>> bool((fast(X) == model.predict_proba(X)).all())
    True
    >>> fast_method(model, "transform", 1) is None
    True
    """
    method = getattr(estimator, name, None)
    function = getattr(type(estimator), name, None)
    key = (getattr(function, "__module__", None), getattr(function, "__qualname__", None))
    make, missing = _KERNELS.get(key), key in TAKE_MISSING
    if method is None or make is None:
        return None
    try:
        kernel = make(estimator)
        if kernel is None or not all(_same(kernel(X), method(X)) for X in _probes(n_features, missing)):
            return None
    except Exception:  # a probe the model refuses, an attribute it lacks: keep the method
        return None

    def call(X: np.ndarray) -> Any:
        # a sum is finite only if every value is (a finite sum that overflows just takes the method)
        if X.dtype == np.float64 and X.ndim == 2 and (missing or math.isfinite(X.sum())):
            out = kernel(X)
            if out is not None:
                return out
        return method(X)

    return call
