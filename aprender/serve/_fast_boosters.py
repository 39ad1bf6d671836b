"""Exact fast paths for XGBoost and LightGBM estimators: the booster's own predict, called once per
request with the arguments the scikit-learn wrapper would pass, then the wrapper's own post-processing.

The wrappers cost far more than a small booster's prediction on the rows of one request: LightGBM's
``LGBMClassifier.predict`` runs scikit-learn's ``validate_data`` and hands the booster every
constructor parameter as a config string that LightGBM's C++ side parses again on every call
(~1 ms of a one-row call, against ~70 µs for the booster); and both libraries run a one-row
prediction on a full OpenMP team (XGBoost's rebuilt booster has ``nthread=0``: every core), whose
threads spin after each call and take the CPU the server needs for its next request. Here:

- XGBoost: ``Booster.inplace_predict`` on a copy of the booster with ``nthread=1`` (the estimator's
  own booster, and so its ``get_params`` and anything saved from it, is left as loaded), with the
  iteration range and ``missing`` value the wrapper passes;
- LightGBM: ``Booster.predict`` with ``num_threads=1`` and those of the estimator's parameters that
  LightGBM documents as prediction parameters (:data:`LGBM_PREDICT_PARAMS`); every other parameter is a
  training parameter that does not reach prediction.

Then the wrapper's arithmetic: the class of the best probability (of one above 0.5 for XGBoost's
binary objective), the two-column probabilities of a binary model. The kernels of one estimator's
outputs share its booster call (and XGBoost's one copy of the booster), which remembers its last
rows: a request for both labels and probabilities calls the booster once, as each wrapper derives
both from the same booster output. One thread suits the server's
rows (one request, or a batch of at most a few dozen); a call of more than :data:`MAX_ROWS` rows
goes to the estimator's method, on the threads the estimator was given. As for every fast path,
:func:`aprender.serve._fast.fast_method` uses a kernel only where it gives the method's bits on
probe rows, and tests compare it with the method on many rows.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["BOOSTER_KERNELS", "LGBM_PREDICT_PARAMS", "MAX_ROWS", "TAKE_MISSING"]

Kernel = Callable[[np.ndarray], "np.ndarray | None"]

#: Most rows a kernel predicts on one thread; more go to the estimator's own (threaded) method.
MAX_ROWS = 1024
#: LightGBM's documented prediction parameters ("Predict Parameters" of its Parameters page) that a
#: ``predict`` call on an array can use (none has an alias); the iteration range and the kind of
#: output are passed as the call's own arguments, as the wrapper does.
LGBM_PREDICT_PARAMS = ("pred_early_stop", "pred_early_stop_freq", "pred_early_stop_margin",
                       "predict_disable_shape_check")
#: XGBoost objectives whose ``predict_proba`` is the booster's output (softprob) or its two-column
#: form (logistic), and whose ``predict`` is the class of the best probability or of one above 0.5.
_XGB_PROBABILITIES = ("binary:logistic", "multi:softprob")


#: Each estimator's booster call, shared by its outputs' kernels (one booster copy per estimator).
_VALUES: weakref.WeakKeyDictionary[Any, Kernel] = weakref.WeakKeyDictionary()


def _shared(make: Callable[[Any], Kernel]) -> Callable[[Any], Kernel]:
    """``make(est)`` once per estimator, limited to :data:`MAX_ROWS` rows, remembering its last call:
    a request for both ``predict`` and ``predict_proba`` calls the booster once (the outputs are
    called one after the other on the same rows, which the remembered call holds alive, so that
    identity cannot be taken by other rows)."""

    def values(est: Any) -> Kernel:
        kernel = _VALUES.get(est)
        if kernel is not None:
            return kernel
        run = make(est)
        last: list[tuple[Any, Any]] = [(None, None)]

        def kernel(X: np.ndarray) -> np.ndarray | None:
            if len(X) > MAX_ROWS:
                return None
            seen, out = last[0]  # one read: a tuple replaced whole, so consistent across threads
            if seen is not X:
                out = run(X)
                last[0] = (X, out)
            return out

        _VALUES[est] = kernel
        return kernel

    return values


@_shared
def _xgb_values(est: Any) -> Kernel:
    """``XGBModel.predict`` (``predict_type="value"``) on a one-thread copy of the booster."""
    booster = est.get_booster().copy()
    booster.set_param({"nthread": 1})
    # the wrapper's own choice of trees (best_iteration after early stopping); private, so a release
    # that renames it leaves the estimator's method in place (fast_method keeps it on any error)
    iterations = est._get_iteration_range(None)
    missing = est.missing
    return lambda X: booster.inplace_predict(X, iteration_range=iterations, predict_type="value",
                                             missing=missing, validate_features=True)


def _xgb_binary(est: Any) -> bool | None:
    """Whether an XGBoost classifier is binary (logistic), multiclass (softprob), or neither (None)."""
    if est.objective not in _XGB_PROBABILITIES:
        return None
    return est.objective == "binary:logistic"


def _probabilities(values: Kernel, binary: bool) -> Kernel:
    """The wrappers' ``predict_proba`` from the booster's values: a binary model's one column as two."""
    def proba(X: np.ndarray) -> np.ndarray | None:
        p = values(X)
        if p is None or not binary:  # (a copy: the remembered values stay as the booster gave them)
            return None if p is None else p.copy()
        return np.vstack((1.0 - p, p)).transpose()

    return proba


