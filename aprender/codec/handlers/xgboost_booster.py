"""XGBoost's ``Booster`` <-> its trees as named arrays, rebuilt through XGBoost's public loader.

Saving reads the booster's documented JSON model (``Booster.save_raw("json")``) and keeps
its trees as packed node arrays (``left_children``, ``split_indices``,
``split_conditions``, ... of all trees concatenated, ``node_offsets`` per tree), the
categories of its categorical splits, and its settings (objective, counts, base score,
feature names and types, attributes such as ``best_iteration``, the categories of each
pandas ``category`` column) as plain JSON. Loading checks everything
(``aprender.codec.schemas._xgb_structure``), then writes the model from the checked
values only, as UBJSON (the binary JSON XGBoost saves and loads, whose typed arrays keep
every float32 exactly), and hands that to ``Booster.load_model``: a file's bytes never reach
XGBoost's parser. What can be derived is not stored: each node's parent, each tree's
group (``tree_info``), the round boundaries, the category recorder's segments and sort
order.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec._optional import require
from aprender.codec.handlers import _booster_json as booster_json
from aprender.codec.handlers._base import NULL, TENSOR, Handler, register_handler, tensor_field
from aprender.codec.handlers._library_version import FIELD, check_version, record_version
from aprender.codec.schemas._xgb_structure import (
    CATEGORY_ARRAYS,
    CATEGORY_TYPES,
    MAX_CATEGORY,
    NODE_ARRAYS,
    PER_TREE,
    check_booster,
    groups_of,
)
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BOOSTER_TENSORS", "XGBOOST_BOOSTER"]

xgboost = require("xgboost")

#: Every tensor of a stored booster.
BOOSTER_TENSORS: tuple[str, ...] = (*NODE_ARRAYS, *CATEGORY_ARRAYS, *PER_TREE, "base_score")
#: The settings stored as JSON, each read back by :func:`check_booster`'s rules.
_SETTINGS = ("num_feature", "num_class", "num_target", "num_parallel_tree", "feature_names", "feature_types",
             "attributes", "objective", "category_values")
_TYPE = "xgboost.core.Booster"
#: XGBoost's parent index of a root node.
_NO_PARENT = 2147483647


# -- save -------------------------------------------------------------------------------


def _encode(booster: Any, enc: Encoding, path: str) -> dict[str, Any]:
    learner = booster_json.loads(booster.save_raw("json"))["learner"]
    gbm = learner["gradient_booster"]
    if gbm["name"] != "gbtree":
        raise UnsupportedTypeError(path, _TYPE, f"booster '{gbm['name']}' is not stored; only 'gbtree' boosters "
                                                "are (their trees are validated as data)")
    model, params = gbm["model"], learner["learner_model_param"]
    trees = model["trees"]
    if any(tree["tree_param"]["size_leaf_vector"] not in ("0", "1") for tree in trees):
        raise UnsupportedTypeError(path, _TYPE, "multi_strategy='multi_output_tree' (vector leaves) is not stored")
    node: dict[str, Any] = {
        "num_feature": int(params["num_feature"]), "num_class": int(params["num_class"]),
        "num_target": int(params["num_target"]),
        "num_parallel_tree": int(model["gbtree_model_param"]["num_parallel_tree"]),
        "feature_names": learner["feature_names"], "feature_types": learner["feature_types"],
        "attributes": learner["attributes"], "objective": learner["objective"],
        "category_values": [_categories_of(entry) for entry in model.get("cats", {}).get("enc", [])],
        **record_version(xgboost),
    }
    cats = model.get("cats", {"enc": [], "feature_segments": [], "sorted_idx": []})
    keys = _category_keys_of(node["category_values"], node["num_feature"], path)
    if _recorder(node["category_values"], keys) != cats:  # the load rebuilds it from the categories alone
        raise UnsupportedTypeError(path, _TYPE, "its category recorder is not the one aprender rebuilds from the "
                                                "categories (an XGBoost whose recorder layout aprender does not know)")
    arrays = _pack(trees)
    arrays["base_score"] = np.array(json.loads(params["base_score"]), dtype=np.float32)
    for name in BOOSTER_TENSORS:
        node[name] = enc.tensor(arrays[name], f"{path}.{name}")
    return node


def _categories_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """One feature of XGBoost's category recorder as stored: None for a feature without categories."""
    if "type" in entry:
        return {"type": entry["type"], "values": list(entry["values"])}
    return {"offsets": list(entry["offsets"]), "values": list(entry["values"])} if entry["offsets"] else None


