"""Load-time checks shared by the schemas of PCA, naive Bayes, KNN, SVM and MLP."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from aprender.codec._checks import array, bounded_int, fail

__all__ = ["check_coefficients", "choice", "class_labels", "integer", "is_fitted", "real"]


def is_fitted(attrs: Mapping[str, Any]) -> bool:
    """True when the decoded state has a fitted ``name_`` attribute.

    The decoder runs validators only on fitted state (sklearn's trailing-underscore
    rule) but runs ``unpack`` always. An estimator nested as a hyperparameter (a
    meta-estimator's unfitted template) can still carry plain attributes set by
    ``__init__`` (KNN's ``radius``): an unpacker has nothing to rebuild there, and every
    inference method refuses to run on it.
    """
    return any(k.endswith("_") and not k.startswith("__") for k in attrs)


def integer(attrs: Mapping[str, Any], name: str, path: str, *, low: int = 0, high: int | None = None) -> int:
    """Attribute ``name`` as an int in ``[low, high]`` (numpy integers allowed)."""
    return bounded_int(attrs.get(name), name, path, low=low, high=high)


def real(value: Any) -> bool:
    """True for a real number (Python or numpy), excluding bools."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def choice(attrs: Mapping[str, Any], name: str, path: str, allowed: Collection[str]) -> str:
    """Attribute ``name`` as one of the ``allowed`` strings."""
    value = attrs.get(name)
    if value not in allowed or type(value) is not str:
        raise fail(path, f"'{name}' must be one of {sorted(allowed)}, found {str(value)[:80]!r}")
    return value


def class_labels(attrs: Mapping[str, Any], path: str, *, minimum: int = 1) -> int:
    """``classes_`` as a 1-d array of at least ``minimum`` labels; returns their count."""
    labels = attrs.get("classes_")
    if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.shape[0] < minimum:
        raise fail(path, f"'classes_' must be a 1-d array of at least {minimum} labels")
    return labels.shape[0]


def check_coefficients(attrs: Mapping[str, Any], path: str, shape: tuple[int, ...]) -> None:
    """``coef_`` of ``shape``: a float array, or after ``sparsify()`` a sparse matrix (a row vector stays 2-d)."""
    coef = attrs.get("coef_")
    import scipy.sparse as sp  # loaded with the linear families that call this

    if sp.issparse(coef):
        expected = shape if len(shape) == 2 else (1, *shape)
        if coef.shape != expected:
            raise fail(path, f"sparse 'coef_' has shape {coef.shape}, expected {expected}")
        return
    array(attrs, "coef_", path, ndim=(len(shape),), shape=dict(enumerate(shape)))
