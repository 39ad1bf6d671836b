"""Schema of Birch: its CF-tree as flat arrays, checked as a tree and rebuilt node by node.

A fitted Birch keeps a tree of ``_CFNode`` objects (``root_``), each holding a list of
``_CFSubcluster`` objects whose ``child_`` is the node below, and a chain of the leaves
(``prev_leaf_``/``next_leaf_``, entered from the empty ``dummy_leaf_``). ``predict`` and
``transform`` read only ``subcluster_centers_``, ``_subcluster_norms`` and
``subcluster_labels_``; ``partial_fit`` walks and grows the tree, writing each node's
centroids in place into a ``(branching_factor + 1, n_features)`` table it preallocated.

Saved, ``root_`` becomes one ``dict`` node of flat arrays (``dummy_leaf_`` is folded into
it). Nodes are numbered breadth first from the root (node 0); the subclusters of node
``i`` are rows ``node_offsets[i]:node_offsets[i + 1]`` of the ``sub_*`` arrays, in the
node's order:

========================== ============ ======================= =========================================
key                        dtype        shape                   meaning
========================== ============ ======================= =========================================
``node_is_leaf``           bool         ``(n_nodes,)``          the node is a leaf
``node_threshold``         float64      ``(n_nodes,)``          the node's ``threshold``
``node_branching_factor``  int64        ``(n_nodes,)``          the node's ``branching_factor``
``node_offsets``           int64        ``(n_nodes + 1,)``      first subcluster of each node, then n_sub
``leaf_order``             int64        ``(n_leaves,)``         the leaves' node numbers in chain order
``sub_child``              int64        ``(n_sub,)``            the child node's number, -1 in a leaf
``sub_n_samples``          int64        ``(n_sub,)``            ``n_samples_``
``sub_linear_sum``         float32/64   ``(n_sub, n_features)`` ``linear_sum_``
``sub_squared_sum``        float32/64   ``(n_sub,)``            ``squared_sum_``
``sub_centroid``           float32/64   ``(n_sub, n_features)`` ``centroid_`` (the node's centroid rows)
``sub_sq_norm``            float32/64   ``(n_sub,)``            ``sq_norm_`` (the node's squared norms)
``node_dtype``             string       --                      the tables' ``"float32"`` or ``"float64"``
``dummy_threshold``        float        --                      ``dummy_leaf_.threshold``
``dummy_branching_factor`` int          --                      ``dummy_leaf_.branching_factor``
========================== ============ ======================= =========================================

On load the arrays are checked as a tree (every index in range, every node but the
root the child of exactly one subcluster of a node numbered before it, so no cycle
and no sharing; leaves exactly the nodes without children; the chain a permutation
of the leaves; shapes against ``n_features_in_`` and each node's branching factor;
every value finite), then the nodes are rebuilt with scikit-learn's own constructor
and ``append_subcluster``, which recreates the preallocated tables and their views.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import cluster as sk
from sklearn.cluster._birch import _CFNode, _CFSubcluster

from aprender.codec import Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.codec._nodes import join
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import integer
from aprender.exceptions import UnsupportedTypeError

__all__ = ["SCHEMAS", "check_birch", "pack_birch", "unpack_birch"]

_NODE_DTYPES = {"float32": np.float32, "float64": np.float64}
_KEYS = frozenset(["node_is_leaf", "node_threshold", "node_branching_factor", "node_offsets", "leaf_order",
                   "sub_child", "sub_n_samples", "sub_linear_sum", "sub_squared_sum", "sub_centroid", "sub_sq_norm",
                   "node_dtype", "dummy_threshold", "dummy_branching_factor"])
#: The nodes' preallocated centroid tables may hold at most this many times the
#: subcluster rows the file stores, plus :data:`_SLACK_ELEMENTS`: a sparse node of a
#: large ``branching_factor`` is legitimate, a file claiming 2**40 for it is not.
_TABLE_RATIO = 64
_SLACK_ELEMENTS = 2**20
#: What ``partial_fit`` and ``_get_leaves`` need; inference reads the three arrays below.
_TRAINING = ("root_", "dummy_leaf_", "labels_")


def _nodes_breadth_first(root: _CFNode, path: str) -> list[_CFNode]:
    nodes, seen = [root], {id(root)}
    for node in nodes:  # grows while it is walked
        for sub in node.subclusters_:
            child = sub.child_
            if child is None:
                continue
            if id(child) in seen:
                raise UnsupportedTypeError(path, "_CFNode", "a node of the CF-tree is reached twice")
            seen.add(id(child))
            nodes.append(child)
    return nodes


def _uniform(values: list, what: str, path: str) -> type:
    kinds = {type(v) for v in values}
    if len(kinds) != 1 or not issubclass(next(iter(kinds)), np.floating):
        mixed = sorted(k.__name__ for k in kinds)
        raise UnsupportedTypeError(path, "_CFSubcluster", f"the CF-tree's {what} mix {mixed} "
                                   "(float32 data fitted in both sparse and dense batches): fit on one kind")
    return next(iter(kinds))


def _stack(arrays: list[np.ndarray], what: str, n: int, path: str) -> np.ndarray:
    if any(not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != arrays[0].dtype for a in arrays) \
            or arrays[0].dtype.kind != "f":
        raise UnsupportedTypeError(path, "_CFSubcluster", f"the CF-tree's {what} are not float arrays of one dtype "
                                   "(float32 data fitted in both sparse and dense batches): fit on one kind")
    return np.stack(arrays)


def _check_node_tables(nodes: list[_CFNode], dtype: np.dtype, n: int, path: str) -> None:
    """Each node's centroid table and norms are its subclusters' centroids and norms, padded with zeros."""
    for node in nodes:
        k = len(node.subclusters_)
        table, norms = node.init_centroids_, node.init_sq_norm_
        rows = np.stack([s.centroid_ for s in node.subclusters_]).astype(dtype, copy=False)
        sq = np.array([s.sq_norm_ for s in node.subclusters_]).astype(dtype, copy=False)
        # The tables are rebuilt from the subclusters: they must say nothing else.
        if table.dtype != dtype or table.shape != (node.branching_factor + 1, n) or node.n_features != n \
                or rows.tobytes() != table[:k].tobytes() or sq.tobytes() != norms[:k].tobytes() \
                or table[k:].any() or norms[k:].any():
            raise UnsupportedTypeError(path, "_CFNode", "a CF-tree node's centroid table disagrees with its "
                                                        "subclusters")


def _leaf_order(dummy: _CFNode, number: dict[int, int], n_nodes: int) -> np.ndarray:
    """The leaves' node numbers along the ``next_leaf_`` chain (-1 for a stranger; a cycle stops past the count)."""
    leaves, leaf = [], dummy.next_leaf_
    while leaf is not None and len(leaves) <= n_nodes:
        leaves.append(number.get(id(leaf), -1))
        leaf = leaf.next_leaf_
    return np.array(leaves, dtype=np.int64)


