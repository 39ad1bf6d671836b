"""Oblivious (symmetric) decision trees as arrays, and the rules they pass before a library sees them.

An oblivious tree of depth ``d`` asks the same ``d`` questions on every path: split
``i`` tests one float feature against one of that feature's borders and gives bit
``i`` of the leaf index, so the tree has ``2**d`` leaves and no child pointers to
follow (nothing can cycle or be reached twice). What can still go wrong in a file is
a count or an index: a split naming a feature or a border that does not exist, a
leaf count that does not match the depth, a border list out of order (the library
binarizes features by binary search over it), a NaN or infinite value. CatBoost
stores its symmetric trees this way (``aprender.codec.handlers.catboost_booster``).

The arrays, all 1-d and packed over every tree or feature:

- ``borders`` (float32): each float feature's borders, feature after feature;
  ``border_offsets`` (int64, ``n_features + 1``) marks where each feature's start.
- ``nan_treatment`` (int8, per feature): a code of :data:`NAN_TREATMENTS`;
  ``has_nans`` (int8, per feature): 0 or 1.
- ``tree_depths`` (int32, per tree): its number of splits.
- ``split_feature`` (int32, per split) and ``split_border`` (int32, per split: the
  index of the border among its feature's borders), tree after tree. In a model with
  categorical features, ``split_kind`` says which splits test a float feature; the
  others are checked by :mod:`aprender.codec.schemas._catboost_ctrs`.
- ``leaf_values`` (float64, ``sum(2**depth) * dimension``), ``leaf_weights``
  (float64, ``sum(2**depth)``).
- ``scale`` (float64, 1) and ``bias`` (float64, ``dimension``).

Each rule of :data:`RULES` checks one thing and assumes only that the rules before it
passed; tests/test_catboost_hostile.py crafts a file that breaks each rule in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from aprender import _limits
from aprender.codec._checks import fail

__all__ = ["ARRAYS", "MAX_DEPTH", "NAN_TREATMENTS", "RULES", "check_oblivious", "leaf_offsets"]

#: The deepest symmetric tree CatBoost grows (its ``depth`` parameter is at most 16).
MAX_DEPTH = 16
#: What a float feature's NaN compares as, by code (CatBoost's ``nan_value_treatment``).
NAN_TREATMENTS: tuple[str, ...] = ("AsIs", "AsFalse", "AsTrue")
#: Array name -> its dtype. Every one is 1-d.
ARRAYS: dict[str, np.dtype] = {
    "borders": np.dtype(np.float32),
    "border_offsets": np.dtype(np.int64),
    "nan_treatment": np.dtype(np.int8),
    "has_nans": np.dtype(np.int8),
    "tree_depths": np.dtype(np.int32),
    "split_feature": np.dtype(np.int32),
    "split_border": np.dtype(np.int32),
    "leaf_values": np.dtype(np.float64),
    "leaf_weights": np.dtype(np.float64),
    "scale": np.dtype(np.float64),
    "bias": np.dtype(np.float64),
}

Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Rule:
    """One load-time rule: its name (docs/threat-model.md, the hostile tests), what it says, its check."""

    name: str
    says: str
    check: Callable[[Arrays, int, int, str], None]


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _layout(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    for name, dtype in ARRAYS.items():
        array = a.get(name)
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != dtype:
            found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise fail(path, f"'{name}' must be a 1-d {dtype} array, found {found}")
    kind = a.get("split_kind")
    if kind is not None and (not isinstance(kind, np.ndarray) or kind.ndim != 1 or kind.dtype != np.int8):
        raise fail(path, f"'split_kind' must be a 1-d int8 array, found {getattr(kind, 'dtype', type(kind))}")
    low = 0 if kind is not None else 1  # a model of categorical features only has no float feature
    if not low <= n_features <= _limits.MAX_FEATURES:
        raise fail(path, f"'n_features' is {n_features}, must be in [{low}, {_limits.MAX_FEATURES}]")
    if not 1 <= dimension <= _limits.MAX_CLASSES:
        raise fail(path, f"'dimension' is {dimension}, must be in [1, {_limits.MAX_CLASSES}]")
    for name in ("nan_treatment", "has_nans"):
        if a[name].shape[0] != n_features:
            raise fail(path, f"'{name}' has {a[name].shape[0]} entries for {n_features} float features")
    if a["border_offsets"].shape[0] != n_features + 1:
        raise fail(path, f"'border_offsets' has {a['border_offsets'].shape[0]} entries, {n_features} features "
                         f"need {n_features + 1}")
    if a["scale"].shape[0] != 1 or a["bias"].shape[0] != dimension:
        raise fail(path, f"'scale' must hold 1 value and 'bias' {dimension} (the leaf dimension), found "
                         f"{a['scale'].shape[0]} and {a['bias'].shape[0]}")


def _border_offsets(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    offsets = a["border_offsets"]
    if offsets[0] != 0 or offsets[-1] != a["borders"].shape[0]:
        raise fail(path, f"'border_offsets' must run from 0 to the {a['borders'].shape[0]} borders, "
                         f"found {offsets[0]} .. {offsets[-1]}")
    falling = offsets[1:] < offsets[:-1]
    if np.count_nonzero(falling):
        f = _first(falling)
        raise fail(path, f"'border_offsets' decreases at float feature {f}: {offsets[f]} then {offsets[f + 1]}")


def _borders(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    borders, offsets = a["borders"], a["border_offsets"]
    bad = ~np.isfinite(borders)
    if np.count_nonzero(bad):
        raise fail(path, f"border {_first(bad)} is {borders[_first(bad)]}; borders must be finite")
    # Within a feature each border is above the one before; across a feature boundary anything goes.
    rising = borders[1:] > borders[:-1]
    starts = np.zeros(borders.shape[0], dtype=bool)
    starts[offsets[1:-1][offsets[1:-1] < borders.shape[0]]] = True
    wrong = ~rising & ~starts[1:]
    if np.count_nonzero(wrong):
        i = _first(wrong) + 1
        feature = int(np.searchsorted(offsets, i, side="right")) - 1
        raise fail(path, f"the borders of float feature {feature} must rise strictly (they are searched "
                         f"in order): border {i} is {borders[i]} after {borders[i - 1]}")


def _nan_codes(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    codes, has = a["nan_treatment"], a["has_nans"]
    bad = (codes < 0) | (codes >= len(NAN_TREATMENTS))
    if np.count_nonzero(bad):
        f = _first(bad)
        raise fail(path, f"float feature {f}: nan_treatment code {codes[f]} is not one of "
                         f"{dict(enumerate(NAN_TREATMENTS))}")
    bad = (has != 0) & (has != 1)
    if np.count_nonzero(bad):
        raise fail(path, f"float feature {_first(bad)}: has_nans is {has[_first(bad)]}, must be 0 or 1")


def _depths(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    depths = a["tree_depths"]
    bad = (depths < 0) | (depths > MAX_DEPTH)
    if np.count_nonzero(bad):
        t = _first(bad)
        raise fail(path, f"tree {t} has depth {depths[t]}; a symmetric tree's depth is in [0, {MAX_DEPTH}]")
    splits = int(depths.sum(dtype=np.int64))
    for name in ("split_feature", "split_border", *(("split_kind",) if "split_kind" in a else ())):
        if a[name].shape[0] != splits:
            raise fail(path, f"'{name}' has {a[name].shape[0]} entries; the tree depths add up to {splits} splits")


def _float_splits(a: Arrays) -> np.ndarray:
    """Which splits test a float feature: all of them, unless ``split_kind`` (categorical models,
    :mod:`aprender.codec.schemas._catboost_ctrs`, which checks the others) says otherwise."""
    kind = a.get("split_kind")
    return np.ones(a["split_feature"].shape[0], dtype=bool) if kind is None else kind == 0


def _split_features(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    feature = a["split_feature"]
    bad = ((feature < 0) | (feature >= n_features)) & _float_splits(a)
    if np.count_nonzero(bad):
        s = _first(bad)
        raise fail(path, f"split {s} tests float feature {feature[s]}, outside [0, {n_features})")


def _split_borders(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    floats = _float_splits(a)
    feature, border = a["split_feature"], a["split_border"]
    counts = np.diff(a["border_offsets"])[np.where(floats, feature, 0)] if n_features else np.zeros_like(feature)
    bad = ((border < 0) | (border >= counts)) & floats
    if np.count_nonzero(bad):
        s = _first(bad)
        raise fail(path, f"split {s} names border {border[s]} of float feature {feature[s]}, which has "
                         f"{counts[s]} borders")


def leaf_offsets(depths: np.ndarray) -> np.ndarray:
    """Where each tree's leaves start among all leaves (``n_trees + 1`` entries), for checked depths."""
    offsets = np.zeros(depths.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.left_shift(1, depths.astype(np.int64)), out=offsets[1:])
    return offsets


