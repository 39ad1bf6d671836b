"""CatBoost's categorical features as arrays: one-hot values, CTRs and their hash tables, and the rules they pass.

A CatBoost model fitted with ``cat_features`` splits its symmetric trees on three kinds
of binary features, numbered in one sequence: each float feature's borders, then each
one-hot categorical feature's values (int32 hashes of the categories), then each CTR's
borders. A CTR (target statistic) is computed at predict time from a table of counts
keyed by the uint64 hash of a combination of categorical values (and binarized float
features or one-hot values), with priors, a shift and a scale; its value is compared
with the CTR's borders. CatBoost reads all of it into compiled code that indexes by
those numbers, so each is checked here before CatBoost parses anything.

The arrays, all 1-d (the float-feature and tree arrays are those of
:mod:`aprender.codec.schemas._oblivious`, whose ``split_feature`` and ``split_border``
then mean what ``split_kind`` says):

- ``float_flat_index`` (int32, per float feature) and ``cat_flat_index`` (int32, per
  categorical feature): each feature's column; together a permutation of the columns.
- ``one_hot_values`` (int32) with ``one_hot_offsets`` (int64, ``n_cat + 1``): the
  category hashes a one-hot feature splits on (none for a feature CTRs encode).
- ``table_type`` (int8, per hash table: a code of :data:`CTR_TYPES`),
  ``table_stride`` (int32: 1 key + the counts per key), ``table_denominator`` (int64:
  Counter's denominator), ``table_offsets`` (int64, ``n_tables + 1``: where each
  table's keys start), ``table_keys`` (uint64), ``table_counts`` (int64, ``stride - 1``
  per key, table after table).
- ``element_offsets`` (int64, ``n_tables + 1``) over ``element_kind`` (int8: a code of
  :data:`ELEMENT_KINDS`), ``element_feature`` (int32: the categorical or float feature)
  and ``element_value`` (int32: the float feature's border, or the one-hot feature's
  value, by index; 0 for a categorical value): what each table's keys hash.
- per CTR: ``ctr_table`` (int32), ``ctr_target_border`` (int32), ``ctr_prior_numerator``,
  ``ctr_prior_denominator``, ``ctr_shift``, ``ctr_scale`` (float32), and its borders
  ``ctr_borders`` (float32) with ``ctr_border_offsets`` (int64, ``n_ctrs + 1``).
- ``split_kind`` (int8, per split: a code of :data:`SPLIT_KINDS`).

Each rule of :data:`RULES` checks one thing, assuming only that the rules before it
passed; tests/test_catboost_hostile.py crafts a file that breaks each rule in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from aprender import _limits
from aprender.codec._checks import fail

__all__ = ["ARRAYS", "CTR_TYPES", "ELEMENT_KINDS", "RULES", "SPLIT_KINDS", "Shape", "binary_feature_index",
           "check_categorical", "table_counts_offsets"]

#: The CTR types whose tables aprender stores, by code, and the counts per key each holds
#: ("classes": one per target class, which the model's class count or target borders fix).
CTR_TYPES: tuple[str, ...] = ("Borders", "Buckets", "Counter", "FeatureFreq")
_PER_CLASS = frozenset({"Borders", "Buckets"})
#: What a CTR's combination is made of, by code (CatBoost's ``combination_element``).
ELEMENT_KINDS: tuple[str, ...] = ("cat_feature_value", "float_feature", "cat_feature_exact_value")
#: What a tree split tests, by code (CatBoost's ``split_type``).
SPLIT_KINDS: tuple[str, ...] = ("FloatFeature", "OneHotFeature", "OnlineCtr")
#: CatBoost keeps a table's counts as C ints.
_MAX_COUNT = 2**31 - 1

ARRAYS: dict[str, np.dtype] = {
    "float_flat_index": np.dtype(np.int32),
    "cat_flat_index": np.dtype(np.int32),
    "one_hot_offsets": np.dtype(np.int64),
    "one_hot_values": np.dtype(np.int32),
    "table_type": np.dtype(np.int8),
    "table_stride": np.dtype(np.int32),
    "table_denominator": np.dtype(np.int64),
    "table_offsets": np.dtype(np.int64),
    "table_keys": np.dtype(np.uint64),
    "table_counts": np.dtype(np.int64),
    "element_offsets": np.dtype(np.int64),
    "element_kind": np.dtype(np.int8),
    "element_feature": np.dtype(np.int32),
    "element_value": np.dtype(np.int32),
    "ctr_table": np.dtype(np.int32),
    "ctr_target_border": np.dtype(np.int32),
    "ctr_prior_numerator": np.dtype(np.float32),
    "ctr_prior_denominator": np.dtype(np.float32),
    "ctr_shift": np.dtype(np.float32),
    "ctr_scale": np.dtype(np.float32),
    "ctr_border_offsets": np.dtype(np.int64),
    "ctr_borders": np.dtype(np.float32),
    "split_kind": np.dtype(np.int8),
}

Arrays = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Shape:
    """What the float-feature arrays (already checked) and the metadata fix: counts the rules check against."""

    n_float: int
    float_borders: np.ndarray  # border count per float feature
    n_cat: int
    n_classes: int | None  # a classifier's class count; None for a regressor or ranker
    n_splits: int


@dataclass(frozen=True)
class Rule:
    """One load-time rule: its name (docs/threat-model.md, the hostile tests), what it says, its check."""

    name: str
    says: str
    check: Callable[[Arrays, Shape, str], None]


def _first(mask: np.ndarray) -> int:
    return int(np.argmax(mask))


def _counts(offsets: np.ndarray) -> np.ndarray:
    return np.diff(offsets)


def table_counts_offsets(a: Arrays) -> np.ndarray:
    """Where each table's counts start in ``table_counts`` (``n_tables + 1``), for checked offsets and strides."""
    per_table = _counts(a["table_offsets"]) * (a["table_stride"].astype(np.int64) - 1)
    return np.concatenate([[0], np.cumsum(per_table)]).astype(np.int64)


