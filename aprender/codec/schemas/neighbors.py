"""Schemas of the nearest-neighbour estimators (every subclass of scikit-learn's NeighborsBase).

The fitted KDTree/BallTree is stored as its arrays and settings and checked on load
(``schemas/_binary_tree.py``: the node layout is the constructor's, ``idx_array`` a
permutation of the rows, bounds finite, a KD tree's boxes ordered and nested), so
a load costs what its bytes cost and a query never reads outside the arrays nor returns
an index past ``_fit_X``. The tree's data is ``_fit_X`` itself, stored once. Older files
store only the leaf size as ``{"leaf_size": n}`` (or, before these classes had a schema,
the tree through the ``binary_tree`` handler): their tree is rebuilt from ``_fit_X``.

Brute-force queries hand ``_fit_X`` to the pairwise-distance reductions, which take the
number of features from the query: ``_fit_X`` must be ``n_samples_fit_`` by
``n_features_in_``. The class-mode reductions count votes in an array of one slot per
class indexed by ``_y``: every class index must lie inside ``classes_``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn import neighbors as sk

from aprender import neighbors as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
from aprender.codec.schemas._binary_tree import (
    FIELDS,
    TREES,
    check_tree,
    distance_metric,
    export_tree,
    restore_tree,
)
from aprender.codec.schemas._model_checks import choice, integer, is_fitted, real

_TREES = TREES


def _build_tree(method: str, fit_X: np.ndarray, leaf_size: int, metric: str, metric_params: dict) -> Any:
    # The same call as sklearn.neighbors._base.NeighborsBase._fit.
    return _TREES[method](fit_X, leaf_size, metric=metric, **metric_params)


def pack_neighbors(state: dict[str, Any]) -> dict[str, Any]:
    """Replace the search tree by its stored form (``None`` stays for brute force)."""
    tree = state.get("_tree")
    if tree is None:
        return state
    # fit() on a prebuilt KDTree/BallTree keeps the tree's data as a Cython memoryview.
    state = {**state, "_fit_X": np.asarray(state["_fit_X"])}
    return {**state, "_tree": export_tree(tree, state)}


def _leaf_size(tree: Any) -> int:
    """The leaf size of an older file's tree: ``{"leaf_size": n}``, or a tree the ``binary_tree`` handler rebuilt."""
    return tree["leaf_size"] if type(tree) is dict else int(tree.__getstate__()[4])


