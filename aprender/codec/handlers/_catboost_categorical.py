"""A CatBoost model's categorical features: from its JSON dump to the arrays of
:mod:`aprender.codec.schemas._catboost_ctrs` at save, and from the checked arrays back to
the parts of a CatBoost JSON model at load.

Saving reads the dump's ``features_info.categorical_features``, ``features_info.ctrs``,
``ctr_data`` and every split's ``split_index`` (its number among the model's binary
features), and refuses what it cannot store exactly: a CTR type outside
:data:`~aprender.codec.schemas._catboost_ctrs.CTR_TYPES`, a split whose fields disagree
with its number. Loading writes those parts again from checked arrays only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aprender.codec.schemas._catboost_ctrs import (
    CTR_TYPES,
    ELEMENT_KINDS,
    SPLIT_KINDS,
    binary_feature_index,
    table_counts_offsets,
)

__all__ = ["categorical_arrays", "categorical_json", "is_categorical"]

Refuse = Callable[[str], Exception]
_CAT_KEYS = frozenset({"feature_id", "feature_index", "flat_feature_index", "values"})


def is_categorical(dump: Mapping[str, Any]) -> bool:
    """Whether the dump's model has categorical features (and so CTRs, one-hot splits or both)."""
    return bool(dump["features_info"].get("categorical_features"))


def _offsets(counts: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)


def _element(element: Mapping[str, Any], float_borders: list[np.ndarray], one_hot: list[list[int]],
             refuse: Refuse) -> tuple[int, int, int]:
    """One combination element as (kind code, feature, value index)."""
    kind = element.get("combination_element")
    if kind == "cat_feature_value":
        return 0, int(element["cat_feature_index"]), 0
    if kind == "float_feature":
        f = int(element["float_feature_index"])
        found = np.flatnonzero(float_borders[f] == np.float32(element["border"]))
        if found.size:
            return 1, f, int(found[0])
    elif kind == "cat_feature_exact_value":
        f = int(element["cat_feature_index"])
        if element["value"] in one_hot[f]:
            return 2, f, one_hot[f].index(element["value"])
    raise refuse(f"a CTR combination element {element} is not one aprender can store (kinds {list(ELEMENT_KINDS)}, "
                 "with a border or value the model lists)")


def _tables(ctr_data: Mapping[str, Any], float_borders: list[np.ndarray], one_hot: list[list[int]],
            refuse: Refuse) -> tuple[dict[str, np.ndarray], list[str]]:
    kinds, strides, denominators, key_counts, keys, counts = [], [], [], [], [], []
    elements: list[tuple[int, int, int]] = []
    element_counts, names = [], []
    for name, table in ctr_data.items():
        base = json.loads(name)
        if base["type"] not in CTR_TYPES:
            raise refuse(f"its {base['type']} CTRs are not stored: aprender stores CTR types {list(CTR_TYPES)}")
        stride, flat = int(table["hash_stride"]), table["hash_map"]
        rows = len(flat) // stride
        kinds.append(CTR_TYPES.index(base["type"]))
        strides.append(stride)
        denominators.append(int(table["counter_denominator"]))
        key_counts.append(rows)
        # In CatBoost's order: its hash index gives the key 2**64 - 1 (its empty-bucket mark, and a key of the
        # table) a bucket by the order the keys arrive in.
        keys.extend(int(k) for k in flat[::stride])
        counts.extend(v for r in range(rows) for v in flat[r * stride + 1:(r + 1) * stride])
        mine = [_element(e, float_borders, one_hot, refuse) for e in base["identifier"]]
        elements.extend(mine)
        element_counts.append(len(mine))
        names.append(name)
    kind, feature, value = (np.array([e[i] for e in elements], dtype=dtype)
                            for i, dtype in enumerate((np.int8, np.int32, np.int32)))
    return {
        "table_type": np.array(kinds, dtype=np.int8), "table_stride": np.array(strides, dtype=np.int32),
        "table_denominator": np.array(denominators, dtype=np.int64), "table_offsets": _offsets(key_counts),
        "table_keys": np.array(keys, dtype=np.uint64), "table_counts": np.array(counts, dtype=np.int64),
        "element_offsets": _offsets(element_counts), "element_kind": kind, "element_feature": feature,
        "element_value": value,
    }, names


