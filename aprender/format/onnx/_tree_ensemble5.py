"""A regression tree ensemble as ai.onnx.ml opset 5's ``TreeEnsemble``, whose output is double (private).

ai.onnx.ml opset 3's ``TreeEnsembleRegressor`` returns float32 scores whatever the type of its
thresholds and weights; opset 5's ``TreeEnsemble`` returns the input's type, so a double graph
sums double leaf weights into a double prediction (ONNX Runtime 1.32 runs it). The operator
lists interior nodes and leaves apart: each branch says whether it points at a node or a leaf,
a tree is given by the index of its root, and a leaf holds one target and its weight. It has
no base values; an ``Add`` after it adds them.

skl2onnx 1.20 refuses to build ai.onnx.ml 5 graphs, so the exact double graph of scikit-learn's
regressors (``_exact_trees``: opset 3 operators with double attributes, their float32 output cast
to double) is rewritten once converted (:func:`double_ensembles`). A graph with another
ai.onnx.ml operator that opset 5 deprecates (``TreeEnsembleClassifier``) keeps opset 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["double_ensembles", "tree_ensemble"]

_AGGREGATE = {"AVERAGE": 0, "SUM": 1, "MIN": 2, "MAX": 3}
_POST = {"NONE": 0, "SOFTMAX": 1, "LOGISTIC": 2, "SOFTMAX_ZERO": 3, "PROBIT": 4}


#: The per-node columns of ``TreeEnsemble``, in the order its attributes are written.
_COLUMNS = ("nodes_featureids", "nodes_truenodeids", "nodes_trueleafs", "nodes_falsenodeids", "nodes_falseleafs",
            "nodes_missing_value_tracks_true")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class _Nodes:
    """Opset 3's nodes as opset 5 numbers them: interior nodes and leaves apart, each from 0."""

    trees: np.ndarray
    ids: np.ndarray
    branches: list[int]
    node_index: dict[tuple[int, int], int]
    leaf_index: dict[tuple[int, int], int]

    def point(self, tree: int, node: int) -> tuple[int, int]:
        """(index, is a leaf) of opset 3's ``node`` of ``tree``."""
        key = (tree, node)
        return (self.leaf_index[key], 1) if key in self.leaf_index else (self.node_index[key], 0)


def _leaf_weights(attrs: dict[str, Any], trees: np.ndarray, ids: np.ndarray,
                  modes: list[str]) -> dict[tuple[int, int], float]:
    """Each leaf's weight, by (tree, node), in the order of the nodes."""
    weight = {(int(t), int(n)): 0.0 for t, n, m in zip(trees, ids, modes, strict=True) if m == "LEAF"}
    for t, n, w in zip(attrs["target_treeids"], attrs["target_nodeids"], attrs["target_weights"], strict=True):
        weight[int(t), int(n)] += float(w)
    return weight


def _append(out: dict[str, list[Any]], splits: list[float], row: tuple[int, ...], split: float) -> None:
    for key, value in zip(_COLUMNS, row, strict=True):
        out[key].append(value)
    splits.append(split)


def _add_branches(attrs: dict[str, Any], nodes: _Nodes, values: np.ndarray, modes: list[str],
                  out: dict[str, list[Any]], splits: list[float]) -> None:
    missing = list(attrs.get("nodes_missing_value_tracks_true") or [0] * len(modes))
    for i in nodes.branches:
        t = int(nodes.trees[i])
        true, true_leaf = nodes.point(t, int(attrs["nodes_truenodeids"][i]))
        false, false_leaf = nodes.point(t, int(attrs["nodes_falsenodeids"][i]))
        _append(out, splits, (int(attrs["nodes_featureids"][i]), true, true_leaf, false, false_leaf, int(missing[i])),
                float(values[i]))


def _add_roots(nodes: _Nodes, out: dict[str, list[Any]], splits: list[float]) -> list[int]:
    """Each tree's root; a tree that is one leaf gets a split whose both branches lead to it."""
    roots = []
    for tree in dict.fromkeys(int(t) for t in nodes.trees):
        root = int(nodes.ids[nodes.trees == tree].min())
        if (tree, root) in nodes.node_index:
            roots.append(nodes.node_index[tree, root])
            continue
        roots.append(len(splits))
        leaf = nodes.leaf_index[tree, root]
        _append(out, splits, (0, leaf, 1, leaf, 1, 0), 0.0)
    return roots


def _attributes(attrs: dict[str, Any], out: dict[str, list[Any]], roots: list[int], splits: list[float],
                leaf_weights: list[float]) -> dict[str, Any]:
    from onnx import numpy_helper

    return {
        **out,
        "tree_roots": roots,
        "nodes_splits": numpy_helper.from_array(np.asarray(splits, dtype=np.float64), name="nodes_splits"),
        "nodes_modes": numpy_helper.from_array(np.zeros(len(splits), dtype=np.uint8), name="nodes_modes"),
        "leaf_targetids": [0] * len(leaf_weights),
        "leaf_weights": numpy_helper.from_array(np.asarray(leaf_weights, dtype=np.float64), name="leaf_weights"),
        "n_targets": 1,
        "aggregate_function": _AGGREGATE[_text(attrs.get("aggregate_function", "SUM"))],
        "post_transform": _POST[_text(attrs.get("post_transform", "NONE"))],
    }


