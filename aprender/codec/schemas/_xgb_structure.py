"""The rules an XGBoost booster's arrays and settings must follow before XGBoost sees them.

An XGBoost booster is stored as the packed node arrays of its trees (every tree's nodes
concatenated, ``node_offsets`` marking where each starts), the categories of its
categorical splits, and a few settings (objective, class and feature counts, base
score). At load, :func:`check_booster` applies every rule below to what the file holds;
only values that pass are written back into the (UBJSON) model that XGBoost's own loader
reads (``aprender.codec.handlers.xgboost_booster``). XGBoost's predictor follows child
indices and reads category bitsets and feature vectors without bounds checks, so every
index and count it follows is checked here:

- node arrays have one dtype and one length each (:data:`NODE_ARRAYS`);
- every tree is a proper tree rooted at its node 0: children inside the tree, after
  their parent, every other node with exactly one parent
  (``aprender.codec.trees._structure.check_children``); a leaf has both children
  -1, a numerical split index 0 and split type 0;
- split features are below ``num_feature``; split conditions, leaf values, base
  weights, gains, hessian sums and the base score are finite;
- only features of type ``c`` have recorded categories;
- a categorical split (split type 1) is on a feature of type ``c``; the tree's
  ``categories_nodes`` are exactly its categorical nodes, in order; their segments tile
  its categories; the categories of one node are strictly increasing and below the
  feature's category count (its recorded categories, or :data:`MAX_CATEGORY`);
- the tree count is a whole number of rounds of ``groups x num_parallel_tree`` trees,
  ``groups`` being ``num_class`` for a multiclass objective, ``num_target`` otherwise;
- every setting string comes from a table: the objective (:data:`OBJECTIVES`), its
  parameter blocks and their keys, feature types (:data:`FEATURE_TYPES`), category
  value types (:data:`CATEGORY_TYPES`); numbers written as strings match
  :data:`NUMBER`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from aprender import _budget, _limits
from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.trees._structure import Layout, check_children, check_offsets

__all__ = ["CATEGORY_TYPES", "FEATURE_TYPES", "MAX_CATEGORY", "NODE_ARRAYS", "NUMBER", "OBJECTIVES", "PER_TREE",
           "UNBACKED_COUNTS", "check_booster", "groups_of"]

#: Node array -> its dtype, as XGBoost's JSON model holds it (floats are float32 in XGBoost).
NODE_ARRAYS: dict[str, np.dtype] = {
    "left_children": np.dtype(np.int32), "right_children": np.dtype(np.int32),
    "split_indices": np.dtype(np.int32), "split_conditions": np.dtype(np.float32),
    "default_left": np.dtype(np.uint8), "split_type": np.dtype(np.uint8),
    "base_weights": np.dtype(np.float32), "loss_changes": np.dtype(np.float32),
    "sum_hessian": np.dtype(np.float32),
}
#: Arrays whose every value is finite in a trained tree.
_FINITE = ("split_conditions", "base_weights", "loss_changes", "sum_hessian")
#: Per-tree offsets (``n_trees + 1`` entries) into the packed arrays each one indexes.
PER_TREE: dict[str, str] = {"node_offsets": "left_children", "category_node_offsets": "categories_nodes",
                            "category_offsets": "categories"}
#: Arrays of the categorical splits, each with its dtype.
CATEGORY_ARRAYS: dict[str, np.dtype] = {
    "categories_nodes": np.dtype(np.int32), "categories_segments": np.dtype(np.int64),
    "categories_sizes": np.dtype(np.int64), "categories": np.dtype(np.int32),
}
#: A category code bound when the booster records no categories for the feature: XGBoost
#: allocates a bitset as wide as the largest code of a split.
MAX_CATEGORY = 2**16
#: Count settings that no array of the file backs, each with the bytes per unit that using the model
#: spends, charged to the load budget (:mod:`aprender._budget`). ``feature_names`` and
#: ``feature_types`` may be empty, so a file of a few KB can claim 2**24 features, and XGBoost sizes
#: by ``num_feature`` per prediction (its dense feature vectors, ``pred_contribs`` rows of
#: ``num_feature + 1``), as the wrapper's ``feature_importances_`` does. Measured on a 3-tree booster
#: claiming 2**22 features: a 6-row predict +100 MB (24 bytes per feature), feature_importances_
#: +360 MB in 8 s; at 2**24, pred_contribs asked 400 MB for 6 rows and an ONNX export ran past 40 s.
#: The other counts are backed: ``num_class`` and ``num_target`` by ``base_score`` and the trees,
#: ``num_parallel_tree`` by the trees (tests/test_booster_widths.py).
UNBACKED_COUNTS: dict[str, int] = {"num_feature": 24}
#: XGBoost's feature types: float, integer, indicator, quantitative, categorical.
FEATURE_TYPES = frozenset(["float", "int", "i", "q", "c"])
#: Category value type codes of XGBoost's category recorder -> the numpy dtype of the values.
CATEGORY_TYPES: dict[int, np.dtype] = {9: np.dtype(np.int8), 10: np.dtype(np.uint8), 11: np.dtype(np.int16),
                                       13: np.dtype(np.int32), 15: np.dtype(np.int64)}
#: A number as XGBoost writes one in a setting string: ``1``, ``0.699999988``, ``-1.5E-1``.
NUMBER = re.compile(r"^-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?$")
#: A round number as XGBoost's Python package writes ``best_iteration``.
_ROUND = re.compile(r"[0-9]{1,11}")
#: A float as Python writes one (XGBoost's Python package stores ``best_score`` so).
_FLOAT = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
_VECTOR = re.compile(r"^\[(-?[0-9.eE+-]{1,40})(,-?[0-9.eE+-]{1,40}){0,1023}\]$")
_LAMBDARANK = {"lambdarank_bias_norm": "number", "lambdarank_normalization": "flag",
               "lambdarank_num_pair_per_sample": "number", "lambdarank_pair_method": ("topk", "mean"),
               "lambdarank_score_normalization": "flag", "lambdarank_unbiased": "flag", "ndcg_exp_gain": "flag"}
_REG_LOSS = {"reg_loss_param": {"scale_pos_weight": "number"}}
#: Objective name -> its parameter blocks -> each key's rule ("number", "flag", "vector", or the allowed words).
OBJECTIVES: dict[str, dict[str, dict[str, Any]]] = {
    "reg:squarederror": _REG_LOSS, "reg:squaredlogerror": {}, "reg:logistic": _REG_LOSS,
    "reg:pseudohubererror": {"pseudo_huber_param": {"huber_slope": "number"}}, "reg:absoluteerror": {},
    "reg:quantileerror": {"quantile_loss_param": {"quantile_alpha": "vector"}},
    "reg:gamma": _REG_LOSS, "reg:tweedie": {"tweedie_regression_param": {"tweedie_variance_power": "number"}},
    "binary:logistic": _REG_LOSS, "binary:logitraw": _REG_LOSS, "binary:hinge": {},
    "count:poisson": {"poisson_regression_param": {"max_delta_step": "number"}}, "survival:cox": {},
    "multi:softmax": {"softmax_multiclass_param": {"num_class": "number"}},
    "multi:softprob": {"softmax_multiclass_param": {"num_class": "number"}},
    "rank:ndcg": {"lambdarank_param": _LAMBDARANK}, "rank:pairwise": {"lambdarank_param": _LAMBDARANK},
    "rank:map": {"lambdarank_param": _LAMBDARANK},
}
#: Objectives with one output per class (``num_class`` of at least 2); every other has none.
MULTICLASS = frozenset(["multi:softmax", "multi:softprob"])


def _count(value: Any, name: str, low: int, high: int, path: str) -> int:
    if type(value) is not int or not low <= value <= high:
        raise fail(path, f"'{name}' must be an int from {low} to {high}, found {preview(value, 40)}")
    return value


def groups_of(settings: Mapping[str, Any]) -> int:
    """Trees per round of one parallel tree: the class count of a multiclass booster, its targets otherwise."""
    return max(settings["num_class"], settings["num_target"])


def check_objective(objective: Any, num_class: int, path: str) -> None:
    """The objective is a table entry, its parameter blocks and keys the table's, each value by its rule."""
    if not isinstance(objective, dict) or type(objective.get("name")) is not str:
        raise fail(path, "'objective' must be an object with a 'name'")
    name = objective["name"]
    blocks = OBJECTIVES.get(name)
    if blocks is None:
        raise fail(path, f"objective {preview(name, 60)} is not one of XGBoost's objectives aprender stores "
                         f"({', '.join(sorted(OBJECTIVES))})")
    for block, values in objective.items():
        if block == "name":
            continue
        rules = blocks.get(block)
        if rules is None or not isinstance(values, dict):
            raise fail(path, f"objective {name} has no parameter block {preview(block, 60)}")
        for key, value in values.items():
            rule = rules.get(key)
            if rule is None or type(value) is not str:
                raise fail(path, f"objective {name}: {block} has no string setting {preview(key, 60)}")
            if not _follows(value, rule):
                raise fail(path, f"objective {name}: {block}.{key} is {preview(value, 60)}, which is not {rule}")
    if (name in MULTICLASS) != (num_class >= 2):
        raise fail(path, f"objective {name} does not fit num_class {num_class}")
    declared = objective.get("softmax_multiclass_param", {}).get("num_class")
    if declared is not None and declared != str(num_class):
        raise fail(path, f"objective {name} names {declared} classes, the booster {num_class}")