def _node_arrays(nodes: list[_CFNode]) -> dict[str, np.ndarray]:
    offsets = np.zeros(len(nodes) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(node.subclusters_) for node in nodes])
    return {
        "node_is_leaf": np.array([node.is_leaf for node in nodes], dtype=bool),
        "node_threshold": np.array([node.threshold for node in nodes], dtype=np.float64),
        "node_branching_factor": np.array([node.branching_factor for node in nodes], dtype=np.int64),
        "node_offsets": offsets,
    }


def _subcluster_arrays(subs: list[Any], number: dict[int, int], n: int, path: str) -> dict[str, np.ndarray]:
    squared_sum = _uniform([s.squared_sum_ for s in subs], "squared sums", path)
    sq_norm = _uniform([s.sq_norm_ for s in subs], "squared norms", path)
    return {
        "sub_child": np.array([-1 if s.child_ is None else number[id(s.child_)] for s in subs], dtype=np.int64),
        "sub_n_samples": np.array([s.n_samples_ for s in subs], dtype=np.int64),
        "sub_linear_sum": _stack([s.linear_sum_ for s in subs], "linear sums", n, path),
        "sub_squared_sum": np.array([s.squared_sum_ for s in subs], dtype=squared_sum),
        "sub_centroid": _stack([s.centroid_ for s in subs], "centroids", n, path),
        "sub_sq_norm": np.array([s.sq_norm_ for s in subs], dtype=sq_norm),
    }


def _pack_tree(root: _CFNode, dummy: _CFNode, n: int, path: str) -> dict[str, Any]:
    nodes = _nodes_breadth_first(root, path)
    number = {id(node): i for i, node in enumerate(nodes)}
    dtype = root.init_centroids_.dtype
    subs = [sub for node in nodes for sub in node.subclusters_]
    if not subs or dtype.name not in _NODE_DTYPES:
        raise UnsupportedTypeError(path, "_CFNode", "the CF-tree is empty or its tables are not float32/float64")
    _check_node_tables(nodes, dtype, n, path)
    leaf_order = _leaf_order(dummy, number, len(nodes))
    return {
        **_node_arrays(nodes),
        "leaf_order": leaf_order,
        **_subcluster_arrays(subs, number, n, path),
        "node_dtype": dtype.name,
        "dummy_threshold": float(dummy.threshold),
        "dummy_branching_factor": int(dummy.branching_factor),
    }


