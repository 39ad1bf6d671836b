"""Schemas of the stochastic-gradient linear models (SGD, Perceptron, Passive-Aggressive).

Their predictions are NumPy products, but ``partial_fit`` (and ``fit`` with
``warm_start=True``) hands the stored weights to ``sklearn.linear_model._sgd_fast``,
which takes the number of features from the input and walks ``coef_`` and, when
averaging, ``_standard_coef`` and ``_average_coef`` by it without bounds checks: an
averaged weight vector shorter than ``coef_`` is overwritten past its end. Every
weight array is checked against the class count and ``n_features_in_`` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import linear_model as sk

from aprender.codec import Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import check_coefficients, class_labels, real

#: Weights _sgd_fast updates in place: the coefficient arrays and the intercept arrays.
_COEFS = ("coef_", "_standard_coef", "_average_coef")
_INTERCEPTS = ("intercept_", "_standard_intercept", "_average_intercept")


def _check_shape(attrs: Mapping[str, Any], name: str, path: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    value = optional_array(attrs, name, path, ndim=tuple({len(s) for s in shapes}))
    if value is not None and value.shape not in shapes:
        raise fail(path, f"'{name}' has shape {value.shape}, expected {' or '.join(map(str, shapes))}")


def _check_weights(attrs: Mapping[str, Any], path: str, coef_shape: tuple[int, ...], intercept: str,
                   intercept_shape: tuple[int, ...]) -> None:
    """``coef_`` and the averaging state share one layout; so do the intercepts.

    A binary classifier keeps its averaging weights raveled (``(n_features,)`` beside a
    ``(1, n_features)`` ``coef_``): ``_sgd_fast`` reads either layout as one row.
    """
    check_coefficients(attrs, path, coef_shape)  # sparse after sparsify(): partial_fit needs densify() first
    array(attrs, intercept, path, ndim=(1,), shape={0: intercept_shape[0]})
    single_row = (coef_shape, coef_shape[-1:]) if len(coef_shape) == 1 or coef_shape[0] == 1 else (coef_shape,)
    for name in _COEFS[1:]:
        _check_shape(attrs, name, path, tuple(dict.fromkeys(single_row)))
    for name in _INTERCEPTS[1:]:
        _check_shape(attrs, name, path, (intercept_shape,))
    t = attrs.get("t_")
    if t is not None and not real(t):
        raise fail(path, f"'t_' must be a number, found {type(t).__name__}")


def check_sgd_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """One weight row per class (one for two classes), ``n_features_in_`` columns, in every weight array."""
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    k = class_labels(attrs, path, minimum=2)
    rows = 1 if k == 2 else k
    _check_weights(attrs, path, (rows, n), "intercept_", (rows,))
    optional_array(attrs, "_expanded_class_weight", path, ndim=(1,), shape={0: k})


def check_sgd_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """``n_features_in_`` weights and one intercept, in every weight array."""
    check_generic(params, attrs, path)
    _check_weights(attrs, path, (n_features(attrs, path),), "intercept_", (1,))


def check_sgd_one_class(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """``n_features_in_`` weights and one offset, in every weight array."""
    check_generic(params, attrs, path)
    _check_weights(attrs, path, (n_features(attrs, path),), "offset_", (1,))


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.size == b.size \
        and a.tobytes() == b.tobytes()


def realias_averaged_weights(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A Spec ``unpack``: ``coef_``/``intercept_`` are again the averaging arrays they were fitted as.

    An averaged fit ends with ``intercept_ = _average_intercept`` (or ``_standard_intercept``,
    before ``average`` updates), the very same array, and ``coef_`` the same array or a view
    of it. ``partial_fit`` of a multiclass model writes each class's intercept into
    ``intercept_[i]``, that is into the averaging array too: the file stores them apart, and a
    loaded model continues exactly as the original only once they are one array again. They
    are joined only when their contents are bit-identical, so nothing a file says changes.
    """
    average, t = params.get("average"), attrs.get("t_")
    if not average or not real(t):
        return attrs
    which = "_average" if average <= t - 1 else "_standard"
    out = dict(attrs)
    for public, private in (("coef_", f"{which}_coef"), ("intercept_", f"{which}_intercept")):
        mine, theirs = attrs.get(public), attrs.get(private)
        if _same(mine, theirs):
            out[public] = theirs if theirs.shape == mine.shape else theirs.reshape(mine.shape)
    return out


_CLASSIFIER = Spec(validate=check_sgd_classifier, unpack=realias_averaged_weights)
_REGRESSOR = Spec(validate=check_sgd_regressor)

# The Passive-Aggressive classes are deprecated since scikit-learn 1.8 and go in 1.10.
SCHEMAS = [((cls,), spec) for cls, spec in (
    (sk.SGDClassifier, _CLASSIFIER),
    (sk.Perceptron, _CLASSIFIER),
    (getattr(sk, "PassiveAggressiveClassifier", None), _CLASSIFIER),
    (sk.SGDRegressor, _REGRESSOR),
    (getattr(sk, "PassiveAggressiveRegressor", None), _REGRESSOR),
    (sk.SGDOneClassSVM, Spec(validate=check_sgd_one_class)),
) if cls is not None]
