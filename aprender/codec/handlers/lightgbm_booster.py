"""Named handler for LightGBM's ``Booster``: trees as named arrays, never LightGBM's own bytes.

Saving parses the text model LightGBM writes (``Booster.model_to_string``) into the
concatenated tree arrays of :mod:`aprender.codec.schemas._lgbm_text` (tensors
``<path>.split_feature``, ``<path>.threshold``, ...) and header values (metadata).
Loading checks them all (:func:`aprender.codec.schemas._lgbm_checks.check_model`), writes a
new model text from the checked values and hands only that text to
``lightgbm.Booster(model_str=...)``: a file's bytes never reach LightGBM's parser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aprender.codec._optional import require
from aprender.codec.handlers._base import NULL, TENSOR, Handler, register_handler, tensor_field
from aprender.codec.handlers._library_version import FIELD, check_version, record_version
from aprender.codec.schemas._lgbm_checks import check_best_iteration, check_model
from aprender.codec.schemas._lgbm_text import HEADER_INTS, TREE_ARRAYS, TREE_COUNTS, parse_model, write_model

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BOOSTER", "booster_arrays"]

lightgbm = require("lightgbm")

_ARRAYS = (*TREE_COUNTS, *TREE_ARRAYS)


def booster_arrays(booster: Any, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header values and tree arrays of ``booster``'s text model (every iteration it holds)."""
    text = booster.model_to_string(num_iteration=-1)
    # The categories as LightGBM itself reloads them: the JSON of the text's last line.
    last = text.rstrip().rpartition("\n")[2]
    categorical = json.loads(last.partition(":")[2]) if last.startswith("pandas_categorical:") else None
    return parse_model(text, categorical, path)


def _encode(booster: Any, enc: Encoding, path: str) -> dict[str, Any]:
    header, arrays = booster_arrays(booster, path)
    node = dict(header)
    node["best_iteration"] = int(booster.best_iteration)
    node.update(record_version(lightgbm))
    for name in _ARRAYS:
        node[name] = enc.tensor(arrays[name], f"{path}.{name}")
    return node


def _decode(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    check_version(node, path)
    arrays = {name: tensor_field(dec, node, name, path, "biuf") for name in _ARRAYS}
    header, offsets = check_model(node, arrays, path)
    n_trees = arrays["num_leaves"].shape[0]
    best = check_best_iteration(node["best_iteration"], n_trees, header["num_tree_per_iteration"], path)
    booster = lightgbm.Booster(model_str=write_model(header, arrays, offsets))
    booster.best_iteration = best
    return booster


BOOSTER = register_handler(Handler(
    "lightgbm_booster", (lightgbm.Booster,), _encode, _decode,
    {"version": (str,), **dict.fromkeys(HEADER_INTS, (int,)), "objective": (str,), "average_output": (bool,),
     "feature_names": (list,), "feature_infos": (list,), "monotone_constraints": (list, NULL),
     "pandas_categorical": (list, NULL), "best_iteration": (int,), FIELD: (str, NULL),
     **dict.fromkeys(_ARRAYS, TENSOR)}))