def pack_birch(attrs: dict[str, Any]) -> dict[str, Any]:
    """A Spec ``pack``: ``root_`` and ``dummy_leaf_`` as one dict of flat arrays under ``root_``."""
    root, dummy = attrs.get("root_"), attrs.get("dummy_leaf_")
    if root is None and dummy is None:
        return attrs
    if type(root) is not _CFNode or type(dummy) is not _CFNode or dummy.subclusters_:
        raise UnsupportedTypeError("root_", type(root).__name__, "Birch's root_ and dummy_leaf_ must be CF nodes")
    out = {k: v for k, v in attrs.items() if k != "dummy_leaf_"}
    out["root_"] = _pack_tree(root, dummy, attrs["n_features_in_"], "root_")
    return out


def _tree_arrays(packed: Any, n: int, path: str) -> dict[str, Any]:
    """The packed arrays, each of its dtype and shape (``n`` features); not yet related to each other."""
    if not isinstance(packed, dict) or set(packed) != _KEYS:
        raise fail(path, f"a packed CF-tree needs exactly the keys {sorted(_KEYS)}")
    node_dtype = packed["node_dtype"]
    if node_dtype not in _NODE_DTYPES or type(node_dtype) is not str:
        raise fail(path, "'node_dtype' must be 'float32' or 'float64'")
    n_nodes = array(packed, "node_is_leaf", path, ndim=(1,), kinds="b").shape[0]
    n_sub = array(packed, "sub_child", path, ndim=(1,), kinds="i").shape[0]
    array(packed, "node_threshold", path, ndim=(1,), shape={0: n_nodes})
    array(packed, "node_branching_factor", path, ndim=(1,), kinds="i", shape={0: n_nodes})
    array(packed, "node_offsets", path, ndim=(1,), kinds="i", shape={0: n_nodes + 1})
    array(packed, "leaf_order", path, ndim=(1,), kinds="i")
    array(packed, "sub_n_samples", path, ndim=(1,), kinds="i", shape={0: n_sub})
    for name in ("sub_linear_sum", "sub_centroid"):
        array(packed, name, path, ndim=(2,), shape={0: n_sub, 1: n})
    for name in ("sub_squared_sum", "sub_sq_norm"):
        array(packed, name, path, ndim=(1,), shape={0: n_sub})
    for name in ("node_threshold", "sub_linear_sum", "sub_squared_sum", "sub_centroid", "sub_sq_norm"):
        if not np.isfinite(packed[name]).all():
            raise fail(join(path, name), "holds NaN or infinity")
    integer(packed, "dummy_branching_factor", path, low=2, high=2**62)
    if type(packed["dummy_threshold"]) is not float or not 0 < packed["dummy_threshold"] < np.inf:
        raise fail(path, "'dummy_threshold' must be a positive finite float")
    return packed


def _check_tree(packed: Mapping[str, Any], n: int, path: str) -> None:
    leaf, bf, offsets = packed["node_is_leaf"], packed["node_branching_factor"], packed["node_offsets"]
    child, order = packed["sub_child"], packed["leaf_order"]
    n_nodes, n_sub = leaf.shape[0], child.shape[0]
    if n_nodes == 0 or offsets[0] != 0 or offsets[-1] != n_sub:
        raise fail(path, f"'node_offsets' must run from 0 to the {n_sub} subclusters over at least one node")
    counts = offsets[1:] - offsets[:-1]
    if np.any(counts < 1) or np.any(counts > bf):
        raise fail(path, "every CF node holds from 1 to its branching_factor subclusters")
    if np.any(packed["node_threshold"] <= 0) or np.any(bf < 2):
        raise fail(path, "every CF node's threshold must be positive and its branching_factor at least 2")
    # in floats: a sum of file-chosen int64 may wrap; dummy_leaf_'s table counts too
    tables = (float((bf + 1.0).sum()) + packed["dummy_branching_factor"] + 1.0) * n
    if tables > _TABLE_RATIO * n_sub * n + _SLACK_ELEMENTS:
        raise fail(path, "the CF nodes' branching factors would preallocate far more than the tree holds")
    if np.any(packed["sub_n_samples"] < 1):
        raise fail(path, "every subcluster holds at least one sample")
    owner = np.repeat(np.arange(n_nodes, dtype=np.int64), counts)
    has_child = child >= 0
    # Children come after their node (breadth-first numbering: no cycle), and every node but the root
    # is the child of exactly one subcluster (no sharing, every node reached from the root).
    if np.any(child < -1) or np.any(child >= n_nodes) or np.any(child[has_child] <= owner[has_child]):
        raise fail(path, "a subcluster's child is not a node numbered after its own")
    parents = np.bincount(child[has_child], minlength=n_nodes)
    if parents[0] != 0 or np.any(parents[1:] != 1):
        raise fail(path, "every CF node but the root must be the child of exactly one subcluster")
    # A leaf's subclusters have no children, an inner node's all have one.
    per_node = np.add.reduceat(has_child.astype(np.int64), offsets[:-1]) if n_sub else np.zeros(n_nodes)
    if np.any(per_node[leaf] != 0) or np.any(per_node[~leaf] != counts[~leaf]):
        raise fail(path, "a leaf CF node has children, or an inner node has a subcluster without one")
    leaves = np.flatnonzero(leaf)
    if order.shape != leaves.shape or not np.array_equal(np.sort(order), leaves):
        raise fail(path, "'leaf_order' must list every leaf node exactly once")


