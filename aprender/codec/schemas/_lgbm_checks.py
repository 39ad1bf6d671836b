"""The rules a LightGBM booster read from a file must pass before LightGBM sees it.

:data:`RULES` names every rule (docs/threat-model.md lists them, tools/gen_threat_model.py
writes that list, and tests/test_lightgbm_hostile.py breaks each one); :func:`check_model`
applies them, in NumPy passes over the concatenated tree arrays of
:mod:`aprender.codec.schemas._lgbm_text`, and returns the header values and per-tree
offsets :func:`~aprender.codec.schemas._lgbm_text.write_model` writes the model text from.

LightGBM numbers a tree's internal nodes ``0 .. num_leaves - 2`` and its leaves
``0 .. num_leaves - 1``; a child ``c >= 0`` is an internal node, ``c < 0`` the leaf ``~c``.
For the structure check each tree's leaves are numbered after its internal nodes, so the
generic tree check (:func:`aprender.codec.trees._structure.check_children`) proves
that every internal node and every leaf is reached exactly once from the root, with no cycle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender import _limits
from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.schemas._lgbm_text import (
    MULTICLASS,
    TREE_ARRAYS,
    TREE_COUNTS,
    format_feature_info,
    parse_feature_info,
    parse_objective,
)
from aprender.codec.trees._structure import Layout, check_children
from aprender.exceptions import FormatError

__all__ = ["JSON_SPECIALS", "MAX_LEAVES", "RULES", "check_best_iteration", "check_model"]

#: LightGBM's own bound on ``num_leaves``.
MAX_LEAVES = 131072
_MAX_INT32 = 2**31 - 1

#: Rule name -> what it requires. Every rule is enforced by :func:`check_model` (or, for
#: ``best_iteration``, :func:`check_best_iteration`) and broken by a hostile test.
RULES: dict[str, str] = {
    "version": "the model text version is `v4`",
    "header": "`num_class`, `num_tree_per_iteration`, `label_index` and `max_feature_idx` are ints; "
              "`max_feature_idx + 1` features at most `MAX_FEATURES`, `num_class` at most `MAX_CLASSES`",
    "objective": "the objective is a name of the table of LightGBM objectives with only its own options "
                 "(`sqrt`, `sigmoid:` a finite number > 0, `num_class:` the header's)",
    "classes": "multiclass objectives grow `num_class` (>= 2) trees per iteration; every other objective one "
               "tree per iteration and `num_class` 1",
    "features": "`max_feature_idx + 1` printable feature names without spaces or the JSON characters LightGBM "
                "refuses in them (`\",:[]{}`: it writes them unescaped into `dump_model`'s JSON); as many "
                "`feature_infos`, each `none`, "
                "`[min:max]` with finite min <= max, or distinct integer categories from -1 below 2**31",
    "monotone": "`monotone_constraints` absent or one of -1, 0, 1 per feature",
    "dtypes": "every tree array is 1-d of its own dtype (int32 children and features, int8 decision types, "
              "float64 values, uint32 bitset words)",
    "counts": "per tree `num_leaves` in [1, 131072] and `num_cat` in [0, num_leaves - 1]; every array holds "
              "exactly the entries its trees' counts give",
    "tree_count": "the tree count is a positive multiple of `num_tree_per_iteration`",
    "children": "a child >= 0 is an internal node after its parent, < 0 the leaf `~child`; every internal node "
                "and every leaf is reached exactly once from the root",
    "split_feature": "split features are below `max_feature_idx + 1` and not `none`; categorical nodes split "
                     "categorical features, numeric nodes numeric ones",
    "decision_type": "decision types use bit 0 (categorical), bit 1 (default left) and bits 2-3 (missing "
                     "type: 0 none, 1 zero, 2 NaN) only",
    "finite": "thresholds, leaf values, gains, weights, internal values and shrinkage are finite; leaf and "
              "internal counts in [0, 2**31)",
    "categorical": "a categorical node's threshold is the index of its bitset: a tree's categorical nodes use "
                   "0 .. num_cat - 1, each once",
    "bitsets": "each tree's `cat_boundaries` start at 0 and increase; a bitset has no more words than its "
               "feature's largest category needs, and each bit it sets is a category its feature's info lists "
               "(as every fit's: LightGBM builds a split's bitset from the categories it binned)",
    "best_iteration": "`best_iteration` in [-1, iterations]",
    "pandas_categorical": "null, or at most one list per feature of strings, ints, finite floats or bools, "
                          "distinct as pandas compares them (1, 1.0 and True are one category)",
}


def _broken(path: str, rule: str, message: str) -> Exception:
    return fail(path, f"LightGBM rule '{rule}': {message}")


def _int(header: Mapping[str, Any], key: str, low: int, high: int, path: str) -> int:
    value = header.get(key)
    if type(value) is not int or not low <= value <= high:
        raise _broken(path, "header", f"'{key}' must be an int in [{low}, {high}], found {preview(value, 40)}")
    return value


def _check_header(header: Mapping[str, Any], path: str) -> tuple[dict[str, Any], list]:
    """The checked header values (objective parsed, feature infos rewritten) and the parsed feature infos."""
    if header.get("version") != "v4":
        raise _broken(path, "version", f"version must be 'v4', found {preview(header.get('version'), 40)}")
    out: dict[str, Any] = {"version": "v4"}
    out["num_class"] = _int(header, "num_class", 1, _limits.MAX_CLASSES, path)
    out["num_tree_per_iteration"] = _int(header, "num_tree_per_iteration", 1, _limits.MAX_CLASSES, path)
    out["label_index"] = _int(header, "label_index", 0, _MAX_INT32, path)
    out["max_feature_idx"] = _int(header, "max_feature_idx", 0, _limits.MAX_FEATURES - 1, path)
    n_features = out["max_feature_idx"] + 1
    out["objective"] = _check_objective(header.get("objective"), out["num_class"], path)
    _check_classes(out["objective"][0], out["num_class"], out["num_tree_per_iteration"], path)
    if type(header.get("average_output")) is not bool:
        raise _broken(path, "header", "'average_output' must be a bool")
    out["average_output"] = header["average_output"]
    out["feature_names"] = _check_feature_names(header.get("feature_names"), n_features, path)
    parsed_infos = _check_feature_infos(header.get("feature_infos"), n_features, path)
    out["feature_infos"] = [format_feature_info(info) for info in parsed_infos]
    monotone = header.get("monotone_constraints")
    if monotone is not None and (not isinstance(monotone, list) or len(monotone) != n_features
                                 or not all(type(m) is int and m in (-1, 0, 1) for m in monotone)):
        raise _broken(path, "monotone", f"monotone_constraints must be null or {n_features} of -1, 0, 1")
    out["monotone_constraints"] = monotone
    out["pandas_categorical"] = _check_pandas_categorical(header.get("pandas_categorical"), n_features, path)
    return out, parsed_infos


def _check_objective(objective: Any, num_class: int, path: str) -> tuple[str, dict[str, Any]]:
    """The parsed objective: a known name whose options fit the header's ``num_class``."""
    parsed = parse_objective(objective) if type(objective) is str else None
    if parsed is None:
        raise _broken(path, "objective", f"unknown objective {preview(objective, 60)}")
    options = parsed[1]
    sigmoid = options.get("sigmoid", 1.0)
    if not (math.isfinite(sigmoid) and sigmoid > 0) or options.get("num_class", num_class) != num_class:
        raise _broken(path, "objective", f"objective options {preview(objective, 60)} do not fit the model")
    return parsed