def _leaf_counts(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    leaves = int(leaf_offsets(a["tree_depths"])[-1])
    if a["leaf_weights"].shape[0] != leaves:
        raise fail(path, f"'leaf_weights' has {a['leaf_weights'].shape[0]} entries; trees of these depths have "
                         f"{leaves} leaves (2**depth each)")
    if a["leaf_values"].shape[0] != leaves * dimension:
        raise fail(path, f"'leaf_values' has {a['leaf_values'].shape[0]} entries; {leaves} leaves of dimension "
                         f"{dimension} need {leaves * dimension}")


def _finite_values(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    for name in ("leaf_values", "leaf_weights", "scale", "bias"):
        bad = ~np.isfinite(a[name])
        if np.count_nonzero(bad):
            raise fail(path, f"'{name}'[{_first(bad)}] is {a[name][_first(bad)]}; it must be finite")
    negative = a["leaf_weights"] < 0
    if np.count_nonzero(negative):
        raise fail(path, f"'leaf_weights'[{_first(negative)}] is negative; a leaf's weight is a sum of sample weights")


#: Every rule, in the order they run.
RULES: tuple[Rule, ...] = (
    Rule("layout", "every array is 1-d of its dtype; per-feature arrays and bias have their counts", _layout),
    Rule("border_offsets", "border offsets run from 0 to the border count without decreasing", _border_offsets),
    Rule("borders", "borders are finite and rise strictly within each float feature", _borders),
    Rule("nan_treatment", "NaN treatments are codes of the table; has_nans is 0 or 1", _nan_codes),
    Rule("depths", "tree depths are in [0, 16] and add up to the split count", _depths),
    Rule("split_feature", "each split tests a float feature below the feature count", _split_features),
    Rule("split_border", "each split names one of its feature's borders", _split_borders),
    Rule("leaf_count", "each tree has 2**depth leaves, each of the model's dimension", _leaf_counts),
    Rule("finite", "leaf values, leaf weights, scale and bias are finite; weights are not negative", _finite_values),
)


def check_oblivious(a: Arrays, n_features: int, dimension: int, path: str) -> None:
    """Run every rule of :data:`RULES` over one set of symmetric trees; FormatError on the first one broken."""
    for rule in RULES:
        rule.check(a, n_features, dimension, path)