def _ctrs(ctrs: list[Mapping[str, Any]], names: list[str], refuse: Refuse) -> dict[str, np.ndarray]:
    tables, borders = [], []
    for ctr in ctrs:
        if ctr["identifier"] not in names:
            raise refuse("a CTR has no hash table in the dump's ctr_data")
        tables.append(names.index(ctr["identifier"]))
        borders.append(np.asarray(ctr["borders"], dtype=np.float32))
    return {
        "ctr_table": np.array(tables, dtype=np.int32),
        "ctr_target_border": np.array([c["target_border_idx"] for c in ctrs], dtype=np.int32),
        **{f"ctr_{name}": np.array([c[key] for c in ctrs], dtype=np.float32)
           for name, key in (("prior_numerator", "prior_numerator"), ("prior_denominator", "prior_denomerator"),
                             ("shift", "shift"), ("scale", "scale"))},
        "ctr_border_offsets": _offsets([b.shape[0] for b in borders]),
        "ctr_borders": np.concatenate([np.zeros(0, np.float32), *borders]),
    }


def _splits(trees: list, arrays: dict[str, np.ndarray], float_offsets: np.ndarray, refuse: Refuse
            ) -> dict[str, np.ndarray]:
    """Each split's kind, feature (float, categorical or CTR) and value index, from its number among the binary
    features; the split's own fields must say the same."""
    splits = [split for tree in trees for split in tree.get("splits") or []]
    number = np.array([s["split_index"] for s in splits], dtype=np.int64)
    starts = [0, int(float_offsets[-1]), int(float_offsets[-1] + arrays["one_hot_offsets"][-1])]
    offsets = [float_offsets, arrays["one_hot_offsets"], arrays["ctr_border_offsets"]]
    kind = (np.searchsorted(starts, number, side="right") - 1).astype(np.int8)
    feature, border = np.zeros(number.shape[0], np.int32), np.zeros(number.shape[0], np.int32)
    for code in range(len(SPLIT_KINDS)):
        mine = kind == code
        local = number[mine] - starts[code]
        feature[mine] = np.searchsorted(offsets[code], local, side="right") - 1
        border[mine] = local - offsets[code][feature[mine]]
    out = {"split_kind": kind, "split_feature": feature, "split_border": border,
           "tree_depths": np.array([len(tree.get("splits") or []) for tree in trees], dtype=np.int32)}
    if number.size and (number.max() >= starts[2] + arrays["ctr_border_offsets"][-1] or not np.array_equal(
            binary_feature_index({**arrays, **out}, float_offsets), number)):
        raise refuse("a split's split_index is not one of the model's binary features")
    for i, split in enumerate(splits):
        if split["split_type"] != SPLIT_KINDS[kind[i]] or _split_json(out, i, arrays, float_offsets) != {
                k: v for k, v in split.items() if k not in ("split_index", "split_type")}:
            raise refuse(f"split {i} ({split['split_type']}) does not say what its split_index names")
    return out


def _split_json(splits: Mapping[str, np.ndarray], i: int, a: Mapping[str, np.ndarray], float_offsets: np.ndarray
                ) -> dict[str, Any]:
    """Split ``i``'s own fields (without its number and kind), from checked arrays."""
    kind, f, b = int(splits["split_kind"][i]), int(splits["split_feature"][i]), int(splits["split_border"][i])
    if kind == 0:
        return {"border": a["borders"][float_offsets[f] + b].item(), "float_feature_index": f}
    if kind == 1:
        return {"cat_feature_index": f, "value": int(a["one_hot_values"][a["one_hot_offsets"][f] + b])}
    return {"border": a["ctr_borders"][a["ctr_border_offsets"][f] + b].item(),
            "ctr_target_border_idx": int(a["ctr_target_border"][f])}


def categorical_arrays(dump: Mapping[str, Any], borders: list[np.ndarray], refuse: Refuse
                       ) -> tuple[dict[str, np.ndarray], list[str]]:
    """The arrays of a categorical model's dump (with its float features' ``borders``), and its categorical
    features' names."""
    info = dump["features_info"]
    cats, floats = info["categorical_features"], info.get("float_features", [])
    for j, cat in enumerate(cats):
        if cat.get("feature_index") != j or not set(cat) <= _CAT_KEYS:
            raise refuse("a categorical feature of this model has a layout aprender does not know "
                         f"(keys {sorted(cat)}, feature_index {cat.get('feature_index')} for feature {j})")
    one_hot = [list(cat.get("values", [])) for cat in cats]
    arrays: dict[str, np.ndarray] = {
        "float_flat_index": np.array([f["flat_feature_index"] for f in floats], dtype=np.int32),
        "cat_flat_index": np.array([c["flat_feature_index"] for c in cats], dtype=np.int32),
        "one_hot_offsets": _offsets([len(v) for v in one_hot]),
        "one_hot_values": np.array([v for values in one_hot for v in values], dtype=np.int32),
        "borders": np.concatenate([np.zeros(0, np.float32), *borders]),
    }
    tables, names = _tables(dump.get("ctr_data", {}), borders, one_hot, refuse)
    arrays.update(tables)
    arrays.update(_ctrs(info.get("ctrs", []), names, refuse))
    float_offsets = _offsets([b.shape[0] for b in borders])
    arrays.update(_splits(dump["oblivious_trees"], arrays, float_offsets, refuse))
    del arrays["borders"]
    return arrays, [str(c.get("feature_id", "")) for c in cats]


