"""The generic schema: scikit-learn estimators allow-listed without a family schema of their own.

Such an estimator is stored like any other (hyperparameters + every fitted
attribute, encoded value by value) under its stable key. Its fitted state gets the
checks scikit-learn's conventions make possible for any estimator; hyperparameters
are then checked by the class's own ``_parameter_constraints`` before construction
(``aprender.codec._decode``):

- ``n_features_in_`` is a non-negative int, ``feature_names_in_`` (when present) holds
  that many strings;
- every array has an allowed dtype: bool, integers, floats, strings, or objects that
  are strings, numbers, ``None``, estimators or nested arrays (no other objects);
- attributes whose layout the conventions fix agree with ``n_features_in_``:
  ``coef_``'s last axis, ``components_``' second axis, and the per-feature
  ``feature_importances_``, ``mean_``, ``var_``, ``scale_``, ``n_samples_seen_`` arrays.

What reaches compiled code that indexes memory (trees, KD-trees, libsvm, SGD weights,
splines, ...) is not left to these checks: such classes have family schemas, or their
values named handlers that validate or rebuild them. ``schemas/_compiled.py`` is the
audit of those classes, and tests/test_compiled_audit.py keeps every one of them off
this spec (docs/threat-model.md). Counts that drive allocations (``n_features_in_``,
``n_outputs_``, ``n_classes_``) are bounded for every estimator, generic or not, by
``aprender.codec._checks.check_sizes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._model_type import ModelType
from aprender.codec._spec import Spec

__all__ = ["GENERIC", "check_generic"]

#: Attributes whose last axis holds one value per input feature.
_LAST_AXIS = ("coef_",)
#: Attributes that are one value per input feature (1-d) when they are arrays.
_PER_FEATURE = ("feature_importances_", "mean_", "var_", "scale_", "feature_names_in_", "location_")
_ARRAY_KINDS = frozenset("biufUOMm")
#: Attributes that are one (n_features, n_features) matrix when they are arrays.
_SQUARE = ("covariance_", "precision_")
#: Statistics that are finite in every fitted estimator.
_FINITE = ("mean_", "var_", "components_", "covariance_", "precision_", "location_", "explained_variance_",
           "singular_values_")


def _plain_object(item: Any) -> bool:
    if item is None or isinstance(item, (str, bool, int, float, np.generic, np.ndarray)):
        return True
    return hasattr(item, "get_params")  # a decoded estimator: only allow-listed classes decode to one


def _numeric_records(dtype: np.dtype) -> bool:
    return dtype.names is not None and all(dtype.fields[n][0].kind in "biuf" for n in dtype.names)


def _check_arrays(value: Any, name: str, path: str, depth: int = 0) -> None:
    if isinstance(value, np.ndarray):
        if _numeric_records(value.dtype):  # rebuilt column by column by the records handler
            return
        if value.dtype.kind not in _ARRAY_KINDS or value.dtype.names is not None:
            raise fail(path, f"'{name}' has unsupported dtype {value.dtype}")
        if value.dtype.kind == "O" and not all(_plain_object(v) for v in value.ravel()):
            raise fail(path, f"object array '{name}' holds values other than strings, numbers and estimators")
    elif isinstance(value, (list, tuple)) and depth < 4:
        for item in value:
            _check_arrays(item, name, path, depth + 1)


def _check_encoded_members(attrs: Mapping[str, Any], path: str) -> None:
    """Voting and stacking fit their members on ``le_``-encoded labels: each member's classes are 0..k-1.

    A member's predictions feed ``np.bincount``, which allocates one slot per label value.
    """
    encoder, members = attrs.get("le_"), attrs.get("estimators_")
    classes = getattr(encoder, "classes_", None)
    if not isinstance(classes, np.ndarray) or not isinstance(members, list):
        return
    expected = np.arange(classes.shape[0])
    for i, member in enumerate(members):
        own = getattr(member, "classes_", None)
        if isinstance(own, np.ndarray) and (own.shape != expected.shape or not np.array_equal(own, expected)):
            raise fail(path, f"'estimators_.{i}.classes_' must be the encoded labels 0..{classes.shape[0] - 1}")


def _check_feature_axes(attrs: Mapping[str, Any], n: int, path: str) -> None:
    """The arrays whose last axis, second axis or length counts the ``n`` input features."""
    for name in _LAST_AXIS:
        value = attrs.get(name)
        if isinstance(value, np.ndarray) and value.ndim in (1, 2) and value.shape[-1] != n:
            raise fail(path, f"'{name}' has shape {value.shape}; its last axis must be {n}")
    components = attrs.get("components_")
    shape = getattr(components, "shape", None)  # an array, or a sparse matrix (SparseRandomProjection)
    if isinstance(shape, tuple) and len(shape) == 2 and shape[1] != n:
        raise fail(path, f"'components_' has shape {shape}; axis 1 must be {n}")
    for name in _PER_FEATURE:
        value = attrs.get(name)
        if isinstance(value, np.ndarray) and value.ndim == 1 and value.shape[0] != n:
            raise fail(path, f"'{name}' has {value.shape[0]} entries for {n} features")


def _check_statistics(attrs: Mapping[str, Any], n: int, path: str) -> None:
    """Covariances are ``n`` x ``n``; the statistics LAPACK iterates on are finite."""
    for name in _SQUARE:  # covariance estimators: SciPy's cdist reads them as n x n without checking
        value = attrs.get(name)
        if isinstance(value, np.ndarray) and value.shape != (n, n):
            raise fail(path, f"'{name}' has shape {value.shape}; it must be ({n}, {n})")
    for name in _FINITE:  # a non-finite statistic sends LAPACK's iterations (partial_fit's SVD) into a hang
        value = attrs.get(name)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
            raise fail(path, f"'{name}' holds NaN or infinity")


def check_generic(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Checks every fitted estimator's state can get from scikit-learn's conventions."""
    for name, value in attrs.items():
        _check_arrays(value, name, path)
    _check_encoded_members(attrs, path)
    n = attrs.get("n_features_in_")
    if n is None:
        return
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise fail(path, f"n_features_in_ must be a non-negative int, found {n!r}")
    _check_feature_axes(attrs, n, path)
    _check_statistics(attrs, n, path)


#: The spec of every estimator allow-listed through ``aprender.codec._table.GENERIC``.
GENERIC = Spec(ModelType.CUSTOM, validate=check_generic)
