"""XGBoost's ``Booster`` <-> its trees as named arrays, rebuilt through XGBoost's public loader.

Saving reads the booster's documented JSON model (``Booster.save_raw("json")``) and keeps
its trees as packed node arrays (``left_children``, ``split_indices``,
``split_conditions``, ... of all trees concatenated, ``node_offsets`` per tree), the
categories of its categorical splits, and its settings (objective, counts, base score,
feature names and types, attributes such as ``best_iteration``, the categories of each
pandas ``category`` column) as plain JSON. Loading checks everything
(``aprender.codec.schemas._xgb_structure``), then writes a JSON model from the checked
values only and hands that to ``Booster.load_model``: a file's bytes never reach
XGBoost's parser. What can be derived is not stored: each node's parent, each tree's
group (``tree_info``), the round boundaries, the category recorder's segments and sort
order.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec._optional import require
from aprender.codec.handlers._base import TENSOR, Handler, register_handler, tensor_field
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
    learner = json.loads(booster.save_raw("json"))["learner"]
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
    arrays = {name: np.concatenate([np.asarray(t[name], dtype=dtype) for t in trees]) if trees
              else np.zeros(0, dtype=dtype) for name, dtype in {**NODE_ARRAYS, **CATEGORY_ARRAYS}.items()}
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
        offsets, raw = entry["offsets"], entry["values"]
        if not (isinstance(offsets, list) and isinstance(raw, list) and len(offsets) >= 2 and offsets[0] == 0
                and all(type(v) is int for v in offsets) and offsets[-1] == len(raw)
                and all(a <= b for a, b in itertools.pairwise(offsets))
                and all(type(v) is int and -128 <= v < 128 for v in raw)):
            raise fail(path, f"feature {f}: string categories need offsets rising from 0 to the number of "
                             "bytes and bytes from -128 to 127")
        keys: list[Any] = [tuple(raw[a:b]) for a, b in itertools.pairwise(offsets)]
    elif isinstance(entry, dict) and entry.keys() == {"type", "values"} and entry["type"] in CATEGORY_TYPES \
            and isinstance(entry["values"], list) and all(type(v) is int for v in entry["values"]):
        keys = entry["values"]
        limits = np.iinfo(CATEGORY_TYPES[entry["type"]])
        if keys and not limits.min <= min(keys) <= max(keys) <= limits.max:
            raise fail(path, f"feature {f}: category values do not fit {CATEGORY_TYPES[entry['type']]}")
    else:
        raise fail(path, f"feature {f}: categories must be {{'offsets', 'values'}} or {{'type', 'values'}} with a "
                         f"type code of {sorted(CATEGORY_TYPES)}, found {preview(entry)}")
    if len(keys) > MAX_CATEGORY or len(set(keys)) != len(keys):
        raise fail(path, f"feature {f}: categories must be distinct and at most {MAX_CATEGORY}")
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


def _parents(left: np.ndarray, right: np.ndarray) -> list[int]:
    parents = np.full(left.shape[0], _NO_PARENT, dtype=np.int64)
    inner = np.flatnonzero(left != -1)
    parents[left[inner]] = inner
    parents[right[inner]] = inner
    return parents.tolist()


def _model_json(packed: Mapping[str, np.ndarray], settings: Mapping[str, Any], keys: list[list[Any] | None]) -> bytes:
    """XGBoost's JSON model, written from checked arrays and settings only."""
    offsets = {name: packed[name].tolist() for name in PER_TREE}
    features = settings["num_feature"]
    trees = []
    for t in range(len(offsets["node_offsets"]) - 1):
        b, e = offsets["node_offsets"][t], offsets["node_offsets"][t + 1]
        tree: dict[str, Any] = {name: packed[name][b:e].tolist() for name in NODE_ARRAYS}
        cb, ce = offsets["category_node_offsets"][t], offsets["category_node_offsets"][t + 1]
        for name in ("categories_nodes", "categories_segments", "categories_sizes"):
            tree[name] = packed[name][cb:ce].tolist()
        tree["categories"] = packed["categories"][offsets["category_offsets"][t]:offsets["category_offsets"][t + 1]
                                                  ].tolist()
        tree["parents"] = _parents(packed["left_children"][b:e], packed["right_children"][b:e])
        tree["id"] = t
        tree["tree_param"] = {"num_deleted": "0", "num_feature": str(features), "num_nodes": str(e - b),
                              "size_leaf_vector": "1"}
        trees.append(tree)
    parallel, groups = settings["num_parallel_tree"], groups_of(settings)
    per_round = groups * parallel
    rounds = len(trees) // per_round
    # In each round, the parallel trees of output 0, then those of output 1, ...
    tree_info = np.tile(np.repeat(np.arange(groups), parallel), rounds).tolist() if groups > 1 else [0] * len(trees)
    base_score = "[" + ",".join(str(v) for v in packed["base_score"].tolist()) + "]"
    version = [int(part) for part in xgboost.__version__.split(".")[:3] if part.isdigit()]
    learner = {
        "attributes": settings["attributes"], "feature_names": settings["feature_names"],
        "feature_types": settings["feature_types"],
        "gradient_booster": {"name": "gbtree", "model": {
            "cats": _recorder(settings["category_values"], keys),
            "gbtree_model_param": {"num_parallel_tree": str(parallel), "num_trees": str(len(trees))},
            "iteration_indptr": list(range(0, len(trees) + 1, per_round)), "tree_info": tree_info, "trees": trees}},
        "learner_model_param": {"base_score": base_score, "boost_from_average": "1",
                                "num_class": str(settings["num_class"]), "num_feature": str(features),
                                "num_target": str(settings["num_target"])},
        "objective": settings["objective"],
    }
    return json.dumps({"learner": learner, "version": version}).encode()


def _decode(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    settings = {name: node[name] for name in _SETTINGS}
    packed = {name: tensor_field(dec, node, name, path, "biuf") for name in BOOSTER_TENSORS}
    keys = _category_keys_of(settings["category_values"], settings["num_feature"], path)
    check_booster(packed, settings, [len(k or ()) for k in keys], path)
    booster = xgboost.Booster()
    try:
        booster.load_model(bytearray(_model_json(packed, settings, keys)))
    except xgboost.core.XGBoostError as exc:  # a combination the rules let through that XGBoost refuses
        raise fail(path, f"XGBoost refused the checked booster: {str(exc)[:300]}") from None
    return booster


XGBOOST_BOOSTER = register_handler(Handler(
    "xgboost_booster", (xgboost.Booster,), _encode, _decode,
    {"num_feature": (int,), "num_class": (int,), "num_target": (int,), "num_parallel_tree": (int,),
     "feature_names": (list,), "feature_types": (list,), "attributes": (dict,), "objective": (dict,),
     "category_values": (list,), **dict.fromkeys(BOOSTER_TENSORS, TENSOR)}))
