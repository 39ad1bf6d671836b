"""The search tree of a neighbors estimator, stored and checked instead of rebuilt.

A fitted ``KDTree`` / ``BallTree`` is its training data plus four arrays
(``sklearn/neighbors/_binary_tree.pxi.tp``): ``idx_array`` (the rows in tree order),
``node_data`` (per node ``idx_start``, ``idx_end``, ``is_leaf``, ``radius``) and
``node_bounds`` (a KD tree's lower and upper corner per node, a ball tree's centroid),
with ``leaf_size``, ``n_levels`` and ``n_nodes``. Storing them makes a load cost what the
bytes cost; rebuilding cost ``O(n log n)`` partitions of the data on every save and load.

The query code indexes these arrays without bounds checks and trusts, for every node
``i`` below ``n_nodes``: ``node_bounds[:, i, :n_features]`` exists; ``idx_array[idx_start:
idx_end]`` lies inside ``idx_array`` and names rows of the data; a node that is not a leaf
has both children ``2i + 1`` and ``2i + 2`` below ``n_nodes``. What a file holds is
checked for exactly that, in vectorized passes over the index (``O(n_samples)``) and the
nodes (``O(n_nodes * n_features)``), never over the data:

- ``n_levels`` and ``n_nodes`` are what the tree's constructor derives from the sample
  count and the leaf size, so the layout is the constructor's complete binary tree;
- ``idx_start``, ``idx_end`` and ``is_leaf`` equal that layout: each node halves its
  parent's range the way the constructor splits it, the leaves are the last level and
  cover every position once;
- ``idx_array`` is a permutation of ``range(n_samples)`` (every row exactly once), so no
  query returns an index past the data;
- radii and bounds are finite and the radii not negative; a KD tree's boxes are ordered
  (lower <= upper) and each inside its parent's.

Whether each box or ball holds its points is not recomputed: for a KD tree that is a
gather of every row in tree order (about twice the rest of the load at a million rows),
for a ball tree a distance under its metric per point and level. A wrong bound can
make a query miss neighbours, as wrong training data can; it never makes one read
outside the arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.metrics import DistanceMetric
from sklearn.neighbors import BallTree, KDTree, _ball_tree, _kd_tree

from aprender.codec._checks import array, fail
from aprender.codec.schemas._model_checks import integer
from aprender.exceptions import UnsupportedTypeError

__all__ = ["FIELDS", "TREES", "check_tree", "distance_metric", "export_tree", "layout", "levels", "restore_tree",
           "tree_arrays"]

TREES = {"kd_tree": KDTree, "ball_tree": BallTree}
#: The metric classes each tree accepts (its constructor's own list).
_VALID = {"kd_tree": _kd_tree.VALID_METRICS64, "ball_tree": _ball_tree.VALID_METRICS64}
#: The node fields of sklearn's NodeData record, stored one tensor each.
NODE_FIELDS = ("idx_start", "idx_end", "is_leaf", "radius")
#: Every field of a stored tree (``{"leaf_size": n}`` alone is the older form: rebuilt).
FIELDS = frozenset({"leaf_size", "n_levels", "n_nodes", "idx_array", "node_bounds", *NODE_FIELDS})


def levels(n_samples: int, leaf_size: int) -> int:
    """``n_levels`` as the tree's constructor derives it (leaves hold leaf_size to 2 * leaf_size points)."""
    return int(np.log2(max(1.0, (n_samples - 1) / leaf_size)) + 1)