def _check_classes(name: str, num_class: int, num_tree_per_iteration: int, path: str) -> None:
    multi = name in MULTICLASS
    per_iteration = num_class if multi else 1
    if (multi and num_class < 2) or (not multi and num_class != 1) or num_tree_per_iteration != per_iteration:
        raise _broken(path, "classes", f"objective {name} with num_class {num_class} grows "
                                       f"{per_iteration} trees per iteration, the header says "
                                       f"{num_tree_per_iteration}")


#: Characters LightGBM refuses in a feature name when it fits (``CheckAllowedJSON``): it writes the names
#: unescaped into the JSON of ``dump_model``, which the ONNX converter and aprender's export probe read;
#: a name holding them rewrote that JSON (a name ``a"b`` broke it, one with ``"],"tree_info":[`` could
#: replace the trees the converter sees).
JSON_SPECIALS = frozenset('",:[]{}')


def _check_feature_names(names: Any, n_features: int, path: str) -> list[str]:
    if not isinstance(names, list) or len(names) != n_features or not all(
            type(n) is str and n and n.isprintable() and " " not in n and not JSON_SPECIALS & set(n) for n in names):
        # The names are written space-separated on one line of the model text, as a C string.
        raise _broken(path, "features", f"feature_names must be {n_features} printable names without spaces "
                                        f"or any of {''.join(sorted(JSON_SPECIALS))}")
    return list(names)