def binary_feature_index(a: Arrays, float_offsets: np.ndarray) -> np.ndarray:
    """Each split's number among the model's binary features (CatBoost's ``split_index``), for checked arrays:
    float borders first, then one-hot values, then CTR borders."""
    kind, feature, border = a["split_kind"], a["split_feature"].astype(np.int64), a["split_border"].astype(np.int64)
    n_float, n_one_hot = int(float_offsets[-1]), int(a["one_hot_offsets"][-1])
    starts = [float_offsets[:-1], n_float + a["one_hot_offsets"][:-1],
              n_float + n_one_hot + a["ctr_border_offsets"][:-1]]
    index = np.zeros(kind.shape[0], dtype=np.int64)
    for code, start in enumerate(starts):
        mine = kind == code
        index[mine] = start[feature[mine]] + border[mine]
    return index


def _layout(a: Arrays, s: Shape, path: str) -> None:
    for name, dtype in ARRAYS.items():
        array = a.get(name)
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != dtype:
            found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise fail(path, f"'{name}' must be a 1-d {dtype} array, found {found}")
    n_cat, n_tables, n_ctrs = a["cat_flat_index"].shape[0], a["table_type"].shape[0], a["ctr_table"].shape[0]
    if not 1 <= n_cat <= _limits.MAX_FEATURES or n_cat != s.n_cat:
        raise fail(path, f"'cat_flat_index' has {n_cat} entries for {s.n_cat} categorical features")
    sizes = {"float_flat_index": s.n_float, "one_hot_offsets": n_cat + 1, "table_stride": n_tables,
             "table_denominator": n_tables, "table_offsets": n_tables + 1, "element_offsets": n_tables + 1,
             "element_kind": a["element_feature"].shape[0], "element_value": a["element_feature"].shape[0],
             **dict.fromkeys(("ctr_target_border", "ctr_prior_numerator", "ctr_prior_denominator", "ctr_shift",
                              "ctr_scale"), n_ctrs),
             "ctr_border_offsets": n_ctrs + 1, "split_kind": s.n_splits}
    for name, size in sizes.items():
        if a[name].shape[0] != size:
            raise fail(path, f"'{name}' has {a[name].shape[0]} entries, must have {size}")


