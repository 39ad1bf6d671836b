"""What ``apr inspect`` says of each XGBoost, LightGBM or CatBoost booster in a file.

A booster is a tagged node of the codec's metadata tree (``xgboost_booster``,
``lightgbm_booster``, ``catboost_booster``) whose arrays are tensors. The summary comes
from that node, its estimator's node and the tensor table: objective, trees and
iterations, best iteration, features, classes, nodes and leaves. None of the three
libraries is needed, nor any tensor data, nor a key. Given the tensor data (``inspect
--tensors``), it adds each model's largest tree depth and, for XGBoost, its leaves.

The file is not validated here: a count it cannot give (a shape or value that is not
what the format writes) is ``None``, never an error.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aprender.cli._tree import untag

__all__ = ["booster_summaries"]

Shapes = Mapping[str, tuple[int, ...]]
Arrays = Mapping[str, np.ndarray]


def _tensor(node: Mapping[str, Any], field: str) -> str | None:
    value = node.get(field)
    name = value.get("name") if isinstance(value, Mapping) and value.get("__t__") == "tensor" else None
    return name if isinstance(name, str) else None


def _length(node: Mapping[str, Any], field: str, shapes: Shapes) -> int | None:
    shape = shapes.get(_tensor(node, field) or "")
    return shape[0] if shape is not None and len(shape) == 1 else None


def _array(node: Mapping[str, Any], field: str, arrays: Arrays | None) -> np.ndarray | None:
    array = None if arrays is None else arrays.get(_tensor(node, field) or "")
    return array if isinstance(array, np.ndarray) and array.ndim == 1 and array.dtype.kind in "iu" else None


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _levels(left: list[int], right: list[int]) -> int | None:
    """How many levels of nodes hang from node 0 (children >= 0 are nodes); None unless they form a tree."""
    n, level, levels, seen = len(left), [0] if left else [], 0, {0}
    while level:
        levels += 1
        level = [c for node in level for c in (left[node], right[node]) if c >= 0]
        below = set(level)
        if len(below) != len(level) or below & seen or any(c >= n for c in level):
            return None  # a node reached twice (a cycle among them) or past the tree
        seen |= below
    return levels


def _deepest(node: Mapping[str, Any], arrays: Arrays | None, per_tree: str, leaf_levels: int) -> int | None:
    """The largest depth of the booster's trees: each tree's levels from its children arrays,
    ``leaf_levels`` more when leaves are not nodes of the arrays (LightGBM: 1 below its deepest split)."""
    names = {"xgboost_booster": ("left_children", "right_children"),
             "lightgbm_booster": ("left_child", "right_child")}[node["__t__"]]
    left, right = (_array(node, name, arrays) for name in names)
    counts = _array(node, per_tree, arrays)
    if left is None or right is None or counts is None or left.shape != right.shape:
        return None
    if per_tree == "node_offsets":  # XGBoost: where each tree's nodes start
        offsets = counts.astype(np.int64)
    else:  # LightGBM: num_leaves per tree, num_leaves - 1 splits each
        offsets = np.concatenate([[0], np.cumsum(counts.astype(np.int64) - 1)])
    if offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != left.shape[0] or np.any(np.diff(offsets) < 0):
        return None
    lefts, rights, bounds = left.tolist(), right.tolist(), offsets.tolist()
    deepest = 0
    for begin, end in itertools.pairwise(bounds):
        levels = _levels(lefts[begin:end], rights[begin:end])
        if levels is None:
            return None
        deepest = max(deepest, levels - 1 + leaf_levels if levels else 0)
    return deepest


def _xgboost(node: Mapping[str, Any], shapes: Shapes, arrays: Arrays | None) -> dict[str, Any]:
    offsets = _length(node, "node_offsets", shapes)
    trees = None if offsets is None else offsets - 1
    classes, targets, parallel = (_int(node.get(k)) for k in ("num_class", "num_target", "num_parallel_tree"))
    # XGBoost grows one tree per class (or target) and parallel tree each round.
    per_round = max(classes, targets) * parallel if None not in (classes, targets, parallel) else None
    attributes = node.get("attributes")
    best = attributes.get("best_iteration") if isinstance(attributes, Mapping) else None
    objective = node.get("objective")
    left = _array(node, "left_children", arrays)
    return {
        "objective": objective.get("name") if isinstance(objective, Mapping) else None,
        "n_trees": trees, "trees_per_iteration": per_round,
        "best_iteration": int(best) if isinstance(best, str) and best.isdigit() else None,
        "n_features": _int(node.get("num_feature")), "n_classes": classes if classes and classes > 1 else None,
        "n_nodes": _length(node, "split_conditions", shapes),
        "n_leaves": None if left is None else int(np.count_nonzero(left == -1)),
        "max_depth": _deepest(node, arrays, "node_offsets", 0),
    }


def _lightgbm(node: Mapping[str, Any], shapes: Shapes, arrays: Arrays | None) -> dict[str, Any]:
    objective = node.get("objective")
    best, features, classes = (_int(node.get(k)) for k in ("best_iteration", "max_feature_idx", "num_class"))
    return {
        "objective": objective.partition(" ")[0] if isinstance(objective, str) else None,
        "format_version": node.get("version") if isinstance(node.get("version"), str) else None,
        "n_trees": _length(node, "num_leaves", shapes),
        "trees_per_iteration": _int(node.get("num_tree_per_iteration")),
        "best_iteration": best if best is not None and best > 0 else None,  # 0 and -1: none recorded
        "n_features": None if features is None else features + 1,
        "n_classes": classes if classes and classes > 1 else None,
        "n_nodes": _length(node, "split_feature", shapes),
        "n_leaves": _length(node, "leaf_value", shapes),
        "max_depth": _deepest(node, arrays, "num_leaves", 1),
    }


def _catboost(node: Mapping[str, Any], shapes: Shapes, arrays: Arrays | None) -> dict[str, Any]:
    training = node.get("training")
    metrics = training.get("metrics") if isinstance(training, Mapping) else None
    best = metrics.get("best_iteration") if isinstance(metrics, Mapping) else None
    labels = node.get("class_params")
    names = labels.get("class_names") if isinstance(labels, Mapping) else None
    depths = _array(node, "tree_depths", arrays)
    floats, cats = _int(node.get("n_features")), node.get("cat_feature_ids")
    return {
        "objective": node.get("loss") if isinstance(node.get("loss"), str) else None,
        "n_trees": _length(node, "tree_depths", shapes), "trees_per_iteration": 1,
        "best_iteration": _int(best),
        "n_features": floats + len(cats) if floats is not None and isinstance(cats, list) else floats,
        "n_classes": len(names) if isinstance(names, list) else None,
        "classes": names if isinstance(names, list) else None,
        "n_nodes": _length(node, "split_feature", shapes),  # a symmetric tree's splits, one per level
        "n_leaves": _length(node, "leaf_weights", shapes),
        "max_depth": int(depths.max()) if depths is not None and depths.size else None,
    }


#: Booster tag -> (library, its summary).
_SUMMARIES: dict[str, tuple[str, Callable[[Mapping[str, Any], Shapes, Arrays | None], dict[str, Any]]]] = {
    "xgboost_booster": ("xgboost", _xgboost),
    "lightgbm_booster": ("lightgbm", _lightgbm),
    "catboost_booster": ("catboost", _catboost),
}


def _class_count(estimator: Mapping[str, Any] | None) -> int | None:
    """The estimator's class count where it records one (XGBoost's ``n_classes_``, LightGBM's ``_n_classes``):
    a binary booster has one output, so the booster alone does not tell."""
    attrs = estimator.get("attrs") if isinstance(estimator, Mapping) else None
    counts = [attrs.get(name) for name in ("n_classes_", "_n_classes")] if isinstance(attrs, Mapping) else []
    return next((n for n in counts if type(n) is int and n > 1), None)


def _classes(estimator: Mapping[str, Any] | None) -> list[Any] | None:
    """The estimator's class labels where its metadata holds them as a list (a tensor of numbers is not read)."""
    attrs = estimator.get("attrs") if isinstance(estimator, Mapping) else None
    if not isinstance(attrs, Mapping):
        return None
    for name in ("classes_", "_classes"):
        labels = untag(attrs.get(name))
        if isinstance(labels, list):
            return labels
    return None