def layout(n_samples: int, n_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """``(idx_start, idx_end)`` of every node, in node order, as the constructor splits them.

    Node ``i``'s children are ``2i + 1`` and ``2i + 2``: level by level, each range is cut
    at ``start + (end - start) // 2`` (``_recursive_build``).
    """
    starts, ends = [np.zeros(1, np.intp)], [np.full(1, n_samples, np.intp)]
    for _ in range(1, n_levels):
        s, e = starts[-1], ends[-1]
        mid = s + (e - s) // 2
        starts.append(np.stack([s, mid], axis=1).ravel())
        ends.append(np.stack([mid, e], axis=1).ravel())
    return np.concatenate(starts), np.concatenate(ends)


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    """The same memory seen the same way (a loaded model's tree and ``_fit_X`` are two views of one buffer)."""
    return a is b or (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
                      and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def _same_metric(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    return all(np.array_equal(x, y) for x, y in zip(a.__getstate__(), b.__getstate__(), strict=True))


def distance_metric(name: str, params: Mapping[str, Any]) -> Any:
    """The DistanceMetric a tree of metric ``name`` with ``params`` holds."""
    # The same call as the trees' constructor makes.
    return DistanceMetric.get_metric(name, dtype=np.float64, **params)


def export_tree(tree: Any, state: Mapping[str, Any]) -> dict[str, Any]:
    """The stored form of a fitted estimator's ``_tree``; refuses a tree ``_fit_X`` and the metric do not describe.

    Nothing is rebuilt: the tree must hold ``_fit_X`` itself (or the same values, as a
    float32 ``_fit_X`` converted), no sample weights, and the metric
    ``effective_metric_`` with ``effective_metric_params_`` names.
    """
    method = state.get("_fit_method")
    kind = type(tree).__name__
    if method not in TREES or type(tree) is not TREES[method]:
        raise UnsupportedTypeError("_tree", kind, f"does not match _fit_method {method!r}")
    data, *_, metric, weights = tree.__getstate__()
    fit_X = state["_fit_X"]
    if weights is not None:
        raise UnsupportedTypeError("_tree", kind, "a neighbors estimator's tree has no sample weights")
    if not (_same_view(data, fit_X) or (data.shape == fit_X.shape and np.array_equal(data, fit_X))):
        raise UnsupportedTypeError("_tree", kind, "the tree does not hold _fit_X; refit the model")
    if not _same_metric(metric, distance_metric(state["effective_metric_"], state["effective_metric_params_"])):
        raise UnsupportedTypeError("_tree", kind, "the tree's metric is not effective_metric_; refit the model")
    return tree_arrays(tree)


def tree_arrays(tree: Any) -> dict[str, Any]:
    """The stored form of a fitted ``KDTree`` / ``BallTree`` (without its data): :data:`FIELDS`."""
    # __getstate__ is the tree's own export of its arrays and settings (no pickling involved).
    _, idx_array, node_data, node_bounds, leaf_size, n_levels, n_nodes, *_ = tree.__getstate__()
    return {"leaf_size": int(leaf_size), "n_levels": int(n_levels), "n_nodes": int(n_nodes),
            "idx_array": np.asarray(idx_array), "node_bounds": np.asarray(node_bounds),
            **{name: np.ascontiguousarray(node_data[name]) for name in NODE_FIELDS}}


def check_tree(tree: Mapping[str, Any], fit_X: np.ndarray, method: str, path: str, *, where: str | None = None) -> None:
    """Check a stored tree against the (already checked, finite, 2-d) training data.

    Errors name ``where``: by default the ``_tree`` of the estimator at ``path``.
    """
    if where is None:
        where = f"{path}._tree" if path else "_tree"
    n, d = fit_X.shape
    leaf_size = integer(tree, "leaf_size", where, low=1)
    n_levels = levels(n, leaf_size)
    if integer(tree, "n_levels", where, low=1) != n_levels:
        raise fail(where, f"'n_levels' is {tree['n_levels']}, a tree of {n} samples with leaf_size {leaf_size} "
                          f"has {n_levels}")
    n_nodes = 2**n_levels - 1
    if integer(tree, "n_nodes", where, low=1) != n_nodes:
        raise fail(where, f"'n_nodes' is {tree['n_nodes']}, a tree of {n_levels} levels has {n_nodes}")
    starts, ends = layout(n, n_levels)
    leaf = np.arange(n_nodes) >= n_nodes // 2  # the last level: node i with 2i + 1 >= n_nodes
    for name, expected in (("idx_start", starts), ("idx_end", ends), ("is_leaf", leaf)):
        if not np.array_equal(array(tree, name, where, ndim=(1,), kinds="i", shape={0: n_nodes}), expected):
            raise fail(where, f"'{name}' does not match the tree's layout: the nodes of {n_levels} levels split "
                              f"[0, {n}) in halves, the last level being the leaves")
    idx = array(tree, "idx_array", where, ndim=(1,), kinds="i", shape={0: n})
    if idx.min() < 0 or idx.max() >= n or not (np.bincount(idx, minlength=n) == 1).all():
        raise fail(where, f"'idx_array' must be a permutation of range({n}): every training row exactly once")
    radius = array(tree, "radius", where, ndim=(1,), shape={0: n_nodes})
    if not (np.isfinite(radius).all() and (radius >= 0).all()):
        raise fail(where, "'radius' must hold finite, non-negative node radii")
    corners = 2 if method == "kd_tree" else 1
    bounds = array(tree, "node_bounds", where, ndim=(3,), shape={0: corners, 1: n_nodes, 2: d})
    if not np.isfinite(bounds).all():
        raise fail(where, "'node_bounds' must be finite")
    if method == "kd_tree":
        _check_boxes(bounds, where)


def _check_boxes(bounds: np.ndarray, where: str) -> None:
    """A KD tree's boxes: ordered (lower <= upper), each child's inside its parent's."""
    lower, upper = bounds
    if (lower > upper).any():
        raise fail(where, "'node_bounds' has a node whose lower bound exceeds its upper bound")
    child = np.arange(1, lower.shape[0])
    parent = (child - 1) // 2
    if (lower[child] < lower[parent]).any() or (upper[child] > upper[parent]).any():
        raise fail(where, "'node_bounds' has a node whose box is not inside its parent's")


def restore_tree(tree: Mapping[str, Any], data: np.ndarray, method: str, dist_metric: Any,
                 sample_weight: np.ndarray | None = None) -> Any:
    """The ``KDTree`` / ``BallTree`` of checked arrays (:func:`check_tree`) over ``data`` (a neighbors
    estimator's ``_fit_X``, shared as sklearn shares it), with a metric object built from a fixed list."""
    cls = TREES[method]
    data = np.ascontiguousarray(data, dtype=np.float64)
    if type(dist_metric).__name__ not in _VALID[method]:
        raise ValueError(f"metric {type(dist_metric).__name__} is not valid for {cls.__name__}")
    dist_metric._validate_data(data)
    node_data = np.empty(tree["n_nodes"], dtype=_kd_tree.NodeData)
    for name in NODE_FIELDS:
        node_data[name] = tree[name]
    out = cls.__new__(cls)
    # The tree's own import of the arrays its __getstate__ exports (the zero counters are query statistics).
    out.__setstate__((data, np.ascontiguousarray(tree["idx_array"], dtype=np.intp), node_data,
                      np.ascontiguousarray(tree["node_bounds"], dtype=np.float64), tree["leaf_size"],
                      tree["n_levels"], tree["n_nodes"], 0, 0, 0, 0, dist_metric,
                      None if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)))
    return out
