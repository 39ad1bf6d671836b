"""The ``imputer_triplet`` handler: one step of IterativeImputer's ``imputation_sequence_``.

scikit-learn keeps each step as a named tuple ``_ImputerTriplet(feat_idx,
neighbor_feat_idx, estimator)``: the column it imputes, the columns it predicts that
column from, and the fitted regressor. One is stored as::

    {"__t__": "imputer_triplet", "feat_idx": <int or numpy scalar node>,
     "neighbor_feat_idx": <int tensor>, "estimator": <estimator node>}

Here each step is checked on its own (an integer column, a 1-d integer tensor, an
estimator that predicts); the IterativeImputer schema (``schemas/iterative_impute.py``)
checks the indices against the imputer's columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.impute._iterative import _ImputerTriplet

from aprender.codec._checks import bounded_int, fail
from aprender.codec._nodes import join
from aprender.codec.handlers._base import ANY, TENSOR, Handler, register_handler, tensor_field

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["IMPUTER_TRIPLET"]


def _encode_triplet(value: _ImputerTriplet, enc: Encoding, path: str) -> dict[str, Any]:
    return {
        "feat_idx": enc.value(value.feat_idx, join(path, "feat_idx"), 1),
        "neighbor_feat_idx": enc.tensor(np.asarray(value.neighbor_feat_idx), join(path, "neighbor_feat_idx")),
        "estimator": enc.value(value.estimator, join(path, "estimator"), 1),
    }


def _decode_triplet(node: Mapping[str, Any], dec: Decoding, path: str) -> _ImputerTriplet:
    feat_idx = dec.value(node["feat_idx"], join(path, "feat_idx"), 1)
    bounded_int(feat_idx, "feat_idx", path)
    neighbors = tensor_field(dec, node, "neighbor_feat_idx", path, "iu")
    if neighbors.ndim != 1:
        raise fail(path, f"'neighbor_feat_idx' must be 1-d, found shape {list(neighbors.shape)}")
    estimator_node = node["estimator"]
    if type(estimator_node) is not dict or estimator_node.get("__t__") != "estimator":
        raise fail(path, "'estimator' must be an estimator node")
    estimator = dec.value(estimator_node, join(path, "estimator"), 1)
    if not callable(getattr(estimator, "predict", None)):
        raise fail(path, f"'estimator' must be a regressor, found {type(estimator).__name__}")
    return _ImputerTriplet(feat_idx, neighbors, estimator)


IMPUTER_TRIPLET = register_handler(Handler("imputer_triplet", (_ImputerTriplet,), _encode_triplet, _decode_triplet,
                                           {"feat_idx": ANY, "neighbor_feat_idx": TENSOR, "estimator": (dict,)}))