def _check_feature_infos(infos: Any, n_features: int, path: str) -> list:
    """Each feature info parsed: ``None``, a ``(min, max)`` range or a list of categories."""
    if not isinstance(infos, list) or len(infos) != n_features:
        raise _broken(path, "features", f"feature_infos must have {n_features} entries")
    return [_check_feature_info(i, text, path) for i, text in enumerate(infos)]


def _check_feature_info(i: int, text: Any, path: str) -> Any:
    try:
        info = parse_feature_info(text) if type(text) is str else None
        if type(text) is not str:
            raise ValueError("not a string")
    except ValueError:
        raise _broken(path, "features", f"feature_infos[{i}] is {preview(text, 40)}") from None
    if isinstance(info, tuple) and not (math.isfinite(info[0]) and math.isfinite(info[1]) and info[0] <= info[1]):
        raise _broken(path, "features", f"feature_infos[{i}] range {text[:60]!r} is not finite min <= max")
    if isinstance(info, list) and (len(set(info)) != len(info) or min(info) < -1 or max(info) > _MAX_INT32):
        raise _broken(path, "features", f"feature_infos[{i}] categories must be distinct, in [-1, 2**31)")
    return info


_CATEGORY_TYPES = (str, int, float, bool)


def _check_pandas_categorical(value: Any, n_features: int, path: str) -> list | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > n_features:
        raise _broken(path, "pandas_categorical", f"must be null or at most {n_features} lists")
    for i, categories in enumerate(value):
        ok = isinstance(categories, list) and all(
            type(c) in _CATEGORY_TYPES and (type(c) is not float or math.isfinite(c)) for c in categories)
        # Distinct as pandas sees them (1, 1.0 and True are one category): LightGBM's predict makes a
        # pandas Categorical of each list, which refuses repeats on every DataFrame prediction.
        if not ok or len(set(categories)) != len(categories):
            raise _broken(path, "pandas_categorical", f"entry {i} must be a list of distinct strings, ints, "
                                                      "finite floats or bools")
    return value


def _offsets(per_tree: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(per_tree, dtype=np.int64)])


def _check_arrays(arrays: Mapping[str, Any], path: str) -> dict[str, np.ndarray]:
    """Dtypes, per-tree counts and array lengths; the offsets of each kind of entry."""
    for name, dtype in {**TREE_COUNTS, **{k: d for k, (d, _) in TREE_ARRAYS.items()}}.items():
        array = arrays.get(name)
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != dtype:
            found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise _broken(path, "dtypes", f"'{name}' must be a 1-d {dtype} array, found {found}")
    num_leaves, num_cat = arrays["num_leaves"], arrays["num_cat"]
    n_trees = num_leaves.shape[0]
    if num_cat.shape[0] != n_trees or arrays["shrinkage"].shape[0] != n_trees:
        raise _broken(path, "counts", f"num_leaves, num_cat and shrinkage must have one entry per tree ({n_trees})")
    bad = (num_leaves < 1) | (num_leaves > MAX_LEAVES) | (num_cat < 0) | (num_cat >= num_leaves)
    if np.count_nonzero(bad):
        t = int(np.argmax(bad))
        raise _broken(path, "counts", f"tree {t}: num_leaves {num_leaves[t]} must be in [1, {MAX_LEAVES}] and "
                                      f"num_cat {num_cat[t]} in [0, num_leaves - 1]")
    leaves = num_leaves.astype(np.int64)
    offsets = {"node": _offsets(leaves - 1), "leaf": _offsets(leaves),
               "cat": _offsets(np.where(num_cat > 0, num_cat.astype(np.int64) + 1, 0))}
    for name, (_, per) in TREE_ARRAYS.items():
        if per != "word" and arrays[name].shape[0] != offsets[per][-1]:
            raise _broken(path, "counts", f"'{name}' has {arrays[name].shape[0]} entries, the trees' counts "
                                          f"give {int(offsets[per][-1])}")
    return offsets


