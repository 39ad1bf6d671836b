"""CatBoost's fitted model (the ``_catboost._CatBoost`` inside every CatBoost estimator) as checked arrays.

Saving reads the model's documented JSON dump for its structure (the symmetric trees'
splits, the float features' borders and NaN handling, the loss, the class labels,
the training record) and the model's own getters for the leaf values, scale and bias,
which the dump prints with too few digits to give them back exactly. The trees become
the arrays of :mod:`aprender.codec.schemas._oblivious`; the rest is checked metadata.

Loading checks every array by the rules of that module and every string against the
tables below, then writes a CatBoost JSON model itself from the checked values only,
loads it through CatBoost's public JSON loader (from a file in a private temporary
directory: CatBoost reads JSON from no other source) and sets the exact leaf values,
scale and bias through CatBoost's setters. The file's bytes never reach CatBoost's
parsers.

Categorical features (``cat_features``: one-hot values, CTRs and their hash tables) are
the arrays of :mod:`aprender.codec.schemas._catboost_ctrs`
(:mod:`aprender.codec.handlers._catboost_categorical` reads and writes them).

What is refused at save, with the reason: non-symmetric trees (``grow_policy``
Depthwise or Lossguide), text and embedding features (their tokenizers and calcers
have no checked layout) and losses outside :data:`LOSSES`.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender import _limits
from aprender.codec._checks import bounded_int, fail
from aprender.codec._nodes import preview
from aprender.codec._optional import require
from aprender.codec.handlers import _booster_json as booster_json
from aprender.codec.handlers._base import NULL, TENSOR, Handler, register_handler, tensor_field
from aprender.codec.handlers._catboost_categorical import categorical_arrays, categorical_json, is_categorical
from aprender.codec.handlers._library_version import FIELD, check_version, record_version
from aprender.codec.schemas._catboost_ctrs import ARRAYS as CAT_ARRAYS
from aprender.codec.schemas._catboost_ctrs import Shape, check_categorical
from aprender.codec.schemas._catboost_losses import LOSSES, METRIC_NAME
from aprender.codec.schemas._oblivious import ARRAYS, NAN_TREATMENTS, check_oblivious, leaf_offsets
from aprender.exceptions import FormatError, UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BOOSTER"]

#: The model class, from CatBoost's compiled module (``require`` names the extra when CatBoost is missing).
_CatBoost = require("catboost")._catboost._CatBoost
_CatBoostError = require("catboost").CatBoostError

#: How CatBoost types class labels, and the JSON type of each label.
LABEL_TYPES: dict[str, tuple[type, ...]] = {"Integer": (int,), "Float": (float, int), "String": (str,),
                                            "Boolean": (bool,)}
#: A loss parameter's name and value (CatBoost writes numbers, booleans and metric names as strings).
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_PARAM_VALUE = re.compile(r"[A-Za-z0-9_.+\-]{0,64}")
_MAX_LABEL = 1024  # characters of one class label or feature name
_FEATURE_SPLIT = "FloatFeature"


# -- save -------------------------------------------------------------------------------


def _dump(model: Any) -> dict[str, Any]:
    """The model's JSON dump (CatBoost writes it only to a file)."""
    with tempfile.TemporaryDirectory(prefix="aprender-catboost-") as folder:
        file = os.path.join(folder, "model.json")
        model._save_model(file, "json", "", None)
        with open(file, "rb") as stream:
            return booster_json.loads(stream.read())