def tree_ensemble(attrs: dict[str, Any]) -> tuple[dict[str, Any], np.ndarray] | None:
    """``TreeEnsemble`` attributes and the base values for opset-3 regressor ``attrs``; None if not expressible.

    Only single-target ensembles of ``BRANCH_LEQ`` splits are rewritten (what scikit-learn's
    regressors are); others keep opset 3's operator.
    """
    modes = [_text(m) for m in attrs["nodes_modes"]]
    if int(attrs.get("n_targets", 1)) != 1 or set(modes) - {"BRANCH_LEQ", "LEAF"}:
        return None
    trees = np.asarray(attrs["nodes_treeids"], dtype=np.int64)
    ids = np.asarray(attrs["nodes_nodeids"], dtype=np.int64)
    values = np.asarray(attrs["nodes_values"], dtype=np.float64)
    weight = _leaf_weights(attrs, trees, ids, modes)
    branches = [i for i, m in enumerate(modes) if m != "LEAF"]
    nodes = _Nodes(trees, ids, branches, {(int(trees[i]), int(ids[i])): k for k, i in enumerate(branches)},
                   {key: k for k, key in enumerate(weight)})
    out: dict[str, list[Any]] = {k: [] for k in _COLUMNS}
    splits: list[float] = []
    _add_branches(attrs, nodes, values, modes, out, splits)
    roots = _add_roots(nodes, out, splits)
    base = attrs.get("base_values")
    return (_attributes(attrs, out, roots, splits, list(weight.values())),
            np.asarray([0.0] if base is None or not len(base) else base, dtype=np.float64))


def _only_regressors(ml: list[Any]) -> bool:
    """Whether the graph's ai.onnx.ml operators include tree ensembles only of regressors (and some at all)."""
    return bool(ml) and all(n.op_type == "TreeEnsembleRegressor" for n in ml if n.op_type.startswith("TreeEnsemble"))


def _consumers(nodes: list[Any]) -> dict[str, list[Any]]:
    """Each value's consumers, by name."""
    consumers: dict[str, list[Any]] = {}
    for n in nodes:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    return consumers


def _attribute_values(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values; ``*_as_tensor`` ones as arrays, under their plain names."""
    import onnx
    from onnx import helper, numpy_helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k.replace("_as_tensor", ""): numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
            for k, v in attrs.items()}


def _double_cast(after: list[Any]) -> Any:
    """The one consumer of a regressor's output when it is a ``Cast`` to double, else None."""
    import onnx

    to_double = len(after) == 1 and after[0].op_type == "Cast" and any(
        a.name == "to" and a.i == onnx.TensorProto.DOUBLE for a in after[0].attribute)
    return after[0] if to_double else None


def _ensemble_nodes(onx: Any, n: Any, cast: Any, ensemble: dict[str, Any], base: np.ndarray) -> list[Any]:
    """The ``TreeEnsemble`` that replaces regressor ``n`` and its ``cast``, and the ``Add`` of non-zero base
    values (added to ``onx``'s initializers)."""
    from onnx import helper, numpy_helper

    summed = f"{n.output[0]}_double"
    new = [helper.make_node("TreeEnsemble", list(n.input), [summed if base.any() else cast.output[0]],
                            domain="ai.onnx.ml", name=n.name, **ensemble)]
    if base.any():
        onx.graph.initializer.append(numpy_helper.from_array(base, name=f"{n.name}_base_values"))
        new.append(helper.make_node("Add", [summed, f"{n.name}_base_values"], [cast.output[0]],
                                    name=f"{n.name}_AddBase"))
    return new


def _rewrite(onx: Any, n: Any, consumers: dict[str, list[Any]]) -> tuple[list[Any], Any] | None:
    """The nodes that replace regressor ``n``, and the cast they replace with it; None if it cannot be."""
    attrs = _attribute_values(n)
    cast = _double_cast(consumers.get(n.output[0], []))
    converted = tree_ensemble(attrs) if cast is not None and "nodes_values_as_tensor" in {
        a.name for a in n.attribute} else None
    if cast is None or converted is None:
        return None
    return _ensemble_nodes(onx, n, cast, *converted), cast


def _at_opset5(onx: Any, nodes: list[Any], rewritten: dict[int, list[Any]], dropped: set[int]) -> Any:
    """A copy of ``onx`` with the ``rewritten`` nodes, without the ``dropped`` ones, at ai.onnx.ml 5; ``onx``
    if that is not a valid model."""
    import onnx

    changed = onnx.ModelProto()
    changed.CopyFrom(onx)
    del changed.graph.node[:]
    for n in nodes:
        if id(n) not in dropped:
            changed.graph.node.extend(rewritten.get(id(n), [n]))
    for opset in changed.opset_import:
        if opset.domain == "ai.onnx.ml":
            opset.version = 5
    try:
        onnx.checker.check_model(changed, full_check=True)
    except Exception:  # another ai.onnx.ml operator of the graph is not valid at opset 5
        return onx
    return changed


def double_ensembles(onx: Any) -> Any:
    """``onx`` with its double-threshold regressors as ``TreeEnsemble`` (ai.onnx.ml 5); ``onx`` where it cannot be."""
    nodes = list(onx.graph.node)
    ml = [n for n in nodes if n.domain == "ai.onnx.ml"]
    if not _only_regressors(ml):
        return onx
    consumers = _consumers(nodes)
    rewritten, dropped = {}, set()
    for n in ml:
        if n.op_type != "TreeEnsembleRegressor":
            continue
        done = _rewrite(onx, n, consumers)
        if done is None:
            return onx
        rewritten[id(n)], cast = done
        dropped.add(id(cast))
    return _at_opset5(onx, nodes, rewritten, dropped)