def _flat_indices(a: Arrays, s: Shape, path: str) -> None:
    flat = np.concatenate([a["float_flat_index"], a["cat_flat_index"]]).astype(np.int64)
    seen = np.zeros(flat.shape[0], dtype=bool)
    inside = (flat >= 0) & (flat < flat.shape[0])
    if not inside.all():
        f = _first(~inside)
        raise fail(path, f"feature {f}'s flat_feature_index {flat[f]} is outside [0, {flat.shape[0]}) "
                         f"({s.n_float} float and {s.n_cat} categorical features)")
    seen[flat] = True
    if not seen.all():
        raise fail(path, f"the flat feature indices are not a permutation of the {flat.shape[0]} columns: "
                         f"column {_first(~seen)} is nobody's")


def _check_offsets(offsets: np.ndarray, total: int, name: str, path: str) -> None:
    """Offsets run from 0 to ``total`` (the length of the array they cut) without falling."""
    if offsets[0] != 0 or offsets[-1] != total:
        raise fail(path, f"'{name}' must run from 0 to {total}, found {offsets[0]} .. {offsets[-1]}")
    falling = offsets[1:] < offsets[:-1]
    if np.count_nonzero(falling):
        raise fail(path, f"'{name}' decreases at entry {_first(falling)}")


def _offsets(a: Arrays, s: Shape, path: str) -> None:
    for name, over in (("one_hot_offsets", "one_hot_values"), ("table_offsets", "table_keys"),
                       ("element_offsets", "element_kind"), ("ctr_border_offsets", "ctr_borders")):
        _check_offsets(a[name], a[over].shape[0], name, path)


def _one_hot(a: Arrays, s: Shape, path: str) -> None:
    values, offsets = a["one_hot_values"], a["one_hot_offsets"]
    feature = np.repeat(np.arange(s.n_cat), _counts(offsets))
    order = np.lexsort((values, feature))
    repeated = (values[order][1:] == values[order][:-1]) & (feature[order][1:] == feature[order][:-1])
    if np.count_nonzero(repeated):
        f = int(feature[order][_first(repeated)])
        raise fail(path, f"categorical feature {f} lists one-hot value {values[order][_first(repeated)]} twice")


def _tables(a: Arrays, s: Shape, path: str) -> None:
    kinds, strides = a["table_type"], a["table_stride"]
    bad = (kinds < 0) | (kinds >= len(CTR_TYPES))
    if np.count_nonzero(bad):
        t = _first(bad)
        raise fail(path, f"hash table {t}: CTR type code {kinds[t]} is not one of {dict(enumerate(CTR_TYPES))}")
    per_class = np.isin(kinds, [CTR_TYPES.index(k) for k in _PER_CLASS])
    # A per-class table counts each target class: a classifier's classes, or the 2 or more classes of a
    # regressor's binarized target; the other tables count one number per key.
    if s.n_classes is not None:
        low = high = s.n_classes + 1
    else:
        low, high = 3, _limits.MAX_CLASSES + 1
    wrong = np.where(per_class, (strides < low) | (strides > high), strides != 2)
    if np.count_nonzero(wrong):
        t = _first(wrong)
        allowed = "2" if not per_class[t] else str(low) if low == high else f"{low} to {high}"
        raise fail(path, f"hash table {t} ({CTR_TYPES[kinds[t]]}) has hash_stride {strides[t]}; such a table of "
                         f"this model has {allowed} (1 key and its counts)")
    bad = (a["table_denominator"] < 0) | (a["table_denominator"] > _MAX_COUNT)
    if np.count_nonzero(bad):
        raise fail(path, f"hash table {_first(bad)}: counter_denominator {a['table_denominator'][_first(bad)]} "
                         f"is outside [0, {_MAX_COUNT}]")
    # Sizes come from the arrays the file holds, never from a count it claims.
    need = int(table_counts_offsets(a)[-1])
    if a["table_counts"].shape[0] != need:
        raise fail(path, f"'table_counts' has {a['table_counts'].shape[0]} entries; the tables' keys and "
                         f"strides need {need}")