def _pack(trees: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Concatenate the trees' node and category arrays, with per-tree offsets."""
    # One conversion of all trees' values per array: one per tree and array costs more than the values.
    arrays = {name: np.asarray(list(itertools.chain.from_iterable(t[name] for t in trees)), dtype=dtype)
              for name, dtype in {**NODE_ARRAYS, **CATEGORY_ARRAYS}.items()}
    for name, of in PER_TREE.items():
        source = of if name != "node_offsets" else "left_children"
        counts = [len(t[source]) for t in trees]
        arrays[name] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return arrays


# -- load -------------------------------------------------------------------------------


def _category_keys(entry: Any, f: int, path: str) -> list[Any] | None:
    """Check one feature's recorded categories; the sort key of each (None: the feature has none).

    Strings are XGBoost's: the bytes as signed chars, cut at ``offsets``; they compare as
    tuples of those numbers, the order XGBoost's recorder keeps them in.
    """
    if entry is None:
        return None
    if isinstance(entry, dict) and entry.keys() == {"offsets", "values"}:
        keys = _string_keys(entry["offsets"], entry["values"], f, path)
    elif _is_typed(entry):
        keys = _typed_keys(entry, f, path)
    else:
        raise fail(path, f"feature {f}: categories must be {{'offsets', 'values'}} or {{'type', 'values'}} with a "
                         f"type code of {sorted(CATEGORY_TYPES)}, found {preview(entry)}")
    if len(keys) > MAX_CATEGORY or len(set(keys)) != len(keys):
        raise fail(path, f"feature {f}: categories must be distinct and at most {MAX_CATEGORY}")
    return keys


def _string_keys(offsets: Any, raw: Any, f: int, path: str) -> list[Any]:
    """String categories: signed bytes cut at offsets rising from 0 to their number."""
    if not (isinstance(offsets, list) and isinstance(raw, list) and len(offsets) >= 2 and offsets[0] == 0
            and all(type(v) is int for v in offsets) and offsets[-1] == len(raw)
            and all(a <= b for a, b in itertools.pairwise(offsets))
            and all(type(v) is int and -128 <= v < 128 for v in raw)):
        raise fail(path, f"feature {f}: string categories need offsets rising from 0 to the number of "
                         "bytes and bytes from -128 to 127")
    return [tuple(raw[a:b]) for a, b in itertools.pairwise(offsets)]


def _is_typed(entry: Any) -> bool:
    """``{'type', 'values'}`` with a known type code and a list of ints."""
    return isinstance(entry, dict) and entry.keys() == {"type", "values"} and type(entry["type"]) is int \
        and entry["type"] in CATEGORY_TYPES \
        and isinstance(entry["values"], list) and all(type(v) is int for v in entry["values"])


def _typed_keys(entry: dict[str, Any], f: int, path: str) -> list[Any]:
    """Numeric categories, each within the range of the entry's type."""
    keys = entry["values"]
    limits = np.iinfo(CATEGORY_TYPES[entry["type"]])
    if keys and not limits.min <= min(keys) <= max(keys) <= limits.max:
        raise fail(path, f"feature {f}: category values do not fit {CATEGORY_TYPES[entry['type']]}")
    return keys


def _category_keys_of(entries: Any, features: Any, path: str) -> list[list[Any] | None]:
    if not isinstance(entries, list) or (entries and len(entries) != features):
        raise fail(path, f"'category_values' must be empty or hold one entry per feature ({preview(features)})")
    return [_category_keys(entry, f, path) for f, entry in enumerate(entries)]


def _recorder(entries: list[Any], keys: list[list[Any] | None]) -> dict[str, Any]:
    """XGBoost's category recorder (``cats``) for the checked categories of each feature."""
    enc, segments, order = [], [0], []
    for entry, items in zip(entries, keys, strict=True):
        enc.append(entry if entry is not None else {"offsets": [], "values": []})
        items = items or []
        # XGBoost finds a category by binary search over this order.
        order.extend(sorted(range(len(items)), key=items.__getitem__))
        segments.append(segments[-1] + len(items))
    return {"enc": enc, "feature_segments": segments if entries else [], "sorted_idx": order}


def _typed_recorder(recorder: dict[str, Any], entries: list[Any]) -> dict[str, Any]:
    """The recorder with XGBoost's own array types (UBJSON keeps them: each is read back as typed)."""
    enc = []
    for item, entry in zip(recorder["enc"], entries, strict=True):
        if entry is not None and "type" in entry:
            values = np.array(entry["values"], dtype=CATEGORY_TYPES[entry["type"]])
            enc.append({"type": entry["type"], "values": values})
        else:
            enc.append({"offsets": np.array(item["offsets"], dtype=np.int32),
                        "values": np.array(item["values"], dtype=np.int8)})
    return {"enc": enc, "feature_segments": np.array(recorder["feature_segments"], dtype=np.int32),
            "sorted_idx": np.array(recorder["sorted_idx"], dtype=np.int32)}


def _parents(packed: Mapping[str, np.ndarray], node_offsets: np.ndarray) -> np.ndarray:
    """Each node's parent inside its tree (XGBoost's marker for a root), for checked trees."""
    left, right = packed["left_children"], packed["right_children"]
    base = np.repeat(node_offsets[:-1], np.diff(node_offsets))
    parents = np.full(left.shape[0], _NO_PARENT, dtype=np.int32)
    inner = np.flatnonzero(left != -1)
    local = (inner - base[inner]).astype(np.int32)
    parents[left[inner] + base[inner]] = local
    parents[right[inner] + base[inner]] = local
    return parents


def _key(name: str) -> bytes:
    raw = name.encode()
    return b"L" + struct.pack(">q", len(raw)) + raw


_ID = _key("id") + b"L"
_TREE_PARAM = _key("tree_param") + b"{" + _key("num_deleted") + b"SL" + struct.pack(">q", 1) + b"0" + _key(
    "num_feature")
_TREE_END = _key("size_leaf_vector") + b"SL" + struct.pack(">q", 1) + b"1" + b"}}"
#: The per-tree arrays, each with where it is sliced from (node arrays, categorical nodes, categories).
_TREE_ARRAYS = [(name, "node_offsets") for name in (*NODE_ARRAYS, "parents")] + [
    (name, "category_node_offsets") for name in ("categories_nodes", "categories_segments", "categories_sizes")] + [
    ("categories", "category_offsets")]


def _trees(packed: Mapping[str, np.ndarray], features: int) -> list[bytes]:
    """Each tree as UBJSON, its arrays sliced from big-endian copies of the packed ones.

    One conversion per array instead of one per tree and array: a 500-tree model has 7,000
    slices, which cost more than the bytes they hold as separate numpy calls.
    """
    arrays = {**packed, "parents": _parents(packed, packed["node_offsets"])}
    blocks = {}
    for name, by in _TREE_ARRAYS:
        array = arrays[name]
        header = _key(name) + b"[$" + _UBJ_TYPES[array.dtype] + b"#L"
        blocks[name] = (header, array.dtype.itemsize, array.astype(array.dtype.newbyteorder(">")).tobytes(),
                        packed[by].tolist())
    # Each tree ends with its id and tree_param, whose only other varying field is num_nodes.
    width = str(features).encode()
    middle = (_TREE_PARAM + b"SL" + struct.pack(">q", len(width)) + width + _key("num_nodes") + b"SL")
    offsets_of_nodes = packed["node_offsets"].tolist()
    trees = []
    for t in range(len(offsets_of_nodes) - 1):
        parts = [b"{"]
        for header, size, raw, offsets in blocks.values():
            begin, end = offsets[t], offsets[t + 1]
            parts += [header, struct.pack(">q", end - begin), raw[begin * size:end * size]]
        n_nodes = str(offsets_of_nodes[t + 1] - offsets_of_nodes[t]).encode()
        parts += [_ID, struct.pack(">q", t), middle, struct.pack(">q", len(n_nodes)), n_nodes, _TREE_END]
        trees.append(b"".join(parts))
    return trees


def _model(packed: Mapping[str, np.ndarray], settings: Mapping[str, Any], keys: list[list[Any] | None]) -> bytes:
    """XGBoost's model as UBJSON, written from checked arrays and settings only."""
    features = settings["num_feature"]
    trees = _trees(packed, features)
    parallel, groups = settings["num_parallel_tree"], groups_of(settings)
    per_round = groups * parallel
    rounds = len(trees) // per_round
    # In each round, the parallel trees of output 0, then those of output 1, ...
    tree_info = np.tile(np.repeat(np.arange(groups), parallel), rounds).tolist() if groups > 1 else [0] * len(trees)
    # The shortest text that reads back as each float32: XGBoost parses the vector itself.
    base_score = "[" + ",".join(str(v) for v in packed["base_score"]) + "]"
    version = [int(part) for part in xgboost.__version__.split(".")[:3] if part.isdigit()]
    entries = settings["category_values"]
    learner = {
        "attributes": settings["attributes"], "feature_names": settings["feature_names"],
        "feature_types": settings["feature_types"],
        "gradient_booster": {"model": {
            "cats": _typed_recorder(_recorder(entries, keys), entries),
            "gbtree_model_param": {"num_parallel_tree": str(parallel), "num_trees": str(len(trees))},
            "iteration_indptr": list(range(0, len(trees) + 1, per_round)), "tree_info": tree_info,
            "trees": [_Raw(tree) for tree in trees]},
            "name": "gbtree"},
        "learner_model_param": {"base_score": base_score, "boost_from_average": "1",
                                "num_class": str(settings["num_class"]), "num_feature": str(features),
                                "num_target": str(settings["num_target"])},
        "objective": settings["objective"],
    }
    out: list[bytes] = []
    _ubjson({"learner": learner, "version": version}, out)
    return b"".join(out)


class _Raw(NamedTuple):
    """A value already written as UBJSON."""

    data: bytes


#: numpy dtype -> UBJSON's marker of a typed array of it (the types XGBoost writes its arrays with).
_UBJ_TYPES = {np.dtype(np.float32): b"d", np.dtype(np.int8): b"i", np.dtype(np.uint8): b"U",
              np.dtype(np.int16): b"I", np.dtype(np.int32): b"l", np.dtype(np.int64): b"L"}


def _ubjson(value: Any, out: list[bytes]) -> None:
    """Append ``value`` as UBJSON, the binary JSON XGBoost reads with its typed arrays.

    Objects and arrays carry their length up front (``#L``); arrays of numbers are typed
    (``$``) big-endian blocks, which keeps every float32 exactly. Only the values
    :func:`_model` builds occur: dicts, str, int, lists of them and numpy arrays.
    """
    if isinstance(value, _Raw):
        out.append(value.data)
    elif isinstance(value, dict):
        out.append(b"{")
        for key, item in value.items():
            out.append(_key(key))
            _ubjson(item, out)
        out.append(b"}")
    elif isinstance(value, np.ndarray):
        big = value.astype(value.dtype.newbyteorder(">"), copy=False)
        out.append(b"[$" + _UBJ_TYPES[value.dtype] + b"#L" + struct.pack(">q", value.shape[0]) + big.tobytes())
    elif isinstance(value, list):
        out.append(b"[#L" + struct.pack(">q", len(value)))
        for item in value:
            _ubjson(item, out)
    elif isinstance(value, str):
        raw = value.encode()
        out.append(b"SL" + struct.pack(">q", len(raw)) + raw)
    else:  # an int (never a bool: no setting holds one)
        out.append(b"L" + struct.pack(">q", value))


def _decode(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    check_version(node, path)
    settings = {name: node[name] for name in _SETTINGS}
    packed = {name: tensor_field(dec, node, name, path, "biuf") for name in BOOSTER_TENSORS}
    keys = _category_keys_of(settings["category_values"], settings["num_feature"], path)
    check_booster(packed, settings, [len(k or ()) for k in keys], path)
    booster = xgboost.Booster()
    try:
        booster.load_model(bytearray(_model(packed, settings, keys)))
    except xgboost.core.XGBoostError as exc:  # a combination the rules let through that XGBoost refuses
        raise fail(path, f"XGBoost refused the checked booster: {str(exc)[:300]}") from None
    return booster


XGBOOST_BOOSTER = register_handler(Handler(
    "xgboost_booster", (xgboost.Booster,), _encode, _decode,
    {"num_feature": (int,), "num_class": (int,), "num_target": (int,), "num_parallel_tree": (int,),
     "feature_names": (list,), "feature_types": (list,), "attributes": (dict,), "objective": (dict,),
     "category_values": (list,), FIELD: (str, NULL), **dict.fromkeys(BOOSTER_TENSORS, TENSOR)}))
