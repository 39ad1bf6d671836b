"""Every scikit-learn estimator, built as scikit-learn's own test suite builds it, fitted on small data.

``instances()`` walks ``sklearn.utils.all_estimators()`` through
``sklearn.utils._test_common.instance_generator._construct_instances`` (the instances
scikit-learn's ``check_estimator`` suite uses) and gives each a stable id.
``fitted(id)`` fits it once per process on data that suits its tags (text, dicts,
positive values, multi-output targets, ...) and returns the rows to run inference on.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any
from unittest import SkipTest

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier
from sklearn.utils import all_estimators, get_tags
from sklearn.utils._test_common.instance_generator import _construct_instances
from threadpoolctl import threadpool_limits

#: Inference methods compared after a roundtrip, where the estimator has them.
METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score_samples")

#: Instances aprender refuses to save, and why (docs/codec.md, "Refused estimators");
#: test_all_estimators.py checks that saving them says so.
REFUSED: dict[str, str] = {}

_TEXT = [
    "the quick brown fox jumps", "over the lazy dog", "a quick brown dog", "the fox and the dog",
    "lazy foxes sleep all day", "quick quick brown", "dogs and foxes play", "the end of the day",
] * 3


@cache
def instances() -> dict[str, Any]:
    """id -> unfitted instance, for every instance the generator builds (stable ids)."""
    out: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in all_estimators():
            try:
                built = list(_construct_instances(cls))
            except SkipTest:
                continue
            for i, est in enumerate(built):
                out[name if len(built) == 1 else f"{name}-{i}"] = est
    return out


def _precomputed(est: Any) -> bool:
    params = est.get_params(deep=False)
    return "precomputed" in (params.get("metric"), params.get("kernel"), params.get("affinity"))


def _data(est: Any) -> tuple[Any, Any, Any]:
    """(X, y, rows) suited to ``est``'s tags: y is always given (fit ignores it where unused)."""
    tags = get_tags(est)
    name = type(est).__name__
    rng = np.random.RandomState(0)
    n, d = 48, 5
    X = rng.normal(size=(n, d))
    X[:, 0] += np.repeat([0.0, 2.0, 4.0], n // 3)
    if tags.input_tags.positive_only:
        X = np.abs(X)
    y_cls = np.repeat([0, 1, 2], n // 3)
    y_reg = X[:, 0] * 2.0 + X[:, 1] + 0.1 * rng.normal(size=n)
    if name in ("GammaRegressor", "PoissonRegressor", "TweedieRegressor"):
        y_reg = np.abs(y_reg) + 0.1
    if name in ("FixedThresholdClassifier", "TunedThresholdClassifierCV"):
        y_cls = np.repeat([0, 1], n // 2)
    if not tags.input_tags.two_d_array and tags.input_tags.dict:
        X = [{"a": float(v), "b": str(int(v > 0))} for v in X[:, 1]]
    elif not tags.input_tags.two_d_array and tags.input_tags.string:
        X = list(_TEXT[: n // 2])
        y_cls, y_reg = np.repeat([0, 1], len(X) // 2), np.arange(len(X), dtype=float)
    elif name == "FeatureHasher":
        X = [{"a": float(v), "b": 1.0} for v in X[:, 1]]
    elif name == "PatchExtractor":
        X = rng.normal(size=(3, 8, 8))
    elif name == "IsotonicRegression":
        X = X[:, 0]
    elif name == "CategoricalNB":
        X = np.abs(X).astype(int) % 4
    elif name == "SparseCoder":
        X = X[:, : est.dictionary.shape[1]]
    elif _precomputed(est) or name == "KernelCenterer":
        X = X @ X.T
    if name in ("LabelEncoder", "LabelBinarizer", "MultiLabelBinarizer"):
        X = [[0, 1], [1, 2], [2]] if name == "MultiLabelBinarizer" else y_cls
        return X, None, X
    if tags.target_tags.multi_output and not tags.target_tags.single_output:
        two = (y_reg, -y_reg) if tags.regressor_tags is not None else (y_cls, 2 - y_cls)
        y = np.stack(two, axis=1)
    elif tags.classifier_tags is not None or name == "NeighborhoodComponentsAnalysis" \
            or is_classifier(est.get_params(deep=False).get("estimator") or est):
        y = y_cls
    else:
        y = y_reg
    return X, y, X


@cache
def fitted(key: str) -> tuple[Any, Any]:
    """The instance ``key`` fitted once per process, and the rows to run inference on."""
    from sklearn.base import clone

    return fit(clone(instances()[key]))


def fit(est: Any) -> tuple[Any, Any]:
    """Fit ``est`` on data that suits it, as :func:`fitted` does; return it and the rows to run inference on."""
    from sklearn.utils._testing import set_random_state

    X, y, rows = _data(est)
    # A seed for every random_state left at None (SGDClassifier's shuffle): the same fit in every
    # process, whatever ran before it, so a parity at the edge of its tolerance is not a coin toss.
    set_random_state(est, 0)
    # One thread: on a busy 2-core CI machine OpenMP workers spin against each other
    # (HistGradientBoostingClassifier took 18 s instead of 0.05 s on these 48 rows).
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore")
        if y is None:
            est.fit(X)
        else:
            est.fit(X, y)
    # Inference runs on a copy: an estimator that keeps its training X (LabelSpreading's X_)
    # takes scikit-learn's `X is Y` shortcut in euclidean_distances when given the same object,
    # which a reloaded model, holding its own array, never takes.
    return est, rows.copy() if isinstance(rows, np.ndarray) else rows


def outputs(est: Any, rows: Any) -> dict[str, Any]:
    """Every inference method's output on ``rows`` (exceptions recorded by type)."""
    out: dict[str, Any] = {}
    for method in METHODS:
        if not hasattr(est, method):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = getattr(est, method)(rows)
            except Exception as exc:  # the original raises too: compare the error type
                value = type(exc)
        out[method] = value
    return out


def same(a: Any, b: Any) -> bool:
    """Bit-identical outputs (arrays, sparse matrices, tuples, exception types)."""
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    if sp.issparse(a) or sp.issparse(b):
        return sp.issparse(a) and sp.issparse(b) and same(a.toarray(), b.toarray())
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "O":
        return all(map(_same_item, a.ravel(), b.ravel()))
    return a.tobytes() == b.tobytes()


def _same_item(a: Any, b: Any) -> bool:
    if isinstance(a, (np.ndarray, tuple, list)) or sp.issparse(a):
        return same(a, b)
    if a is None or isinstance(a, (str, int, float, np.generic)):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return type(a) is type(b)  # estimators and helper objects: their outputs are compared