def _keys_and_counts(a: Arrays, s: Shape, path: str) -> None:
    counts = a["table_counts"]
    bad = (counts < 0) | (counts > _MAX_COUNT)
    if np.count_nonzero(bad):
        raise fail(path, f"'table_counts'[{_first(bad)}] is {counts[_first(bad)]}; a count is in [0, {_MAX_COUNT}]")
    keys, offsets = a["table_keys"], a["table_offsets"]
    table = np.repeat(np.arange(offsets.shape[0] - 1), _counts(offsets))
    order = np.lexsort((keys, table))
    repeated = (keys[order][1:] == keys[order][:-1]) & (table[order][1:] == table[order][:-1])
    if np.count_nonzero(repeated):
        i = _first(repeated)
        raise fail(path, f"hash table {table[order][i]} lists key {keys[order][i]} twice")


def _elements(a: Arrays, s: Shape, path: str) -> None:
    kind, feature, value = a["element_kind"], a["element_feature"], a["element_value"]
    bad = (kind < 0) | (kind >= len(ELEMENT_KINDS))
    if np.count_nonzero(bad):
        e = _first(bad)
        raise fail(path, f"CTR element {e}: kind code {kind[e]} is not one of {dict(enumerate(ELEMENT_KINDS))}")
    is_float = kind == ELEMENT_KINDS.index("float_feature")
    width = np.where(is_float, s.n_float, s.n_cat)
    bad = (feature < 0) | (feature >= width)
    if np.count_nonzero(bad):
        e = _first(bad)
        raise fail(path, f"CTR element {e} ({ELEMENT_KINDS[kind[e]]}) names feature {feature[e]}, outside "
                         f"[0, {width[e]})")
    safe = np.where(bad, 0, feature)
    one_hot = _counts(a["one_hot_offsets"])
    limit = np.select([is_float, kind == ELEMENT_KINDS.index("cat_feature_exact_value")],
                      [s.float_borders[np.where(is_float, safe, 0)] if s.n_float else 0,
                       one_hot[np.where(is_float, 0, safe)]], 1)
    bad = (value < 0) | (value >= limit)
    if np.count_nonzero(bad):
        e = _first(bad)
        raise fail(path, f"CTR element {e} ({ELEMENT_KINDS[kind[e]]}) names value {value[e]} of feature "
                         f"{feature[e]}, which has {limit[e]}")
    table = np.repeat(np.arange(a["element_offsets"].shape[0] - 1), _counts(a["element_offsets"]))
    has_cat = np.zeros(a["table_type"].shape[0], dtype=bool)
    has_cat[table[kind == 0]] = True
    if not has_cat.all():
        raise fail(path, f"hash table {_first(~has_cat)} combines no categorical feature's values")
    bases = {(int(a["table_type"][t]), tuple(zip(kind[b:e].tolist(), feature[b:e].tolist(), value[b:e].tolist(),
                                                 strict=True)))
             for t, (b, e) in enumerate(zip(a["element_offsets"][:-1].tolist(), a["element_offsets"][1:].tolist(),
                                            strict=True))}
    if len(bases) != a["table_type"].shape[0]:
        raise fail(path, "two hash tables have the same CTR type and combination")


