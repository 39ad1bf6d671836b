"""scikit-learn's ``Tree`` <-> one array per node field, for one tree or many packed.

A ``Tree`` is stored as the columns of its node records (``left_child``,
``right_child``, ``feature``, ``threshold``, ...) plus ``values``. Many trees (a
forest) are stored packed: the same arrays for all trees concatenated, with
``node_offsets`` and ``max_depth`` per tree, so the number of tensors does not grow
with the number of trees. Every array is checked (:func:`check_tree_arrays`) before
a ``Tree`` is built, because scikit-learn follows child indices without bounds checks;
a lone tree's ``max_depth`` is checked right after its build (:func:`check_built_depths`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.tree._tree import NODE_DTYPE, Tree

from aprender.codec._checks import fail, n_features
from aprender.codec._nodes import preview
from aprender.codec.trees._structure import Layout, check_children, check_offsets, max_per_tree, node_depths
from aprender.exceptions import UnsupportedTypeError

__all__ = ["NODE_FIELDS", "TREE_ARRAYS", "TREE_CLASSIFIER_FITTED", "TREE_FITTED", "build_tree", "build_trees",
           "check_built_depths", "check_tree_arrays", "check_tree_attrs", "pack_trees", "tree_columns"]

#: The node record fields of scikit-learn's Tree, each stored as one tensor.
NODE_FIELDS: tuple[str, ...] = tuple(NODE_DTYPE.names)
_FIELD_DTYPES = {name: NODE_DTYPE.fields[name][0] for name in NODE_FIELDS}
#: Every array of a packed tree set, in storage order.
TREE_ARRAYS: tuple[str, ...] = (*NODE_FIELDS, "values")
#: scikit-learn's markers: a leaf's children are TREE_LEAF, its feature TREE_UNDEFINED.
TREE_LEAF, TREE_UNDEFINED = -1, -2


def _layout_of(tree: Tree) -> tuple[int, int, list[int]]:
    return int(tree.n_features), int(tree.n_outputs), [int(c) for c in tree.n_classes]


def pack_trees(trees: Sequence[Tree], path: str) -> dict[str, Any]:
    """Concatenate the node arrays of ``trees``, which must share their output layout."""
    features, outputs, classes = _layout_of(trees[0])
    states = []
    for i, tree in enumerate(trees):
        if _layout_of(tree) != (features, outputs, classes):
            raise UnsupportedTypeError(f"{path}.{i}", "sklearn.tree._tree.Tree",
                                       "the trees differ in n_features, n_outputs or n_classes and cannot be packed")
        states.append(tree.__getstate__())
    # Concatenated as raw bytes: numpy copies structured arrays with padding field by field.
    nodes = np.concatenate([s["nodes"].view(np.uint8) for s in states]).view(NODE_DTYPE)
    counts = np.fromiter((s["node_count"] for s in states), dtype=np.int64, count=len(states))
    packed: dict[str, Any] = {"n_features": features, "n_outputs": outputs, "n_classes": classes}
    packed["node_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    packed["max_depth"] = np.fromiter((s["max_depth"] for s in states), dtype=np.int64, count=len(states))
    packed.update(_columns(nodes))
    packed["values"] = np.concatenate([s["values"] for s in states])
    return packed


def _columns(nodes: np.ndarray) -> dict[str, np.ndarray]:
    """Each field of node records as a contiguous array of its own."""
    return {name: np.ascontiguousarray(nodes[name]) for name in NODE_FIELDS}


def _positive_int(value: object, name: str, path: str) -> int:
    if type(value) is not int or not 1 <= value < 2**31:
        raise fail(path, f"'{name}' must be a positive int below 2**31, found {preview(value, 40)}")
    return value


def check_tree_arrays(packed: Mapping[str, Any], shape: Sequence[int], path: str, *, depths: bool = True) -> None:
    """Validate packed tree arrays for ``prod(shape)`` trees; raise FormatError naming tree and node.

    With ``depths=False`` each tree's ``max_depth`` is left for :func:`check_built_depths`
    to check once the trees are built; everything scikit-learn could read out of
    bounds is checked either way.
    """
    features, n_nodes = _check_layout(packed, path)
    n_trees = math.prod(shape)
    offsets = check_offsets(packed.get("node_offsets"), n_trees, n_nodes, path, "node_offsets", empty_ok=False)
    max_depth = packed.get("max_depth")
    if not isinstance(max_depth, np.ndarray) or max_depth.dtype != np.int64 or max_depth.shape != (n_trees,):
        raise fail(path, f"'max_depth' must be int64 of shape ({n_trees},)")
    layout = Layout(offsets, shape)
    internal = _check_nodes(layout, packed, features, path)
    if not depths:
        return
    left, right = packed["left_child"], packed["right_child"]
    deepest = max_per_tree(layout, node_depths(layout, internal, (left, right)))
    wrong = deepest != max_depth
    if np.count_nonzero(wrong):
        t = int(np.argmax(wrong))
        raise fail(path, f"{layout.name(t)}: max_depth is {max_depth[t]} but its deepest node "
                         f"is at depth {deepest[t]}")


def _check_layout(packed: Mapping[str, Any], path: str) -> tuple[int, int]:
    """Check the trees' layout and the type and length of every node array; ``(n_features, n_nodes)``."""
    features = _positive_int(packed.get("n_features"), "n_features", path)
    outputs = _positive_int(packed.get("n_outputs"), "n_outputs", path)
    classes = packed.get("n_classes")
    if not isinstance(classes, list) or len(classes) != outputs:
        raise fail(path, f"'n_classes' must list one class count per output ({outputs}), found {preview(classes)}")
    for k, c in enumerate(classes):
        _positive_int(c, f"n_classes[{k}]", path)
    n_nodes = None
    for name in NODE_FIELDS:
        array = packed.get(name)
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != _FIELD_DTYPES[name]:
            found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise fail(path, f"node field '{name}' must be a 1-d {_FIELD_DTYPES[name]} array, found {found}")
        if n_nodes is None:  # left_child, the first field
            n_nodes = array.shape[0]
        elif array.shape[0] != n_nodes:
            raise fail(path, f"node field '{name}' has {array.shape[0]} entries, 'left_child' has {n_nodes}")
    values = packed.get("values")
    expected = (n_nodes, outputs, max(classes))
    if not isinstance(values, np.ndarray) or values.dtype != np.float64 or values.shape != expected:
        found = f"{getattr(values, 'dtype', type(values).__name__)} {getattr(values, 'shape', '')}"
        raise fail(path, f"'values' must be float64 of shape {expected} (nodes, outputs, classes), found {found}")
    return features, n_nodes