def _walk(node: Any, estimator: Mapping[str, Any] | None, found: list[tuple[Mapping[str, Any], Any]]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, estimator, found)
    elif isinstance(node, Mapping):
        tag = node.get("__t__")
        if tag in _SUMMARIES:
            found.append((node, estimator))
            return
        for value in node.values():
            _walk(value, node if tag == "estimator" else estimator, found)


def booster_summaries(model: Any, shapes: Shapes, arrays: Arrays | None = None) -> list[dict[str, Any]]:
    """One summary per booster in the metadata tree ``model``, in tree order.

    Parameters
    ----------
    model : dict or None
        The file's model node (``ModelInfo.metadata["model"]``).
    shapes : mapping of str to tuple of int
        Each tensor's shape, from the file's tensor table.
    arrays : mapping of str to ndarray, optional
        The tensor data, when it was read: adds ``max_depth`` (and XGBoost's ``n_leaves``).

    Returns
    -------
    list of dict
        ``path`` (where the booster sits, as its tensors are named), ``estimator``,
        ``library``, ``library_version`` (the release that saved it; older files lack it),
        ``objective``, ``n_trees``, ``trees_per_iteration``, ``n_iterations``,
        ``best_iteration``, ``n_features``, ``n_classes``, ``classes``, ``n_nodes``,
        ``n_leaves``, ``max_depth`` and, for LightGBM, ``format_version``; ``None`` where
        the file does not tell.
    """
    found: list[tuple[Mapping[str, Any], Any]] = []
    _walk(model, None, found)
    out = []
    for node, estimator in found:
        library, summarize = _SUMMARIES[node["__t__"]]
        tensor = next((name for name in (_tensor(node, field) for field in node) if name), None)
        version = node.get("library_version")
        summary = {"path": tensor.rpartition(".")[0] if tensor else None,
                   "estimator": untag(estimator)["class"] if estimator is not None else None,
                   "library": library, "library_version": version if isinstance(version, str) else None,
                   "classes": _classes(estimator), **summarize(node, shapes, arrays)}
        if summary["n_classes"] is None:
            summary["n_classes"] = _class_count(estimator)
        trees, per = summary["n_trees"], summary["trees_per_iteration"]
        summary["n_iterations"] = trees // per if trees is not None and per else None
        out.append(summary)
    return out