def _refuse(path: str, reason: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(path, "catboost model", reason)


def _check_savable(model: Any, dump: Mapping[str, Any], path: str) -> None:
    """Refuse, with the reason, a model whose parts have no checked layout here."""
    if "oblivious_trees" not in dump or not model._is_oblivious():
        raise _refuse(path, "only symmetric trees (grow_policy='SymmetricTree', the default) are stored: "
                            "Depthwise and Lossguide trees are not supported yet")
    info = dump.get("features_info", {})
    others = sorted(set(info) - {"float_features", "categorical_features", "ctrs"})
    if others:
        raise _refuse(path, f"aprender has no checked layout for this model's {', '.join(others)}")
    categorical = is_categorical(dump)
    for i, feature in enumerate(info.get("float_features", [])):
        if feature.get("feature_index") != i or (feature.get("flat_feature_index") != i and not categorical):
            raise _refuse(path, "a model whose float features are not its columns in order is not supported")
    if not categorical and ("ctr_data" in dump or "ctrs" in info):
        raise _refuse(path, "a model with CTRs but no categorical features is not supported")


def _split_arrays(trees: list, borders: list[np.ndarray], path: str) -> dict[str, np.ndarray]:
    """Each tree's depth, and each split's float feature and the index of its border among that feature's."""
    splits = [split for tree in trees for split in tree.get("splits") or []]
    depths = np.array([len(tree.get("splits") or []) for tree in trees], dtype=np.int32)
    features = np.array([split["float_feature_index"] for split in splits], dtype=np.int32)
    values = np.array([split["border"] for split in splits], dtype=np.float32)
    indices = np.zeros(features.shape[0], dtype=np.int32)
    for f in np.unique(features).tolist():  # one search per feature, not per split
        mine = features == f
        wanted = values[mine]
        found = np.searchsorted(borders[f], wanted)
        exact = found < borders[f].shape[0]
        exact[exact] = borders[f][found[exact]] == wanted[exact]
        if not exact.all():
            raise _refuse(path, f"a split's border {wanted[~exact][0]} is not one of feature {f}'s borders")
        indices[mine] = found
    return {"tree_depths": depths, "split_feature": features, "split_border": indices}


def _encode(model: Any, enc: Encoding, path: str) -> dict[str, Any]:
    if model._get_text_feature_indices() or model._get_embedding_feature_indices():  # CatBoost dumps no JSON of them
        raise _refuse(path, "models with text or embedding features (text_features=..., embedding_features=..., "
                            "their tokenizers, dictionaries and calcers) are not stored: aprender keeps CatBoost "
                            "trees as checked arrays and has no checked layout for them; turn such columns into "
                            "numbers before CatBoost (e.g. a TfidfVectorizer in a Pipeline)")
    dump = _dump(model)
    _check_savable(model, dump, path)
    floats = dump["features_info"].get("float_features", [])
    borders = [np.asarray(f.get("borders", []), dtype=np.float32) for f in floats]
    categorical, cat_ids = {}, None
    if is_categorical(dump):
        categorical, cat_ids = categorical_arrays(dump, borders, lambda reason: _refuse(path, reason))
    codes = {name: code for code, name in enumerate(NAN_TREATMENTS)}
    counts = np.array([len(b) for b in borders], dtype=np.int64)
    arrays = {
        "borders": np.concatenate([np.zeros(0, np.float32), *borders]),
        "border_offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        "nan_treatment": np.array([codes[f["nan_value_treatment"]] for f in floats], dtype=np.int8),
        "has_nans": np.array([bool(f.get("has_nans")) for f in floats], dtype=np.int8),
        **({} if categorical else _split_arrays(dump["oblivious_trees"], borders, path)),
        **categorical,
        "leaf_values": np.asarray(model._get_leaf_values(), dtype=np.float64),
        "leaf_weights": np.concatenate([np.zeros(0), *(np.asarray(t.get("leaf_weights", []), dtype=np.float64)
                                                        for t in dump["oblivious_trees"])]),
    }
    scale, bias = model._get_scale_and_bias()
    arrays["scale"] = np.array([scale], dtype=np.float64)
    arrays["bias"] = np.atleast_1d(np.asarray(bias, dtype=np.float64))
    info = dump["model_info"]
    loss = info["params"]["loss_function"]
    node: dict[str, Any] = {
        "n_features": len(floats),
        "dimension": int(arrays["bias"].shape[0]),
        "feature_ids": [f.get("feature_id", "") for f in floats],
        "loss": loss["type"],
        "loss_params": {k: v for k, v in loss.get("params", {}).items() if k != "__params_key_order"},
        "class_params": info.get("class_params"),
        "training": json.loads(info["training"]) if "training" in info else None,
        **record_version(require("catboost")),
    }
    if cat_ids is not None:  # only then: the files of models without categorical features stay as they were
        node["cat_feature_ids"] = cat_ids
    try:  # what a load would refuse is refused now, not found out when the file is read
        _check_node(node, arrays, path)
    except FormatError as exc:
        raise _refuse(path, f"aprender cannot check this model: {exc}") from None
    for name in (*ARRAYS, *(CAT_ARRAYS if cat_ids is not None else ())):
        node[name] = enc.tensor(arrays[name], f"{path}.{name}")
    return node


# -- load -------------------------------------------------------------------------------


def _string(value: Any, what: str, path: str) -> str:
    if type(value) is not str or len(value) > _MAX_LABEL:
        raise fail(path, f"{what} must be a string of at most {_MAX_LABEL} characters, found {preview(value, 40)}")
    return value


def _loss_params(params: Any, path: str) -> dict[str, str]:
    if type(params) is not dict or len(params) > 16:
        raise fail(path, "'loss_params' must map at most 16 parameter names to strings")
    for name, value in params.items():
        if not _PARAM_NAME.fullmatch(name) or type(value) is not str or not _PARAM_VALUE.fullmatch(value):
            raise fail(path, f"loss parameter {preview(name, 40)}={preview(value, 40)} is not a name and a "
                             "number, boolean or identifier")
    return params


def _class_params(params: Any, loss: str, dimension: int, path: str) -> dict[str, Any] | None:
    """The class labels of a classifier's model, checked against its loss and leaf dimension."""
    role, width = LOSSES[loss]
    if role != "classifier":
        if params is not None:
            raise fail(path, f"a {loss} model has no class labels, found 'class_params'")
        return None
    if type(params) is not dict or set(params) != {"class_label_type", "class_names", "class_to_label",
                                                   "classes_count"}:
        raise fail(path, "'class_params' must hold class_label_type, class_names, class_to_label and classes_count")
    kinds = LABEL_TYPES.get(params["class_label_type"])
    if kinds is None:
        raise fail(path, f"class_label_type {preview(params['class_label_type'], 40)} is not one of "
                         f"{sorted(LABEL_TYPES)}")
    names = _class_names(params["class_names"], kinds, params["class_label_type"], path)
    to_label = params["class_to_label"]
    # CatBoost indexes its labels by these (the semantic fuzzer crashed it with one of 2**31 - 1).
    if type(to_label) is not list or len(to_label) != len(names) or not all(
            type(v) is int and 0 <= v < len(names) for v in to_label):
        raise fail(path, f"'class_to_label' must hold one label index in [0, {len(names)}) per class")
    if type(params["classes_count"]) is not int or not 0 <= params["classes_count"] <= len(names):
        raise fail(path, f"'classes_count' must be an int in [0, {len(names)}]")
    expected = len(names) if width == "classes" else width
    if dimension != expected:
        raise fail(path, f"a {loss} model of {len(names)} classes has leaves of dimension {expected}, "
                         f"found {dimension}")
    return params


def _class_names(names: Any, kinds: Any, label_type: Any, path: str) -> list:
    """2 to MAX_CLASSES distinct labels, each of a kind of ``label_type`` (strings short, floats finite)."""
    if type(names) is not list or not 2 <= len(names) <= _limits.MAX_CLASSES:
        raise fail(path, f"'class_names' must list 2 to {_limits.MAX_CLASSES} labels")
    for name in names:
        if type(name) not in kinds or (type(name) is str and len(name) > _MAX_LABEL) or (
                type(name) is float and not math.isfinite(name)):
            raise fail(path, f"class label {preview(name, 40)} is not a {label_type} label")
    if len(set(names)) != len(names):
        raise fail(path, "'class_names' lists a label twice")
    return names


def _metrics(record: Any, path: str, where: str) -> dict[str, float]:
    if type(record) is not dict or len(record) > 64:
        raise fail(path, f"training record {where} must map at most 64 metric names to numbers")
    for name, value in record.items():
        if not METRIC_NAME.fullmatch(name) or type(value) not in (int, float) or not math.isfinite(value):
            raise fail(path, f"training record {where}: {preview(name, 40)}={preview(value, 40)} is not a metric "
                             "name and a number")
    return record


def _training(record: Any, n_trees: int, path: str) -> dict[str, Any] | None:
    """CatBoost's training record (best iteration, best scores, metric history), checked field by field."""
    if record is None:
        return None
    metrics = record.get("metrics") if type(record) is dict and set(record) == {"metrics"} else None
    allowed = {"best_iteration", "learn_best_error", "test_best_error", "learn_metrics_history",
               "test_metrics_history"}
    if type(metrics) is not dict or not set(metrics) <= allowed:
        raise fail(path, f"the training record must be {{'metrics': {{...}}}} with keys among {sorted(allowed)}")
    best = metrics.get("best_iteration")
    if best is not None:
        bounded_int(best, "best_iteration", path, high=max(n_trees - 1, 0))
    if "learn_best_error" in metrics:
        _metrics(metrics["learn_best_error"], path, "learn_best_error")
    for name in ("test_best_error", "learn_metrics_history", "test_metrics_history"):
        items = metrics.get(name, [])
        if type(items) is not list:
            raise fail(path, f"training record '{name}' must be a list")
        for i, item in enumerate(items):
            for j, entry in enumerate(item if name == "test_metrics_history" and type(item) is list else [item]):
                _metrics(entry, path, f"{name}[{i}][{j}]")
    return {"metrics": metrics}


def _check_node(node: Mapping[str, Any], arrays: Mapping[str, np.ndarray], path: str) -> dict[str, Any]:
    cat_ids = node.get("cat_feature_ids")
    low = 0 if cat_ids is not None else 1  # a model of categorical features only has no float feature
    n_features = bounded_int(node["n_features"], "n_features", path, low=low, high=_limits.MAX_FEATURES)
    dimension = bounded_int(node["dimension"], "dimension", path, low=1, high=_limits.MAX_CLASSES)
    if cat_ids is not None and "split_kind" not in arrays:
        raise fail(path, "'cat_feature_ids' without the categorical arrays")
    check_oblivious(arrays, n_features, dimension, path)
    loss = node["loss"]
    if loss not in LOSSES:
        raise fail(path, f"loss {preview(loss, 40)} is not one of {sorted(LOSSES)}")
    width = LOSSES[loss][1]
    if type(width) is int and dimension != width:
        raise fail(path, f"a {loss} model has leaves of dimension {width}, found {dimension}")
    ids = node["feature_ids"]
    if type(ids) is not list or len(ids) != n_features:
        raise fail(path, f"'feature_ids' must list {n_features} names")
    for name in ids:
        _string(name, "a feature name", path)
    class_params = _class_params(node["class_params"], loss, dimension, path)
    if cat_ids is not None:
        if type(cat_ids) is not list or not 1 <= len(cat_ids) <= _limits.MAX_FEATURES:
            raise fail(path, "'cat_feature_ids' must list the categorical features' names")
        for name in cat_ids:
            _string(name, "a feature name", path)
        n_classes = len(class_params["class_names"]) if class_params is not None else None
        check_categorical(arrays, Shape(n_features, np.diff(arrays["border_offsets"]), len(cat_ids), n_classes,
                                        arrays["split_feature"].shape[0]), path)
    return {
        "n_features": n_features, "dimension": dimension, "loss": loss, "feature_ids": ids,
        "cat_feature_ids": cat_ids, "loss_params": _loss_params(node["loss_params"], path),
        "class_params": class_params, "training": _training(node["training"], arrays["tree_depths"].shape[0], path),
    }


def _model_json(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> str:
    """A CatBoost JSON model made from checked arrays and metadata only."""
    offsets = arrays["border_offsets"].tolist()
    borders = arrays["borders"].tolist()
    flat = arrays["float_flat_index"].tolist() if meta["cat_feature_ids"] is not None else range(meta["n_features"])
    floats = [{"borders": borders[offsets[f]:offsets[f + 1]], "feature_id": meta["feature_ids"][f],
               "feature_index": f, "flat_feature_index": flat[f], "has_nans": bool(arrays["has_nans"][f]),
               "nan_value_treatment": NAN_TREATMENTS[arrays["nan_treatment"][f]]}
              for f in range(meta["n_features"])]
    leaves = leaf_offsets(arrays["tree_depths"]).tolist()
    dim = meta["dimension"]
    weights = arrays["leaf_weights"].tolist()
    features: dict[str, Any] = {"float_features": floats}
    ctr_data = None
    if meta["cat_feature_ids"] is not None:
        cat_info, ctr_data, splits = categorical_json(
            arrays, meta["cat_feature_ids"], [borders[offsets[f]:offsets[f + 1]] for f in range(meta["n_features"])],
            arrays["border_offsets"])
        features.update(cat_info)
    else:
        # Each split's index among all borders, for every split at once.
        index = (arrays["border_offsets"][arrays["split_feature"]] + arrays["split_border"]).tolist()
        splits = [{"border": borders[i], "float_feature_index": f, "split_index": i, "split_type": _FEATURE_SPLIT}
                  for f, i in zip(arrays["split_feature"].tolist(), index, strict=True)]
    firsts = np.concatenate([[0], np.cumsum(arrays["tree_depths"], dtype=np.int64)]).tolist()
    # Zeros: _load sets the exact values afterwards, and printing doubles is most of the text's cost.
    trees = [{"leaf_values": [0] * ((leaves[t + 1] - leaves[t]) * dim),
              "leaf_weights": weights[leaves[t]:leaves[t + 1]], "splits": splits[firsts[t]:firsts[t + 1]]}
             for t in range(len(firsts) - 1)]
    params = dict(meta["loss_params"])
    if params:
        params["__params_key_order"] = json.dumps(list(meta["loss_params"]))
    # Without flat_params CatBoost's reader says on stderr that "there are invalid params".
    info: dict[str, Any] = {"params": {"flat_params": {}, "loss_function": {"type": meta["loss"], "params": params}}}
    if meta["class_params"] is not None:
        info["class_params"] = meta["class_params"]
    if meta["training"] is not None:
        info["training"] = booster_json.dumps(meta["training"])
    model = {"features_info": features, "oblivious_trees": trees, "model_info": info,
             "scale_and_bias": [arrays["scale"][0].item(), arrays["bias"].tolist()]}
    if ctr_data:
        model["ctr_data"] = ctr_data
    return booster_json.dumps(model)


def _load(text: str, arrays: Mapping[str, np.ndarray], path: str) -> Any:
    model = _CatBoost()
    try:
        with tempfile.TemporaryDirectory(prefix="aprender-catboost-") as folder:
            file = os.path.join(folder, "model.json")
            with open(file, "x", encoding="utf-8") as stream:
                stream.write(text)
            model._load_model(file, "json")
        # CatBoost's JSON reader rounds some doubles by an ulp: the exact values come from the file's arrays.
        model._set_leaf_values(np.array(arrays["leaf_values"], dtype=np.float64))
        model._set_scale_and_bias(float(arrays["scale"][0]), arrays["bias"].tolist())
    except _CatBoostError as exc:  # checked values CatBoost still refuses: a format error, never its own
        raise fail(path, f"CatBoost refused the checked model: {exc}") from None
    if model._get_tree_count() != arrays["tree_depths"].shape[0] or not np.array_equal(
            model._get_leaf_values(), arrays["leaf_values"]):
        raise fail(path, "CatBoost built a model that differs from the checked arrays")
    return model


def _decode(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    arrays = {name: tensor_field(dec, node, name, path, "biuf") for name in ARRAYS}
    present = [name for name in CAT_ARRAYS if node.get(name) is not None]
    if present and (len(present) != len(CAT_ARRAYS) or node.get("cat_feature_ids") is None):
        raise fail(path, "a model with categorical features holds 'cat_feature_ids' and every one of "
                         f"{sorted(CAT_ARRAYS)}; this one holds {len(present)} of them")
    arrays.update({name: tensor_field(dec, node, name, path, "biuf") for name in present})
    check_version(node, path)
    meta = _check_node(node, arrays, path)
    return _load(_model_json(arrays, meta), arrays, path)


#: The handler of CatBoost's model object.
BOOSTER = register_handler(Handler(
    "catboost_booster", (_CatBoost,), _encode, _decode,
    {"n_features": (int,), "dimension": (int,), "feature_ids": (list,), "loss": (str,), "loss_params": (dict,),
     "class_params": (dict, NULL), "training": (dict, NULL), FIELD: (str, NULL), "cat_feature_ids": (list, NULL),
     **dict.fromkeys(ARRAYS, TENSOR), **dict.fromkeys(CAT_ARRAYS, (dict, NULL))}))