def _check_nodes(layout: Layout, packed: Mapping[str, Any], features: int, path: str) -> np.ndarray:
    """Check leaves, features and children of every node; return the mask of internal nodes."""
    left, right, feature = packed["left_child"], packed["right_child"], packed["feature"]
    leaf = left == TREE_LEAF
    disagree = leaf != (right == TREE_LEAF)
    if np.count_nonzero(disagree):
        i = int(np.argmax(disagree))
        raise fail(path, f"{layout.node(i)}: left_child {left[i]} and right_child {right[i]} disagree on "
                         f"whether it is a leaf (a leaf has both set to {TREE_LEAF})")
    # A leaf's feature is TREE_UNDEFINED, an internal node's in [0, features) (negatives wrap to huge values).
    wrong = np.where(leaf, feature != TREE_UNDEFINED, feature.view(np.uint64) >= features)
    if np.count_nonzero(wrong):
        i = int(np.argmax(wrong))
        if leaf[i]:
            raise fail(path, f"{layout.node(i)} is a leaf but has feature {feature[i]} (leaves have {TREE_UNDEFINED})")
        raise fail(path, f"{layout.node(i)}: feature index {feature[i]} is outside [0, {features})")
    internal = ~leaf
    check_children(layout, internal, {"left_child": left, "right_child": right}, path)
    return internal


def build_trees(packed: Mapping[str, Any]) -> list[Tree]:
    """Build one ``Tree`` per tree of arrays that passed :func:`check_tree_arrays`."""
    offsets = packed["node_offsets"].tolist()
    nodes = np.zeros(offsets[-1], dtype=NODE_DTYPE)  # zeroed padding, as scikit-learn keeps it
    for name in NODE_FIELDS:
        nodes[name] = packed[name]
    values = np.ascontiguousarray(packed["values"])
    features, outputs = packed["n_features"], packed["n_outputs"]
    classes = np.asarray(packed["n_classes"], dtype=np.intp)
    trees = []
    for begin, end, depth in zip(offsets[:-1], offsets[1:], packed["max_depth"].tolist(), strict=True):
        tree = Tree(features, classes, outputs)
        # Tree.__setstate__ copies both arrays into memory the Tree owns.
        tree.__setstate__({"max_depth": depth, "node_count": end - begin, "nodes": nodes[begin:end],
                           "values": values[begin:end]})
        trees.append(tree)
    return trees