def _elements_json(a: Mapping[str, np.ndarray], t: int, float_borders: list[list[float]]) -> list[dict[str, Any]]:
    out = []
    begin, end = int(a["element_offsets"][t]), int(a["element_offsets"][t + 1])
    for kind, f, v in zip(a["element_kind"][begin:end].tolist(), a["element_feature"][begin:end].tolist(),
                          a["element_value"][begin:end].tolist(), strict=True):
        element: dict[str, Any] = {"combination_element": ELEMENT_KINDS[kind]}
        if kind == 1:
            element.update(border=float_borders[f][v], float_feature_index=f)
        else:
            element["cat_feature_index"] = f
            if kind == 2:
                element["value"] = int(a["one_hot_values"][a["one_hot_offsets"][f] + v])
        out.append(element)
    return out


def categorical_json(a: Mapping[str, np.ndarray], cat_ids: list[str], float_borders: list[list[float]],
                     float_offsets: np.ndarray) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """From checked arrays: the ``features_info`` entries for categorical features and CTRs, the ``ctr_data``,
    and every split's JSON (``split_index`` and ``split_type`` included)."""
    one_hot = a["one_hot_offsets"].tolist()
    values = a["one_hot_values"].tolist()
    cats = []
    for j, name in enumerate(cat_ids):
        cat: dict[str, Any] = {"feature_id": name, "feature_index": j,
                               "flat_feature_index": int(a["cat_flat_index"][j])}
        if one_hot[j + 1] > one_hot[j]:
            cat["values"] = values[one_hot[j]:one_hot[j + 1]]
        cats.append(cat)
    identifiers, ctr_data = [], {}
    count_offsets = table_counts_offsets(a).tolist()
    key_offsets, keys, counts = a["table_offsets"].tolist(), a["table_keys"].tolist(), a["table_counts"].tolist()
    for t, kind in enumerate(a["table_type"].tolist()):
        base = {"identifier": _elements_json(a, t, float_borders), "type": CTR_TYPES[kind]}
        identifier = json.dumps(base, sort_keys=True, separators=(",", ":"))
        identifiers.append((identifier, base))
        stride = int(a["table_stride"][t])
        flat: list[Any] = []
        for r in range(key_offsets[t + 1] - key_offsets[t]):
            start = count_offsets[t] + r * (stride - 1)
            flat.append(str(keys[key_offsets[t] + r]))
            flat.extend(counts[start:start + stride - 1])
        ctr_data[identifier] = {"counter_denominator": int(a["table_denominator"][t]), "hash_map": flat,
                                "hash_stride": stride}
    border_offsets, borders = a["ctr_border_offsets"].tolist(), a["ctr_borders"].tolist()
    ctrs = []
    for c, t in enumerate(a["ctr_table"].tolist()):
        identifier, base = identifiers[t]
        ctrs.append({"borders": borders[border_offsets[c]:border_offsets[c + 1]], "ctr_type": base["type"],
                     "elements": base["identifier"], "identifier": identifier,
                     "prior_denomerator": a["ctr_prior_denominator"][c].item(),
                     "prior_numerator": a["ctr_prior_numerator"][c].item(), "scale": a["ctr_scale"][c].item(),
                     "shift": a["ctr_shift"][c].item(), "target_border_idx": int(a["ctr_target_border"][c])})
    number = binary_feature_index(a, float_offsets).tolist()
    kinds = a["split_kind"].tolist()
    splits = [{**_split_json(a, i, a, float_offsets), "split_index": number[i],
               "split_type": SPLIT_KINDS[kinds[i]]} for i in range(len(kinds))]
    info: dict[str, Any] = {"categorical_features": cats}
    if ctrs:
        info["ctrs"] = ctrs
    return info, ctr_data, splits