def _check_inference(attrs: Mapping[str, Any], n: int, path: str) -> int:
    centers = array(attrs, "subcluster_centers_", path, ndim=(2,), shape={1: n})
    m = centers.shape[0]
    norms = array(attrs, "_subcluster_norms", path, ndim=(1,), shape={0: m})
    array(attrs, "subcluster_labels_", path, ndim=(1,), kinds="iu", shape={0: m})
    optional_array(attrs, "labels_", path, ndim=(1,), kinds="iu")
    if not (np.isfinite(centers).all() and np.isfinite(norms).all()):
        raise fail(path, "'subcluster_centers_' and '_subcluster_norms' must be finite")
    if m == 0 or integer(attrs, "_n_features_out", path) != m:
        raise fail(path, f"'_n_features_out' must be the {m} subcluster centres (at least one)")
    return m


def check_birch(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The CF-tree is a proper tree whose leaves hold the subcluster centres predict reads."""
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    m = _check_inference(attrs, n, path)
    if "dummy_leaf_" in attrs:
        raise fail(path, "'dummy_leaf_' is stored inside the packed 'root_'")
    if "root_" not in attrs:
        return  # an inference-only file: partial_fit is refused
    where = join(path, "root_")
    packed = _tree_arrays(attrs["root_"], n, where)
    _check_tree(packed, n, where)
    leaf_subs = int((packed["node_offsets"][1:] - packed["node_offsets"][:-1])[packed["node_is_leaf"]].sum())
    if leaf_subs != m:
        raise fail(path, f"the CF-tree's leaves hold {leaf_subs} subclusters, 'subcluster_centers_' has {m}")


def _build(packed: Mapping[str, Any], n: int) -> tuple[_CFNode, _CFNode]:
    dtype = _NODE_DTYPES[packed["node_dtype"]]
    leaf, threshold, bf = packed["node_is_leaf"], packed["node_threshold"], packed["node_branching_factor"]
    nodes = [_CFNode(threshold=float(threshold[i]), branching_factor=int(bf[i]), is_leaf=bool(leaf[i]),
                     n_features=n, dtype=dtype) for i in range(leaf.shape[0])]
    offsets, child = packed["node_offsets"].tolist(), packed["sub_child"].tolist()
    counts, sums = packed["sub_n_samples"].tolist(), packed["sub_squared_sum"]
    linear, centroid, sq_norm = packed["sub_linear_sum"], packed["sub_centroid"], packed["sub_sq_norm"]
    for i, node in enumerate(nodes):
        for j in range(offsets[i], offsets[i + 1]):
            sub = _CFSubcluster()
            sub.n_samples_ = counts[j]
            sub.linear_sum_ = linear[j].copy()  # partial_fit adds into it in place
            sub.squared_sum_ = sums[j]
            sub.centroid_ = centroid[j].copy()
            sub.sq_norm_ = sq_norm[j]
            sub.child_ = None if child[j] < 0 else nodes[child[j]]
            node.append_subcluster(sub)  # scikit-learn's own: the table row, then the views
    dummy = _CFNode(threshold=packed["dummy_threshold"], branching_factor=packed["dummy_branching_factor"],
                    is_leaf=True, n_features=n, dtype=dtype)
    chain = [dummy, *(nodes[i] for i in packed["leaf_order"].tolist())]
    for before, after in itertools.pairwise(chain):
        before.next_leaf_, after.prev_leaf_ = after, before
    return nodes[0], dummy


def unpack_birch(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A Spec ``unpack``: the checked flat arrays back into ``root_`` and ``dummy_leaf_``."""
    if not isinstance(attrs.get("root_"), dict):
        return attrs
    root, dummy = _build(attrs["root_"], attrs["n_features_in_"])
    return {**attrs, "root_": root, "dummy_leaf_": dummy}


SCHEMAS = [
    ((sk.Birch,), Spec(validate=check_birch, pack=pack_birch, unpack=unpack_birch, training_only=_TRAINING)),
]
