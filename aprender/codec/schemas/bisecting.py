"""Schema of BisectingKMeans: its ``_BisectingTree`` as flat arrays, checked as a binary tree.

``predict`` walks ``_bisecting_tree`` from the root: at each inner node it stacks the
two children's ``center`` (plus ``_X_mean``) and hands them with the input to
scikit-learn's compiled k-means assignment (``_labels_inertia_threadpool_limit``), which
reads ``n_features`` values of each centre without bounds checks; a leaf answers its
``label``. Saved, the tree becomes one ``dict`` node of flat arrays, its nodes numbered
in pre-order (the root is node 0, a node's children follow it):

============ ============= ========================= ===========================================
key          dtype         shape                     meaning
============ ============= ========================= ===========================================
``left``     int64         ``(n_nodes,)``            the left child's number, -1 for a leaf
``right``    int64         ``(n_nodes,)``            the right child's number, -1 for a leaf
``center``   float32/64    ``(n_nodes, n_features)`` each node's ``center`` (centred on _X_mean)
``score``    float64/int64 ``(n_nodes,)``            each node's ``score`` (inertia or size)
``label``    int64         ``(n_nodes,)``            a leaf's cluster label, -1 for inner nodes
============ ============= ========================= ===========================================

and ``root_is_matrix`` (a JSON boolean): fitted on sparse data, the root's centre is
the ``numpy.matrix`` row that ``X.mean(axis=0)`` returns, and is rebuilt as one.

The nodes' ``indices`` are ``None`` once fitted and are not stored. ``_kmeans_single``
(the inner k-means function ``fit`` sets) is not stored either: it is chosen again from
``algorithm`` as ``fit`` chooses it. On load the tree is checked (indices in range, each
node but the root the child of exactly one node numbered before it, both children or
none, one leaf per cluster with the labels ``0 .. n_clusters - 1``, centres finite, of
the model's dtype and ``n_features_in_`` wide) and rebuilt without recursion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import cluster as sk
from sklearn.cluster._bisect_k_means import _BisectingTree
from sklearn.cluster._kmeans import _kmeans_single_elkan, _kmeans_single_lloyd

from aprender.codec import Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.codec._nodes import join
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import integer
from aprender.codec.schemas.cluster import check_kmeans
from aprender.exceptions import UnsupportedTypeError

__all__ = ["SCHEMAS", "check_bisecting_kmeans", "pack_bisecting_kmeans", "unpack_bisecting_kmeans"]

_KEYS = frozenset(["left", "right", "center", "score", "label", "root_is_matrix"])
_NODE_ATTRS = frozenset(["center", "indices", "score", "left", "right", "label"])


def _pre_order(root: _BisectingTree, path: str) -> list[_BisectingTree]:
    """The tree's nodes in pre-order, each a fitted node of its own with two children or none."""
    nodes, stack, seen = [], [root], set()
    while stack:  # pre-order without recursion: a tree may be as deep as it has clusters
        node = stack.pop()
        if type(node) is not _BisectingTree or id(node) in seen or not set(vars(node)) <= _NODE_ATTRS \
                or node.indices is not None or (node.left is None) != (node.right is None):
            raise UnsupportedTypeError(path, type(node).__name__, "not a fitted bisecting tree (a node is shared, "
                                                                  "keeps its sample indices or has one child)")
        seen.add(id(node))
        nodes.append(node)
        if node.left is not None:
            stack += [node.right, node.left]
    return nodes


def _centers(nodes: list[_BisectingTree], path: str) -> tuple[list[np.ndarray], bool]:
    """The nodes' centres as 1-d arrays of one dtype, and whether the root's was an ``np.matrix`` row."""
    root = nodes[0]
    # Fitted on sparse data, the root's centre is the np.matrix row that X.mean(axis=0) returns.
    root_is_matrix = type(root.center) is np.matrix and root.center.shape[:1] == (1,)
    centers = [np.asarray(root.center)[0] if root_is_matrix else root.center, *(node.center for node in nodes[1:])]
    if any(not isinstance(c, np.ndarray) or c.ndim != 1 or c.dtype != centers[0].dtype or c.shape != centers[0].shape
           for c in centers):
        raise UnsupportedTypeError(path, "_BisectingTree", "the tree's centres are not 1-d arrays of one dtype")
    return centers, root_is_matrix


def _pack_tree(root: _BisectingTree, path: str) -> dict[str, Any]:
    nodes = _pre_order(root, path)
    number = {id(node): i for i, node in enumerate(nodes)}
    centers, root_is_matrix = _centers(nodes, path)
    return {
        "left": np.array([number[id(n.left)] if n.left is not None else -1 for n in nodes], dtype=np.int64),
        "right": np.array([number[id(n.right)] if n.right is not None else -1 for n in nodes], dtype=np.int64),
        "center": np.stack(centers),
        "score": np.asarray([n.score for n in nodes]),
        "label": np.array([getattr(n, "label", -1) if n.left is None else -1 for n in nodes], dtype=np.int64),
        "root_is_matrix": root_is_matrix,
    }