def unpack_neighbors(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The search tree from its checked arrays, or rebuilt from ``_fit_X`` for an older file."""
    method = attrs.get("_fit_method")
    if is_fitted(attrs) and method in _TREES:
        stored, metric, metric_params = attrs["_tree"], attrs["effective_metric_"], attrs["effective_metric_params_"]
        if type(stored) is dict and set(stored) == FIELDS:
            tree = restore_tree(stored, attrs["_fit_X"], method, distance_metric(metric, metric_params))
        else:
            tree = _build_tree(method, attrs["_fit_X"], _leaf_size(stored), metric, metric_params)
        attrs = {**attrs, "_tree": tree}
    return attrs


def _check_fit_data(attrs: Mapping[str, Any], path: str) -> int:
    m = integer(attrs, "n_samples_fit_", path, low=1)
    fit_X = attrs.get("_fit_X")
    if sp.issparse(fit_X):
        if fit_X.format != "csr":
            raise fail(path, f"sparse '_fit_X' must be CSR, found {fit_X.format}")
        shape = fit_X.shape
    else:
        shape = array(attrs, "_fit_X", path, ndim=(2,), kinds="biuf").shape
    # fit() on a prebuilt KDTree/BallTree sets no n_features_in_.
    n = n_features(attrs, path) if "n_features_in_" in attrs else shape[1]
    if shape != (m, n):
        raise fail(path, f"'_fit_X' has shape {shape}, expected (n_samples_fit_, n_features_in_) = ({m}, {n})")
    return m


def _check_tree(attrs: Mapping[str, Any], path: str) -> None:
    method = choice(attrs, "_fit_method", path, ("brute", *_TREES))
    metric, metric_params = attrs.get("effective_metric_"), attrs.get("effective_metric_params_")
    tree = attrs.get("_tree")
    if type(metric) is not str:
        raise fail(path, f"'effective_metric_' must be a metric name, found {type(metric).__name__}")
    if type(metric_params) is not dict or not all(type(k) is str for k in metric_params):
        raise fail(path, "'effective_metric_params_' must be a dict with string keys")
    if method == "brute":
        valid = sk.VALID_METRICS_SPARSE["brute"] if sp.issparse(attrs.get("_fit_X")) else sk.VALID_METRICS["brute"]
        if metric not in valid:
            raise fail(path, f"metric {metric[:80]!r} is not supported by brute-force search")
        if tree is not None:
            raise fail(path, "'_tree' must be null when _fit_method is 'brute'")
        return
    if metric not in _TREES[method].valid_metrics:
        raise fail(path, f"metric {metric[:80]!r} is not supported by {_TREES[method].__name__}")
    fit_X = attrs["_fit_X"]
    if not isinstance(fit_X, np.ndarray) or not np.isfinite(fit_X).all():
        raise fail(path, f"'_fit_X' of a {method} must be a dense array of finite values")
    if type(tree) is _TREES[method]:  # an older file's tree, built by the binary_tree handler: its leaf size is read
        return
    if type(tree) is not dict or set(tree) not in ({"leaf_size"}, FIELDS):
        raise fail(path, f"'_tree' must hold the fields {sorted(FIELDS)} (or only 'leaf_size' in an older file)")
    if set(tree) == FIELDS:
        check_tree(tree, fit_X, method, path)
    else:
        integer(tree, "leaf_size", f"{path}._tree" if path else "_tree", low=1)


def _check_search(attrs: Mapping[str, Any], path: str) -> int:
    """The training data and how it is searched; returns the number of training samples."""
    m = _check_fit_data(attrs, path)
    _check_tree(attrs, path)
    return m


def _check_targets(attrs: Mapping[str, Any], m: int, path: str) -> None:
    """Class indices in ``_y`` lie inside ``classes_`` (one label array per output when 2-d)."""
    outputs_2d = attrs.get("outputs_2d_")
    if type(outputs_2d) is not bool:
        raise fail(path, f"'outputs_2d_' must be a bool, found {type(outputs_2d).__name__}")
    y = array(attrs, "_y", path, ndim=(2,) if outputs_2d else (1,), kinds="iu", shape={0: m})
    codes = y if outputs_2d else y[:, None]
    label_sets = attrs.get("classes_") if outputs_2d else [attrs.get("classes_")]
    if type(label_sets) is not list or len(label_sets) != codes.shape[1]:
        raise fail(path, f"'classes_' must hold one label array per output ({codes.shape[1]})")
    for j, labels in enumerate(label_sets):
        if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.shape[0] < 1:
            raise fail(path, f"'classes_' of output {j} must be a non-empty 1-d array")
        column = codes[:, j]
        if column.size and (column.min() < 0 or column.max() >= labels.shape[0]):
            raise fail(path, f"'_y' holds class indices outside [0, {labels.shape[0]}) for output {j}")


def check_neighbors_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Training data matches n_samples_fit_ x n_features_in_; class indices lie inside classes_."""
    m = _check_search(attrs, path)
    _check_targets(attrs, m, path)


def check_neighbors_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Training data matches n_samples_fit_ x n_features_in_; one target row per sample."""
    m = _check_search(attrs, path)
    array(attrs, "_y", path, ndim=(1, 2), kinds="biuf", shape={0: m})


def check_neighbors(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Training data matches n_samples_fit_ x n_features_in_ (NearestNeighbors, the graph transformers)."""
    m = _check_search(attrs, path)
    out = attrs.get("_n_features_out")
    if out is not None and out != m:  # the width of kneighbors_graph: one column per training sample
        raise fail(path, f"'_n_features_out' is {out}, the graph has one column per training sample ({m})")


def check_local_outlier_factor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for NearestNeighbors; the per-sample densities and k-distances are one row per training sample."""
    m = _check_search(attrs, path)
    k = integer(attrs, "n_neighbors_", path, low=1, high=m)
    array(attrs, "_distances_fit_X_", path, ndim=(2,), shape={0: m, 1: k})
    for name in ("_lrd", "negative_outlier_factor_"):
        array(attrs, name, path, ndim=(1,), shape={0: m})


def check_kernel_density(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """``tree_`` (rebuilt by the ``binary_tree`` handler) holds n_features_in_ columns; the bandwidth is positive."""
    n = n_features(attrs, path)
    tree = attrs.get("tree_")
    if type(tree) not in _TREES.values():
        raise fail(path, f"'tree_' must be a KDTree or BallTree, found {type(tree).__name__}")
    shape = np.asarray(tree.data).shape
    if shape[1] != n:
        raise fail(path, f"'tree_' holds data of shape {shape}; it needs n_features_in_ = {n} columns")
    bandwidth = attrs.get("bandwidth_")
    if not real(bandwidth) or not bandwidth > 0:
        raise fail(path, f"'bandwidth_' must be a positive number, found {str(bandwidth)[:40]}")


def _spec(validate: Any) -> Spec:
    return Spec(ModelType.KNN, validate=validate, pack=pack_neighbors, unpack=unpack_neighbors)


SCHEMAS = [
    ((ap.KNeighborsClassifier, sk.KNeighborsClassifier), _spec(check_neighbors_classifier)),
    ((ap.KNeighborsRegressor, sk.KNeighborsRegressor), _spec(check_neighbors_regressor)),
    ((sk.RadiusNeighborsClassifier,), _spec(check_neighbors_classifier)),
    ((sk.RadiusNeighborsRegressor,), _spec(check_neighbors_regressor)),
    ((sk.NearestNeighbors,), _spec(check_neighbors)),
    ((sk.KNeighborsTransformer,), _spec(check_neighbors)),
    ((sk.RadiusNeighborsTransformer,), _spec(check_neighbors)),
    ((sk.LocalOutlierFactor,), _spec(check_local_outlier_factor)),
    ((sk.KernelDensity,), Spec(validate=check_kernel_density)),
]