def _follows(value: str, rule: Any) -> bool:
    if rule == "number":
        return NUMBER.fullmatch(value) is not None and math.isfinite(float(value))
    if rule == "flag":
        return value in ("0", "1")
    if rule == "vector":
        return _VECTOR.fullmatch(value) is not None and all(
            NUMBER.fullmatch(v) is not None and math.isfinite(float(v)) for v in value[1:-1].split(","))
    return value in rule


def check_settings(settings: Mapping[str, Any], path: str) -> None:
    """The booster's counts, names, feature types, attributes and objective."""
    features = _count(settings.get("num_feature"), "num_feature", 1, _limits.MAX_FEATURES, path)
    num_class = _count(settings.get("num_class"), "num_class", 0, _limits.MAX_CLASSES, path)
    num_target = _count(settings.get("num_target"), "num_target", 1, _limits.MAX_OUTPUTS, path)
    _count(settings.get("num_parallel_tree"), "num_parallel_tree", 1, _limits.MAX_WORK_COUNT, path)
    if num_class == 1 or (num_class and num_target != 1):
        raise fail(path, f"num_class {num_class} with num_target {num_target}: a multiclass booster has 2 or "
                         "more classes and one target")
    for name, allowed in (("feature_names", None), ("feature_types", FEATURE_TYPES)):
        values = settings.get(name)
        if not isinstance(values, list) or len(values) not in (0, features) or not all(
                type(v) is str and (allowed is None or v in allowed) for v in values):
            what = f"one of {sorted(allowed)}" if allowed else "a string"
            raise fail(path, f"'{name}' must be empty or list {features} names, each {what}")
    attributes = settings.get("attributes")
    if not isinstance(attributes, dict) or not all(type(v) is str for v in attributes.values()):
        raise fail(path, "'attributes' must map names to strings")
    check_objective(settings.get("objective"), num_class, path)
    for name, per_unit in UNBACKED_COUNTS.items():
        _budget.charge(settings[name] * per_unit, f"XGBoost's buffers for {name} {settings[name]}", path)


