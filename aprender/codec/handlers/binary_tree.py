"""The ``binary_tree`` handler: a ``sklearn.neighbors.KDTree`` / ``BallTree``, restored once checked.

It is KernelDensity's ``tree_``, or a tree held in a user's own attribute. The file
holds the data, ``leaf_size``, the metric name (and Minkowski ``p`` / ``w``), optional
sample weights and the tree's own arrays. Their node arrays index the data in Cython
without bounds checks, so they are checked for exactly what the query code trusts
(``schemas/_binary_tree.py``, vectorized passes of cost O(rows x features), the checks a
neighbors estimator's ``_tree`` gets) and the tree is assembled by its own
``__setstate__``: a load costs what the bytes cost, not the ``O(n log n)`` of building
the tree. A file without the arrays (written before they were stored) has its tree
built again by the constructor (deterministic: same data, same tree).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.metrics._dist_metrics import METRIC_MAPPING64
from sklearn.neighbors import BallTree, KDTree

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import NULL, TENSOR, Handler, register_handler, tensor_field
from aprender.codec.schemas._binary_tree import check_tree, distance_metric, restore_tree, tree_arrays
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BINARY_TREE"]

_TREES = {"KDTree": KDTree, "BallTree": BallTree}
#: The tree-building method each kind is (the name a neighbors estimator's ``_fit_method`` gives it).
_METHODS = {"KDTree": "kd_tree", "BallTree": "ball_tree"}
#: The stored tree arrays and the dtype kinds they may have.
_ARRAYS = {"idx_array": "i", "node_bounds": "f", "idx_start": "i", "idx_end": "i", "is_leaf": "i", "radius": "f"}
#: Metrics without parameters, by the class scikit-learn builds for them.
_PLAIN_METRICS = {cls.__name__: name for name, cls in METRIC_MAPPING64.items()
                  if name in ("euclidean", "manhattan", "chebyshev", "hamming", "canberra", "braycurtis",
                              "matching", "jaccard", "dice", "rogerstanimoto", "russellrao", "sokalmichener",
                              "sokalsneath", "haversine")}
_MAX_LEAF_SIZE = 1 << 20


def _finite_number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _encode_tree(tree: Any, enc: Encoding, path: str) -> dict[str, Any]:
    state = tree.__getstate__()
    data, leaf_size, metric, weights = np.asarray(state[0]), state[4], state[11], state[12]
    metric_cls = type(metric).__name__
    node: dict[str, Any] = {"kind": type(tree).__name__, "leaf_size": int(leaf_size)}
    if metric_cls in _PLAIN_METRICS:
        node["metric"] = _PLAIN_METRICS[metric_cls]
    elif metric_cls == "MinkowskiDistance64":
        p, w, _ = metric.__reduce__()[2]
        node["metric"], node["p"] = "minkowski", float(p)
        if len(w):
            node["w"] = enc.tensor(np.asarray(w), join(path, "w"))
    else:
        raise UnsupportedTypeError(path, f"{type(tree).__name__} with metric {metric_cls}",
                                   "only parameter-free metrics and Minkowski can be stored")
    node["data"] = enc.tensor(data, join(path, "data"))
    if weights is not None:
        node["sample_weight"] = enc.tensor(np.asarray(weights), join(path, "sample_weight"))
    arrays = tree_arrays(tree)
    node["n_levels"], node["n_nodes"] = arrays["n_levels"], arrays["n_nodes"]
    for name in _ARRAYS:
        node[name] = enc.tensor(arrays[name], join(path, name))
    return node


def _stored_tree(node: Mapping[str, Any], dec: Decoding, path: str) -> dict[str, Any] | None:
    """The tree's own arrays, unchecked, or None for a file that stores only what rebuilds it."""
    present = [name for name in ("n_levels", "n_nodes", *_ARRAYS) if name in node]
    if not present:
        return None
    if len(present) != 2 + len(_ARRAYS):
        raise fail(path, f"a stored tree needs all of n_levels, n_nodes, {', '.join(_ARRAYS)}; found only "
                         f"{', '.join(present)}")
    return {"leaf_size": node["leaf_size"], "n_levels": node["n_levels"], "n_nodes": node["n_nodes"],
            **{name: tensor_field(dec, node, name, path, kinds) for name, kinds in _ARRAYS.items()}}


def _decode_tree(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    cls = _TREES.get(node.get("kind")) if isinstance(node.get("kind"), str) else None
    if cls is None:
        raise fail(path, f"unknown neighbors tree {preview(node.get('kind'), 40)}")
    leaf_size, metric = node.get("leaf_size"), node.get("metric")
    if type(leaf_size) is not int or not 1 <= leaf_size <= _MAX_LEAF_SIZE:
        raise fail(path, f"leaf_size must be an int in [1, {_MAX_LEAF_SIZE}], found {preview(leaf_size, 40)}")
    data = tensor_field(dec, node, "data", path, "f")
    if data.ndim != 2 or data.shape[0] == 0 or not np.all(np.isfinite(data)):
        raise fail(path, f"tree data must be a non-empty 2-d array of finite floats, found shape {data.shape}")
    kwargs: dict[str, Any] = {}
    if metric == "minkowski":
        p = node.get("p")
        if not _finite_number(p) or p < 1:
            raise fail(path, f"Minkowski p must be a finite number >= 1, found {preview(p, 40)}")
        kwargs["p"] = float(p)
        if "w" in node:
            kwargs["w"] = tensor_field(dec, node, "w", path, "f")
            if kwargs["w"].shape != (data.shape[1],):
                raise fail(path, f"Minkowski weights need shape ({data.shape[1]},), found {kwargs['w'].shape}")
    elif metric not in _PLAIN_METRICS.values():
        raise fail(path, f"metric {preview(metric, 40)} is not allowed")
    if "sample_weight" in node:
        weights = tensor_field(dec, node, "sample_weight", path, "f")
        if weights.shape != (data.shape[0],):
            raise fail(path, f"sample_weight needs shape ({data.shape[0]},), found {weights.shape}")
        kwargs["sample_weight"] = weights
    stored = _stored_tree(node, dec, path)
    if stored is not None:  # its own FormatError, naming the field, before anything is built
        check_tree(stored, data, _METHODS[node["kind"]], path, where=path)
    try:
        if stored is None:
            return cls(np.ascontiguousarray(data, dtype=np.float64), leaf_size=leaf_size, metric=metric, **kwargs)
        weights = kwargs.pop("sample_weight", None)
        return restore_tree(stored, data, _METHODS[node["kind"]], distance_metric(metric, kwargs), weights)
    except (ValueError, TypeError) as exc:
        raise fail(path, f"cannot rebuild {cls.__name__}: {exc}") from None


BINARY_TREE = register_handler(Handler(
    "binary_tree", (KDTree, BallTree), _encode_tree, _decode_tree,
    {"kind": (str,), "leaf_size": (int,), "metric": (str,), "p": (int, float, NULL), "w": (*TENSOR, NULL),
     "data": TENSOR, "sample_weight": (*TENSOR, NULL), "n_levels": (int, NULL), "n_nodes": (int, NULL),
     **dict.fromkeys(_ARRAYS, (*TENSOR, NULL))}))  # the tree's arrays: absent from files written before them
