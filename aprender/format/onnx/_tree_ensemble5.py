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

from typing import Any

import numpy as np

__all__ = ["double_ensembles", "tree_ensemble"]

_AGGREGATE = {"AVERAGE": 0, "SUM": 1, "MIN": 2, "MAX": 3}
_POST = {"NONE": 0, "SOFTMAX": 1, "LOGISTIC": 2, "SOFTMAX_ZERO": 3, "PROBIT": 4}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def tree_ensemble(attrs: dict[str, Any]) -> tuple[dict[str, Any], np.ndarray] | None:
    """``TreeEnsemble`` attributes and the base values for opset-3 regressor ``attrs``; None if not expressible.

    Only single-target ensembles of ``BRANCH_LEQ`` splits are rewritten (what scikit-learn's
    regressors are); others keep opset 3's operator.
    """
    from onnx import numpy_helper

    modes = [_text(m) for m in attrs["nodes_modes"]]
    if int(attrs.get("n_targets", 1)) != 1 or set(modes) - {"BRANCH_LEQ", "LEAF"}:
        return None
    trees = np.asarray(attrs["nodes_treeids"], dtype=np.int64)
    ids = np.asarray(attrs["nodes_nodeids"], dtype=np.int64)
    values = np.asarray(attrs["nodes_values"], dtype=np.float64)
    weight = {(int(t), int(n)): 0.0 for t, n, m in zip(trees, ids, modes, strict=True) if m == "LEAF"}
    for t, n, w in zip(attrs["target_treeids"], attrs["target_nodeids"], attrs["target_weights"], strict=True):
        weight[int(t), int(n)] += float(w)
    branches = [i for i, m in enumerate(modes) if m != "LEAF"]
    node_index = {(int(trees[i]), int(ids[i])): k for k, i in enumerate(branches)}
    leaf_index = {key: k for k, key in enumerate(weight)}
    leaf_weights = list(weight.values())
    missing = list(attrs.get("nodes_missing_value_tracks_true") or [0] * len(modes))
    out: dict[str, list[Any]] = {k: [] for k in ("nodes_featureids", "nodes_truenodeids", "nodes_trueleafs",
                                                 "nodes_falsenodeids", "nodes_falseleafs",
                                                 "nodes_missing_value_tracks_true")}
    splits: list[float] = []

    def point(tree: int, node: int) -> tuple[int, int]:
        return (leaf_index[tree, node], 1) if (tree, node) in leaf_index else (node_index[tree, node], 0)

    for i in branches:
        t = int(trees[i])
        true, true_leaf = point(t, int(attrs["nodes_truenodeids"][i]))
        false, false_leaf = point(t, int(attrs["nodes_falsenodeids"][i]))
        for key, value in (("nodes_featureids", int(attrs["nodes_featureids"][i])), ("nodes_truenodeids", true),
                           ("nodes_trueleafs", true_leaf), ("nodes_falsenodeids", false),
                           ("nodes_falseleafs", false_leaf), ("nodes_missing_value_tracks_true", int(missing[i]))):
            out[key].append(value)
        splits.append(float(values[i]))
    roots = []
    for tree in dict.fromkeys(int(t) for t in trees):
        root = int(ids[trees == tree].min())
        if (tree, root) in node_index:
            roots.append(node_index[tree, root])
            continue
        # a tree that is one leaf: a split whose both branches lead to it
        roots.append(len(splits))
        for key, value in (("nodes_featureids", 0), ("nodes_truenodeids", leaf_index[tree, root]),
                           ("nodes_trueleafs", 1), ("nodes_falsenodeids", leaf_index[tree, root]),
                           ("nodes_falseleafs", 1), ("nodes_missing_value_tracks_true", 0)):
            out[key].append(value)
        splits.append(0.0)
    converted = {
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
    base = attrs.get("base_values")
    return converted, np.asarray([0.0] if base is None or not len(base) else base, dtype=np.float64)


def double_ensembles(onx: Any) -> Any:
    """``onx`` with its double-threshold regressors as ``TreeEnsemble`` (ai.onnx.ml 5); ``onx`` where it cannot be."""
    import onnx
    from onnx import helper, numpy_helper

    nodes = list(onx.graph.node)
    ml = [n for n in nodes if n.domain == "ai.onnx.ml"]
    if not ml or any(n.op_type != "TreeEnsembleRegressor" for n in ml if n.op_type.startswith("TreeEnsemble")):
        return onx
    consumers: dict[str, list[Any]] = {}
    for n in nodes:
        for name in n.input:
            consumers.setdefault(name, []).append(n)
    rewritten, dropped = {}, set()
    for n in ml:
        if n.op_type != "TreeEnsembleRegressor":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        attrs = {k.replace("_as_tensor", ""): numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
                 for k, v in attrs.items()}
        after = consumers.get(n.output[0], [])
        to_double = len(after) == 1 and after[0].op_type == "Cast" and any(
            a.name == "to" and a.i == onnx.TensorProto.DOUBLE for a in after[0].attribute)
        cast = after[0] if to_double else None
        converted = tree_ensemble(attrs) if cast is not None and "nodes_values_as_tensor" in {
            a.name for a in n.attribute} else None
        if cast is None or converted is None:
            return onx
        ensemble, base = converted
        summed = f"{n.output[0]}_double"
        new = [helper.make_node("TreeEnsemble", list(n.input), [summed if base.any() else cast.output[0]],
                                domain="ai.onnx.ml", name=n.name, **ensemble)]
        if base.any():
            onx.graph.initializer.append(numpy_helper.from_array(base, name=f"{n.name}_base_values"))
            new.append(helper.make_node("Add", [summed, f"{n.name}_base_values"], [cast.output[0]],
                                        name=f"{n.name}_AddBase"))
        rewritten[id(n)] = new
        dropped.add(id(cast))
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