def _check_attributes(attributes: Mapping[str, str], rounds: int, path: str) -> None:
    """Early stopping's ``best_iteration`` names a round the booster has; ``best_score`` is a number.

    XGBoost's Python package predicts with the rounds up to ``best_iteration``.
    """
    best = attributes.get("best_iteration")
    if best is not None and not (_ROUND.fullmatch(best) and int(best) < rounds):
        raise fail(path, f"best_iteration {preview(best, 40)} is not one of the booster's {rounds} rounds")
    score = attributes.get("best_score")
    if score is not None and not (len(score) < 40 and _FLOAT.fullmatch(score) and math.isfinite(float(score))):
        raise fail(path, f"best_score {preview(score, 40)} is not a finite number")


def _check_array(packed: Mapping[str, Any], name: str, dtype: np.dtype, path: str) -> np.ndarray:
    array = packed.get(name)
    if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != dtype:
        found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
        raise fail(path, f"'{name}' must be a 1-d {dtype} array, found {found}")
    return array


def _first(mask: np.ndarray) -> int | None:
    return int(np.argmax(mask)) if np.count_nonzero(mask) else None


def check_booster(packed: Mapping[str, Any], settings: Mapping[str, Any], category_counts: list[int],
                  path: str) -> Layout:
    """Apply every rule to a booster read from a file; the layout of its trees.

    ``category_counts`` holds each feature's number of recorded categories (empty when
    the booster records none).
    """
    check_settings(settings, path)
    features = settings["num_feature"]
    per_round = groups_of(settings) * settings["num_parallel_tree"]
    arrays = {name: _check_array(packed, name, dtype, path) for name, dtype in {**NODE_ARRAYS,
                                                                               **CATEGORY_ARRAYS}.items()}
    n_nodes = arrays["left_children"].shape[0]
    for name in NODE_ARRAYS:
        if arrays[name].shape[0] != n_nodes:
            raise fail(path, f"'{name}' has {arrays[name].shape[0]} entries, 'left_children' has {n_nodes}")
    n_trees = packed.get("node_offsets").shape[0] - 1 if isinstance(packed.get("node_offsets"), np.ndarray) else -1
    if n_trees <= 0 or n_trees % per_round:  # a fit grows at least one round
        raise fail(path, f"{max(n_trees, 0)} trees are not one or more whole rounds of {per_round} trees "
                         f"({groups_of(settings)} outputs x {settings['num_parallel_tree']} parallel trees)")
    offsets = {name: check_offsets(packed.get(name), n_trees, arrays[of].shape[0], path, name,
                                   empty_ok=name != "node_offsets") for name, of in PER_TREE.items()}
    layout = Layout(offsets["node_offsets"], (n_trees,))
    internal = _check_nodes(layout, arrays, features, path)
    _check_categories(layout, arrays, offsets, internal, settings, category_counts, path)
    _check_attributes(settings["attributes"], n_trees // per_round, path)
    base_score = packed.get("base_score")
    groups = groups_of(settings)
    if not isinstance(base_score, np.ndarray) or base_score.dtype != np.float32 or base_score.shape != (groups,) \
            or not np.isfinite(base_score).all():
        raise fail(path, f"'base_score' must be {groups} finite float32 values, one per output")
    return layout


def _check_nodes(layout: Layout, arrays: Mapping[str, np.ndarray], features: int, path: str) -> np.ndarray:
    """Leaves, children, features and finite values of every node; the mask of internal nodes."""
    left, right = arrays["left_children"], arrays["right_children"]
    leaf = left == -1
    i = _first(leaf != (right == -1))
    if i is not None:
        raise fail(path, f"{layout.node(i)}: left child {left[i]} and right child {right[i]} disagree on "
                         "whether it is a leaf (a leaf has both -1)")
    internal = ~leaf
    check_children(layout, internal, {"left_children": left, "right_children": right}, path)
    feature, kind = arrays["split_indices"], arrays["split_type"]
    i = _first(np.where(leaf, feature != 0, feature.view(np.uint32) >= features))
    if i is not None:
        rule = "a leaf's is 0" if leaf[i] else f"it must be below num_feature {features}"
        raise fail(path, f"{layout.node(i)}: split index {feature[i]} is wrong ({rule})")
    i = _first((kind > 1) | (leaf & (kind != 0)) | (arrays["default_left"] > 1))
    if i is not None:
        raise fail(path, f"{layout.node(i)}: split type {kind[i]} / default_left {arrays['default_left'][i]} "
                         "(split type is 0 numerical or 1 categorical, 0 for a leaf; default_left is 0 or 1)")
    for name in _FINITE:
        i = _first(~np.isfinite(arrays[name]))
        if i is not None:
            raise fail(path, f"{layout.node(i)}: {name} is {arrays[name][i]}, not a finite number")
    return internal


def _check_categories(layout: Layout, arrays: Mapping[str, np.ndarray], offsets: Mapping[str, np.ndarray],
                      internal: np.ndarray, settings: Mapping[str, Any], category_counts: list[int],
                      path: str) -> None:
    """Each tree's categorical nodes, their segments and their categories."""
    nodes, segments, sizes = arrays["categories_nodes"], arrays["categories_segments"], arrays["categories_sizes"]
    if segments.shape != nodes.shape or sizes.shape != nodes.shape:
        raise fail(path, "'categories_segments' and 'categories_sizes' need one entry per categorical node")
    types = settings["feature_types"]
    # XGBoost re-codes a request's pandas categories by the recorder, feature by feature: categories
    # recorded for a feature that is not categorical make every DataFrame prediction fail.
    wrong = [f for f, count in enumerate(category_counts) if count and (not types or types[f] != "c")]
    if wrong:
        raise fail(path, f"feature {wrong[0]} has recorded categories but is not of type 'c'")
    categorical = internal & (arrays["split_type"] == 1)
    node_offsets, cat_node_offsets, cat_offsets = (offsets[k] for k in PER_TREE)
    # Only trees with a categorical node or a category entry have anything to check.
    touched = (np.diff(cat_node_offsets) > 0) | (np.diff(cat_offsets) > 0)
    touched |= np.add.reduceat(categorical.astype(np.int64), node_offsets[:-1]) > 0
    bitset_bytes = 0
    for t in np.flatnonzero(touched).tolist():
        begin, end = int(node_offsets[t]), int(node_offsets[t + 1])
        own = slice(cat_node_offsets[t], cat_node_offsets[t + 1])
        seg = _check_segments(t, nodes[own], np.flatnonzero(categorical[begin:end]), segments[own], sizes[own],
                              int(cat_offsets[t + 1] - cat_offsets[t]), path)
        own_categories = arrays["categories"][cat_offsets[t]:cat_offsets[t + 1]]
        for node, start, count in seg:
            values = own_categories[start:start + count]
            feature = int(arrays["split_indices"][begin + node])
            _check_node_categories(t, node, feature, values, types, category_counts, path)
            bitset_bytes += int(values[-1]) // 8 + 8 if values.size else 0
    # XGBoost turns each node's categories into a bitset as wide as its largest code.
    _budget.charge(bitset_bytes, "XGBoost category bitsets", path)


def _check_segments(t: int, own: np.ndarray, expected: np.ndarray, seg: np.ndarray, size: np.ndarray, total: int,
                    path: str) -> Iterator[tuple[int, int, int]]:
    """Tree ``t``'s categories_nodes are its categorical nodes and its segments tile its ``total`` categories.

    Returns ``(node, start, count)`` for each categorical node.
    """
    if own.shape != expected.shape or (own != expected).any():
        raise fail(path, f"tree {t}: categories_nodes {preview(own.tolist())} are not its categorical "
                         f"nodes {preview(expected.tolist())}")
    # Sizes inside [0, total] first: their sum then cannot wrap around int64.
    if (size < 0).any() or (size > total).any():
        raise fail(path, f"tree {t}: categories_sizes {preview(size.tolist())} must lie in [0, {total}]")
    ends = np.cumsum(size)
    if (seg != ends - size).any() or (ends[-1] if ends.size else 0) != total:
        raise fail(path, f"tree {t}: categories_segments and categories_sizes do not tile its {total} categories")
    return zip(own.tolist(), seg.tolist(), size.tolist(), strict=True)


def _check_node_categories(t: int, node: int, feature: int, values: np.ndarray, types: Any,
                           category_counts: list[int], path: str) -> None:
    """A categorical node splits a feature of type 'c' on increasing codes below its category count."""
    if not types or types[feature] != "c":
        raise fail(path, f"tree {t} node {node}: a categorical split on feature {feature}, which is not "
                         "of type 'c'")
    bound = category_counts[feature] if category_counts else MAX_CATEGORY
    if values.size and (values[0] < 0 or values[-1] >= bound or (np.diff(values) <= 0).any()):
        raise fail(path, f"tree {t} node {node}: categories {preview(values.tolist())} must increase and "
                         f"lie in [0, {bound})")