def _check_bitset_offsets(arrays: Mapping[str, np.ndarray], offsets: dict[str, np.ndarray], path: str) -> None:
    """Each tree's cat_boundaries start at 0 and increase; set the ``word`` offsets."""
    boundaries, cat = arrays["cat_boundaries"].astype(np.int64), offsets["cat"]
    with_cats = (cat[1:] > cat[:-1]).nonzero()[0]
    firsts, lasts = cat[:-1][with_cats], cat[1:][with_cats] - 1
    steps = np.diff(boundaries)
    # A step inside a tree (not from one tree's last boundary to the next tree's first) must be positive.
    inside = np.ones(steps.shape[0], dtype=bool)
    inside[lasts[:-1]] = False
    if np.count_nonzero(boundaries[firsts] != 0) or np.count_nonzero(inside & (steps <= 0)):
        raise _broken(path, "bitsets", "every tree's cat_boundaries must start at 0 and increase")
    words = np.zeros(cat.shape[0] - 1, dtype=np.int64)
    words[with_cats] = boundaries[lasts]
    offsets["word"] = _offsets(words)
    if arrays["cat_threshold"].shape[0] != offsets["word"][-1]:
        raise _broken(path, "counts", f"'cat_threshold' has {arrays['cat_threshold'].shape[0]} words, the trees' "
                                      f"cat_boundaries give {int(offsets['word'][-1])}")


def _check_children(arrays: Mapping[str, np.ndarray], offsets: dict[str, np.ndarray], path: str) -> None:
    leaves = arrays["num_leaves"].astype(np.int64)
    unified = _offsets(2 * leaves - 1)  # internal nodes, then leaves, of each tree
    layout = Layout(unified, (leaves.shape[0],))
    sizes_internal = leaves - 1
    # Position of each internal node in the unified numbering.
    position = np.arange(offsets["node"][-1], dtype=np.int64)
    position += np.repeat(unified[:-1] - offsets["node"][:-1], sizes_internal)
    first_leaf = np.repeat(sizes_internal, sizes_internal)
    internal = np.zeros(int(unified[-1]), dtype=bool)
    internal[position] = True
    children = {}
    for name in ("left_child", "right_child"):
        child = arrays[name].astype(np.int64)
        full = np.zeros(int(unified[-1]), dtype=np.int64)
        full[position] = np.where(child >= 0, child, first_leaf + ~child)
        children[name] = full
    try:
        check_children(layout, internal, children, path)
    except FormatError as exc:
        raise _broken(path, "children", f"{exc} (leaves are numbered after the internal nodes)") from None


def _check_nodes(arrays: Mapping[str, np.ndarray], offsets: dict[str, np.ndarray], infos: list, path: str) -> None:
    n_features = len(infos)
    kind = np.array([0 if i is None else 1 if isinstance(i, tuple) else 2 for i in infos], dtype=np.int8)
    decision, feature = arrays["decision_type"], arrays["split_feature"]
    bad = (decision.view(np.uint8) & 0xF0 != 0) | ((decision >> 2) & 3 == 3)
    if np.count_nonzero(bad):
        i = int(np.argmax(bad))
        raise _broken(path, "decision_type", f"node {i} has decision_type {decision[i]}")
    if np.count_nonzero(feature.view(np.uint32) >= n_features):
        i = int(np.argmax(feature.view(np.uint32) >= n_features))
        raise _broken(path, "split_feature", f"node {i} splits feature {feature[i]}, outside [0, {n_features})")
    categorical = (decision & 1).astype(bool)
    wrong = kind[feature] != np.where(categorical, 2, 1)
    if np.count_nonzero(wrong):
        i = int(np.argmax(wrong))
        raise _broken(path, "split_feature", f"node {i} ({'categorical' if categorical[i] else 'numeric'}) "
                                             f"splits feature {feature[i]}, whose info is {infos[feature[i]]!r:.40}")
    for name in ("leaf_value", "leaf_weight", "split_gain", "internal_value", "internal_weight", "shrinkage"):
        if not np.isfinite(arrays[name]).all():
            raise _broken(path, "finite", f"'{name}' holds a non-finite value")
    threshold = arrays["threshold"]
    if not np.isfinite(threshold[~categorical]).all():
        raise _broken(path, "finite", "a numeric node's threshold is not finite")
    for name in ("leaf_count", "internal_count"):
        counts = arrays[name]
        if np.count_nonzero((counts < 0) | (counts > _MAX_INT32)):
            raise _broken(path, "finite", f"'{name}' holds a count outside [0, 2**31)")
    _check_categorical(arrays, offsets, categorical, infos, path)