def _xgb_proba(est: Any) -> Kernel | None:
    binary = _xgb_binary(est)
    if binary is None:
        return None
    return _probabilities(_xgb_values(est), binary)


def _xgb_classes(est: Any) -> Kernel | None:
    """``XGBClassifier.predict``: column indices (XGBoost's labels are 0 .. n_classes - 1)."""
    binary = _xgb_binary(est)
    if binary is None:
        return None
    values = _xgb_values(est)

    def predict(X: np.ndarray) -> np.ndarray | None:
        p = values(X)
        if p is None:
            return None
        if not binary:
            return np.argmax(p, axis=1)
        indices = np.repeat(0, p.shape[0])
        indices[p > 0.5] = 1
        return indices

    return predict


@_shared
def _lgbm_booster(est: Any) -> Kernel:
    """``LGBMModel.predict`` without its input checks, on one thread."""
    chosen = est.get_params()
    params = {name: chosen[name] for name in LGBM_PREDICT_PARAMS if name in chosen}
    params["num_threads"] = 1
    booster = est.booster_
    return lambda X: booster.predict(X, num_iteration=None, **params)


def _lgbm_values(est: Any) -> Kernel | None:
    if callable(est.objective):  # the wrapper returns raw scores with a warning: its own method
        return None
    return _lgbm_booster(est)


def _lgbm_proba(est: Any) -> Kernel | None:
    values = _lgbm_values(est)
    if values is None:
        return None
    return _probabilities(values, est.n_classes_ <= 2)


def _lgbm_classes(est: Any) -> Kernel | None:
    """``LGBMClassifier.predict``: the label of the best probability."""
    proba, classes = _lgbm_proba(est), est.classes_
    if proba is None:
        return None

    def predict(X: np.ndarray) -> np.ndarray | None:
        p = proba(X)
        return None if p is None else classes[np.argmax(p, axis=1)]

    return predict


def _copied(values: Kernel | None) -> Kernel | None:
    """The booster's values as a regressor's answer: a copy, as the remembered values must stay as given."""
    if values is None:
        return None
    return lambda X: None if (out := values(X)) is None else out.copy()


#: The XGBoost / LightGBM wrapper functions (module, qualified name) -> their kernel.
BOOSTER_KERNELS: dict[tuple[str, str], Callable[[Any], Kernel | None]] = {
    ("xgboost.sklearn", "XGBModel.predict"): lambda est: _copied(_xgb_values(est)),
    ("xgboost.sklearn", "XGBClassifier.predict"): _xgb_classes,
    ("xgboost.sklearn", "XGBClassifier.predict_proba"): _xgb_proba,
    ("lightgbm.sklearn", "LGBMModel.predict"): lambda est: _copied(_lgbm_values(est)),
    ("lightgbm.sklearn", "LGBMClassifier.predict"): _lgbm_classes,
    ("lightgbm.sklearn", "LGBMClassifier.predict_proba"): _lgbm_proba,
}
#: Kernels that take rows with missing or infinite values, as their methods do (the wrappers pass NaN
#: and infinities to the booster unchecked): checked on probe rows with missing values too.
TAKE_MISSING = frozenset(BOOSTER_KERNELS)