def check_built_depths(trees: Sequence[Tree], max_depth: np.ndarray, path: str) -> None:
    """Each built tree's deepest node against its stored ``max_depth``.

    For trees that passed :func:`check_tree_arrays`: scikit-learn's own
    ``compute_node_depths`` then walks valid children, in C, and for a few trees costs
    a tenth of the NumPy passes that find the same depths before the build.
    """
    for t, tree in enumerate(trees):
        deepest = int(tree.compute_node_depths().max(initial=1)) - 1  # its root is at depth 1
        if deepest != max_depth[t]:
            raise fail(path, f"tree {t}: max_depth is {max_depth[t]} but its deepest node is at depth {deepest}")


def _int_list(value: object) -> list[int] | None:
    """``value`` as a list of ints if it is an int or a 1-d sequence of ints."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return [int(value)]
    if isinstance(value, (list, np.ndarray)) and np.ndim(value) == 1:
        items = list(value)
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items):
            return [int(v) for v in items]
    return None


#: Fitted attributes every decision tree has besides ``tree_`` (and a classifier's labels).
TREE_FITTED = ("n_features_in_", "n_outputs_", "max_features_")
TREE_CLASSIFIER_FITTED = ("classes_", "n_classes_")


def check_tree_attrs(
    attrs: Mapping[str, Any], features: int, outputs: int, classes: Sequence[int], classifier: bool, path: str
) -> None:
    """Check an estimator's fitted attributes against the trees it carries.

    ``n_features_in_`` and ``n_outputs_`` must match the trees; a classifier's
    ``classes_`` and ``n_classes_`` must match their class counts and a regressor's
    trees must have a single value per output.
    """
    n = n_features(attrs, path)
    if n != features:
        raise fail(path, f"n_features_in_ is {n} but the trees were built for {features} features")
    n_outputs = attrs.get("n_outputs_", outputs)
    if n_outputs != outputs:
        raise fail(path, f"n_outputs_ is {preview(n_outputs)} but the trees have {outputs} outputs")
    if not classifier:
        if any(c != 1 for c in classes):
            raise fail(path, f"a regressor's trees need one value per output, found n_classes {list(classes)}")
        return
    counts = _int_list(attrs.get("n_classes_"))
    if counts != list(classes):
        raise fail(path, f"n_classes_ is {preview(attrs.get('n_classes_'))} but the trees have {list(classes)} classes")
    labels = attrs.get("classes_")
    per_output = [labels] if outputs == 1 else labels
    if not isinstance(per_output, list) or len(per_output) != outputs:
        raise fail(path, f"classes_ must hold the labels of {outputs} outputs")
    for k, labels_k in enumerate(per_output):
        if not isinstance(labels_k, np.ndarray) or labels_k.shape != (classes[k],):
            raise fail(path, f"classes_ of output {k} must be an array of {classes[k]} labels, "
                             f"found shape {getattr(labels_k, 'shape', None)}")


# -- one Tree, as the ``sklearn_tree`` handler (aprender.codec.handlers.tree) stores it ------


def tree_columns(tree: Tree) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One tree's counts and depth, and the arrays :func:`pack_trees` would give, without concatenations and offsets."""
    features, outputs, classes = _layout_of(tree)
    state = tree.__getstate__()
    counts = {"n_features": features, "n_outputs": outputs, "n_classes": classes, "max_depth": int(state["max_depth"])}
    return counts, {**_columns(state["nodes"]), "values": state["values"]}


def build_tree(packed: dict[str, Any], depth: int, path: str) -> Tree:
    """One tree from its counts and node arrays (``packed`` without offsets) and its ``max_depth``, checked."""
    if not 0 <= depth < 2**31:
        raise fail(path, f"'max_depth' must be an int from 0 to 2**31, found {preview(depth, 40)}")
    # The offsets and depth of one tree are made here, not read: only its node arrays need checks.
    features, n_nodes = _check_layout(packed, path)
    packed["node_offsets"] = offsets = np.array([0, n_nodes], dtype=np.int64)
    packed["max_depth"] = np.array([depth], dtype=np.int64)
    _check_nodes(Layout(offsets, (1,)), packed, features, path)
    trees = build_trees(packed)
    check_built_depths(trees, packed["max_depth"], path)
    return trees[0]