def _ctrs(a: Arrays, s: Shape, path: str) -> None:
    table = a["ctr_table"]
    n_tables = a["table_type"].shape[0]
    bad = (table < 0) | (table >= n_tables)
    if np.count_nonzero(bad):
        c = _first(bad)
        raise fail(path, f"CTR {c} names hash table {table[c]}, outside [0, {n_tables})")
    kinds, classes = a["table_type"][table], a["table_stride"][table].astype(np.int64) - 1
    # Borders compares the class with a border between classes; Buckets counts one class; the others none.
    limit = np.select([kinds == CTR_TYPES.index("Borders"), kinds == CTR_TYPES.index("Buckets")],
                      [classes - 1, classes], 1)
    target = a["ctr_target_border"]
    bad = (target < 0) | (target >= limit)
    if np.count_nonzero(bad):
        c = _first(bad)
        raise fail(path, f"CTR {c} ({CTR_TYPES[kinds[c]]}) has target_border_idx {target[c]}, outside "
                         f"[0, {limit[c]})")
    for name in ("ctr_prior_numerator", "ctr_prior_denominator", "ctr_shift", "ctr_scale", "ctr_borders"):
        bad = ~np.isfinite(a[name])
        if np.count_nonzero(bad):
            raise fail(path, f"'{name}'[{_first(bad)}] is {a[name][_first(bad)]}; it must be finite")
    borders, offsets = a["ctr_borders"], a["ctr_border_offsets"]
    starts = np.zeros(borders.shape[0], dtype=bool)
    starts[offsets[:-1][offsets[:-1] < borders.shape[0]]] = True
    wrong = ~(borders[1:] > borders[:-1]) & ~starts[1:]
    if np.count_nonzero(wrong):
        i = _first(wrong) + 1
        ctr = int(np.searchsorted(offsets, i, side="right")) - 1
        raise fail(path, f"the borders of CTR {ctr} must rise strictly: border {i} is {borders[i]} after "
                         f"{borders[i - 1]}")


def _splits(a: Arrays, s: Shape, path: str) -> None:
    kind, feature, border = a["split_kind"], a["split_feature"], a["split_border"]
    bad = (kind < 0) | (kind >= len(SPLIT_KINDS))
    if np.count_nonzero(bad):
        i = _first(bad)
        raise fail(path, f"split {i}: kind code {kind[i]} is not one of {dict(enumerate(SPLIT_KINDS))}")
    for code, offsets, what in ((1, a["one_hot_offsets"], "categorical feature"),
                                (2, a["ctr_border_offsets"], "CTR")):
        mine = np.flatnonzero(kind == code)
        width = offsets.shape[0] - 1
        outside = (feature[mine] < 0) | (feature[mine] >= width)
        if np.count_nonzero(outside):
            i = int(mine[_first(outside)])
            raise fail(path, f"split {i} ({SPLIT_KINDS[code]}) tests {what} {feature[i]}, outside [0, {width})")
        have = _counts(offsets)[feature[mine]]
        outside = (border[mine] < 0) | (border[mine] >= have)
        if np.count_nonzero(outside):
            i = int(mine[_first(outside)])
            raise fail(path, f"split {i} ({SPLIT_KINDS[code]}) names value {border[i]} of {what} {feature[i]}, "
                             f"which has {have[_first(outside)]}")


#: Every rule, in the order they run.
RULES: tuple[Rule, ...] = (
    Rule("cat_layout", "every categorical array is 1-d of its dtype and has the count its neighbours fix", _layout),
    Rule("flat_index", "float and categorical features' flat indices are a permutation of the columns",
         _flat_indices),
    Rule("cat_offsets", "one-hot, table, element and CTR border offsets run from 0 to their array's length",
         _offsets),
    Rule("one_hot", "a categorical feature lists each one-hot value once", _one_hot),
    Rule("tables", "CTR types are codes of the table; each hash_stride matches the type and class count; "
                   "counts fill the tables exactly", _tables),
    Rule("keys", "counts are in [0, 2**31 - 1]; a hash table lists each key once", _keys_and_counts),
    Rule("elements", "combination kinds are codes of the table; their features and values exist; each table "
                     "combines a categorical feature, and no two tables share a type and combination", _elements),
    Rule("ctrs", "each CTR names a table and a target border its type and class count allow; priors, shift, "
                 "scale and borders are finite, borders rising", _ctrs),
    Rule("split_kind", "split kinds are codes of the table; one-hot and CTR splits name a value or border that "
                       "exists", _splits),
)


def check_categorical(a: Arrays, shape: Shape, path: str) -> None:
    """Run every rule of :data:`RULES`; FormatError on the first one broken."""
    for rule in RULES:
        rule.check(a, shape, path)