def pack_bisecting_kmeans(attrs: dict[str, Any]) -> dict[str, Any]:
    """A Spec ``pack``: the tree as flat arrays; ``_kmeans_single`` left out (``fit`` sets it)."""
    out = {k: v for k, v in attrs.items() if k != "_kmeans_single"}
    if "_bisecting_tree" in attrs:
        out["_bisecting_tree"] = _pack_tree(attrs["_bisecting_tree"], "_bisecting_tree")
    return out


def _check_tree(packed: Any, n: int, k: int, dtype: np.dtype, path: str) -> None:
    if not isinstance(packed, dict) or set(packed) != _KEYS:
        raise fail(path, f"a packed bisecting tree needs exactly the keys {sorted(_KEYS)}")
    left = array(packed, "left", path, ndim=(1,), kinds="i")
    n_nodes = left.shape[0]
    right = array(packed, "right", path, ndim=(1,), kinds="i", shape={0: n_nodes})
    label = array(packed, "label", path, ndim=(1,), kinds="i", shape={0: n_nodes})
    center = array(packed, "center", path, ndim=(2,), shape={0: n_nodes, 1: n})
    array(packed, "score", path, ndim=(1,), kinds="iuf", shape={0: n_nodes})
    if type(packed["root_is_matrix"]) is not bool:
        raise fail(path, "'root_is_matrix' must be true or false")
    if center.dtype != dtype or not np.isfinite(center).all():
        raise fail(path, f"'center' must be finite and of the centres' dtype {dtype}")
    if n_nodes != 2 * k - 1:
        raise fail(path, f"a bisecting tree of {k} clusters has {2 * k - 1} nodes, found {n_nodes}")
    leaf = left < 0
    if not np.array_equal(leaf, right < 0):
        raise fail(path, "every node has two children or none")
    own = np.arange(n_nodes, dtype=np.int64)
    children = np.concatenate([left[~leaf], right[~leaf]])
    parents = np.concatenate([own[~leaf], own[~leaf]])
    # Children come after their node (pre-order: no cycle), every node but the root has one parent.
    if np.any(left < -1) or np.any(right < -1) or np.any(children >= n_nodes) or np.any(children <= parents):
        raise fail(path, "a child is not a node numbered after its parent")
    reached = np.bincount(children, minlength=n_nodes)
    if reached[0] != 0 or np.any(reached[1:] != 1):
        raise fail(path, "every node but the root must be the child of exactly one node")
    if not np.array_equal(np.sort(label[leaf]), np.arange(k)) or np.any(label[~leaf] != -1):
        raise fail(path, f"the leaves must be labelled 0 to {k - 1}, once each, and inner nodes -1")


def check_bisecting_kmeans(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for KMeans, plus the tree ``predict`` walks."""
    check_generic(params, attrs, path)
    check_kmeans(params, attrs, path)
    n = n_features(attrs, path)
    k = integer(attrs, "_n_features_out", path, low=1, high=attrs["cluster_centers_"].shape[0])
    if k != params.get("n_clusters"):
        raise fail(path, f"'_n_features_out' must be the {params.get('n_clusters')} clusters")
    dtype = attrs["cluster_centers_"].dtype
    if not np.isfinite(attrs["cluster_centers_"]).all():
        raise fail(path, "'cluster_centers_' must be finite")
    mean = optional_array(attrs, "_X_mean", path, ndim=(1,), shape={0: n})
    if mean is not None and (mean.dtype != dtype or not np.isfinite(mean).all()):
        raise fail(path, f"'_X_mean' must be finite and of the centres' dtype {dtype}")
    if "_kmeans_single" in attrs:
        raise fail(path, "'_kmeans_single' is not stored: it follows 'algorithm'")
    _check_tree(attrs.get("_bisecting_tree"), n, k, dtype, join(path, "_bisecting_tree"))


def unpack_bisecting_kmeans(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A Spec ``unpack``: the tree rebuilt from its checked arrays, the inner k-means chosen as ``fit`` does."""
    packed = attrs.get("_bisecting_tree")
    if not isinstance(packed, dict):
        return attrs
    left, right, label = packed["left"].tolist(), packed["right"].tolist(), packed["label"].tolist()
    center, score = packed["center"], packed["score"]
    nodes = [_BisectingTree(center=center[i].copy(), indices=None, score=score[i]) for i in range(len(left))]
    if packed["root_is_matrix"]:
        nodes[0].center = np.asmatrix(nodes[0].center)
    for i, node in enumerate(nodes):
        if left[i] < 0:
            node.label = label[i]
        else:
            node.left, node.right = nodes[left[i]], nodes[right[i]]
    lloyd = params.get("algorithm") == "lloyd" or params.get("n_clusters") == 1
    return {**attrs, "_bisecting_tree": nodes[0], "_kmeans_single": _kmeans_single_lloyd if lloyd
            else _kmeans_single_elkan}


SCHEMAS = [
    ((sk.BisectingKMeans,), Spec(validate=check_bisecting_kmeans, pack=pack_bisecting_kmeans,
                                 unpack=unpack_bisecting_kmeans, training_only=("labels_",))),
]