def _check_categorical(arrays: Mapping[str, np.ndarray], offsets: dict[str, np.ndarray], categorical: np.ndarray,
                       infos: list, path: str) -> None:
    nodes = categorical.nonzero()[0]
    tree = np.searchsorted(offsets["node"], nodes, side="right") - 1
    index = arrays["threshold"][nodes]
    num_cat = arrays["num_cat"].astype(np.int64)
    whole = np.isfinite(index) & (index == np.floor(index))
    if np.count_nonzero(~whole | (index < 0) | (index >= np.where(whole, num_cat[tree], 0))):
        raise _broken(path, "categorical", "a categorical node's threshold is not a bitset index of its tree")
    used = np.bincount(tree, minlength=num_cat.shape[0])
    seen = np.unique(offsets["cat"][tree] + index.astype(np.int64)).shape[0]
    if not np.array_equal(used, num_cat) or seen != nodes.shape[0]:
        raise _broken(path, "categorical", "a tree's categorical nodes must use its bitsets 0 .. num_cat - 1 once each")
    boundaries, words = arrays["cat_boundaries"].astype(np.int64), arrays["cat_threshold"]
    features = arrays["split_feature"][nodes]
    for node, t, k, f in zip(nodes.tolist(), tree.tolist(), index.astype(np.int64).tolist(), features.tolist(),
                             strict=True):
        base = offsets["cat"][t] + k
        begin = offsets["word"][t] + boundaries[base]
        end = offsets["word"][t] + boundaries[base + 1]
        largest = max(infos[f])
        bitset = words[begin:end]
        if largest < 0 or bitset.shape[0] > largest // 32 + 1:
            raise _broken(path, "bitsets", f"node {node}: its bitset of {bitset.shape[0]} words reaches past "
                                           f"category {largest}, the largest of feature {f}")
        # A bit nothing was binned to costs LightGBM nothing, but every reader that lists a split's
        # categories (dump_model, the ONNX converter's node per category) pays for it: a 400 KB file
        # of full words over the range of 2 listed categories made an ONNX export run for minutes.
        bits = np.flatnonzero(np.unpackbits(bitset.astype("<u4").view(np.uint8), bitorder="little"))
        unlisted = bits[~np.isin(bits, infos[f])]
        if unlisted.size:
            raise _broken(path, "bitsets", f"node {node}: its bitset sets category {int(unlisted[0])}, which "
                                           f"feature {f}'s info does not list")


def check_model(header: Mapping[str, Any], arrays: Mapping[str, Any], path: str
                ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Apply :data:`RULES` to a booster's header values and tree arrays read from a file.

    Returns the header values to write (objective parsed, feature infos rewritten from
    their parsed values) and the offsets of each kind of entry per tree.
    """
    checked, infos = _check_header(header, path)
    offsets = _check_arrays(arrays, path)
    n_trees = arrays["num_leaves"].shape[0]
    per_iteration = checked["num_tree_per_iteration"]
    if n_trees == 0 or n_trees % per_iteration:
        raise _broken(path, "tree_count", f"{n_trees} trees is not a positive multiple of {per_iteration} "
                                          "trees per iteration")
    _check_bitset_offsets(arrays, offsets, path)
    _check_children(arrays, offsets, path)
    _check_nodes(arrays, offsets, infos, path)
    return checked, offsets


def check_best_iteration(value: Any, n_trees: int, per_iteration: int, path: str) -> int:
    """``best_iteration`` is -1 (none), 0 (every iteration) or an iteration of the model."""
    iterations = n_trees // per_iteration
    if type(value) is not int or not -1 <= value <= iterations:
        raise _broken(path, "best_iteration", f"best_iteration must be an int in [-1, {iterations}], "
                                              f"found {preview(value, 40)}")
    return value
