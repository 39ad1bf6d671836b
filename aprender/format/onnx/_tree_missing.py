"""Missing values routed through a scikit-learn tree's graph as scikit-learn routes them (private).

scikit-learn's trees (since 1.3 decision trees, 1.4 random forests, 1.6 extra trees) send a
NaN to the child named by each split's ``missing_go_to_left``, learnt from the missing values
seen in fit (or, with none seen, the child with more samples). skl2onnx 1.20 writes
``nodes_missing_value_tracks_true`` as all zeros, so ONNX Runtime sends every NaN right
(``x <= t`` is false): the gallery measured an ExtraTrees 0.15 off on data with missing
values, and a decision tree here gets 16 of 100 labels wrong. A ``BRANCH_LEQ`` node's true
branch is scikit-learn's left child, so the flag is ``missing_go_to_left`` itself.

The attribute is filled only where the graph's trees are known one for one: a single
``TreeEnsemble*`` node and a single scikit-learn tree model (a tree or a forest; its trees
in ``estimators_`` order, skl2onnx's tree ids). Verification checks the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from aprender.format.onnx._probe import fitted_parts

__all__ = ["route_missing_values"]

_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")


def _trees(model: Any) -> list[Any] | None:
    """The ``tree_`` objects of the one scikit-learn tree model in ``model``, in skl2onnx's tree-id order."""
    from sklearn import ensemble
    from sklearn.tree import BaseDecisionTree

    kinds = (BaseDecisionTree, ensemble.RandomForestClassifier, ensemble.RandomForestRegressor,
             ensemble.ExtraTreesClassifier, ensemble.ExtraTreesRegressor)
    models = [p for p in fitted_parts(model)
              if isinstance(p, kinds) and (hasattr(p, "tree_") or hasattr(p, "estimators_"))]
    if len(models) != 1:
        return None
    model = models[0]
    return [model.tree_] if hasattr(model, "tree_") else [est.tree_ for est in model.estimators_]


def route_missing_values(onx: onnx.ModelProto, model: Any) -> None:
    """Set ``nodes_missing_value_tracks_true`` of the graph's tree node from ``missing_go_to_left``."""
    nodes = [node for node in onx.graph.node if node.op_type in _TREE_OPS]
    trees = _trees(model) if len(nodes) == 1 else None
    if trees is None:
        return
    attrs = {a.name: a for a in nodes[0].attribute}
    if "nodes_missing_value_tracks_true" not in attrs or not all(hasattr(t, "missing_go_to_left") for t in trees):
        return
    tree_ids, node_ids = list(attrs["nodes_treeids"].ints), list(attrs["nodes_nodeids"].ints)
    if max(tree_ids, default=-1) >= len(trees):
        return  # not the trees this graph was made from: leave it to verification
    left = [np.asarray(t.missing_go_to_left, dtype=np.int64) for t in trees]
    flags = [int(left[t][n]) if n < len(left[t]) else 0 for t, n in zip(tree_ids, node_ids, strict=True)]
    attrs["nodes_missing_value_tracks_true"].ints[:] = flags
