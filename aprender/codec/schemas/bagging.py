"""Schemas of the other ensembles of trees: Bagging*, IsolationForest and AdaBoost*.

When their ``estimators_`` are decision trees of one class (the default), they are
packed like a random forest's (aprender.codec.trees._packed), and the per-tree lists
of 1-d arrays (``estimators_features_``, IsolationForest's ``_decision_path_lengths``
and ``_average_path_length_per_tree``) are stored as one ``values`` tensor plus
``offsets`` (and whether the sequence was a tuple), so the tensor count does not grow with ``n_estimators``. Other base
estimators (a Bagging of SVCs, say) keep the generic encoding of a list.

Everything is checked before the trees are built: the packed node arrays as for a
forest, the feature subsets inside ``[0, n_features_in_)`` with one feature per input of
its tree, and the path-length arrays with one value per node of their tree (scikit-learn
indexes them by the leaf each sample reaches).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn import ensemble as sk
from sklearn.base import ClassifierMixin
from sklearn.tree import BaseDecisionTree

from aprender.codec import Spec
from aprender.codec._checks import fail
from aprender.codec._nodes import join
from aprender.codec.schemas._generic import check_generic
from aprender.codec.trees._packed import check_packed, pack_estimators, read_packed, unpack_estimators
from aprender.exceptions import UnsupportedTypeError

#: Per-tree lists of 1-d arrays stored as values + offsets.
_RAGGED = ("estimators_features_", "_decision_path_lengths", "_average_path_length_per_tree")
#: Of those, the ones with one value per node of their tree.
_PER_NODE = ("_decision_path_lengths", "_average_path_length_per_tree")
_RAGGED_KEYS = frozenset(["values", "offsets", "tuple"])


def _raggable(value: object) -> bool:
    if type(value) not in (list, tuple) or not value:
        return False
    return all(type(v) is np.ndarray and v.ndim == 1 for v in value) and len({v.dtype for v in value}) == 1 \
        and value[0].dtype.kind in "iuf"


def _pack(attrs: dict[str, Any]) -> dict[str, Any]:
    out = dict(attrs)
    trees = attrs.get("estimators_")
    if type(trees) is list and trees and all(isinstance(t, BaseDecisionTree) for t in trees):
        # Trees that cannot share one packed node keep the generic list encoding.
        with contextlib.suppress(UnsupportedTypeError):
            out["estimators_"] = pack_estimators(trees, attrs, "estimators_")
    for name in _RAGGED:
        value = attrs.get(name)
        if _raggable(value):
            lengths = np.fromiter((len(v) for v in value), dtype=np.int64, count=len(value))
            out[name] = {"values": np.concatenate(value), "offsets": np.concatenate([[0], np.cumsum(lengths)]),
                         "tuple": type(value) is tuple}
    return out


def _ragged(attrs: Mapping[str, Any], name: str, count: int, path: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, offsets) of a packed per-tree list, checked; None when stored as a list."""
    node = attrs.get(name)
    if not isinstance(node, dict):
        return None
    values, offsets = node.get("values"), node.get("offsets")
    if node.keys() != _RAGGED_KEYS or not all(isinstance(a, np.ndarray) for a in (values, offsets)) or \
            type(node["tuple"]) is not bool:
        raise fail(path, f"'{name}' must hold the tensors 'values' and 'offsets' and the flag 'tuple'")
    if values.ndim != 1 or values.dtype.kind not in "iuf":
        raise fail(path, f"'{name}.values' must be a 1-d numeric tensor")
    if offsets.dtype != np.int64 or offsets.shape != (count + 1,):
        raise fail(path, f"'{name}.offsets' must be int64 of shape ({count + 1},) for {count} estimators")
    if offsets[0] != 0 or offsets[-1] != values.shape[0] or np.any(np.diff(offsets) < 0):
        raise fail(path, f"'{name}.offsets' must rise from 0 to {values.shape[0]}")
    return values, offsets


def _validator(classifier: bool | None) -> Callable[[Mapping[str, Any], Mapping[str, Any], str], None]:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """Packed trees, feature subsets and per-node arrays fit each other and the ensemble."""
        check_generic(params, attrs, path)
        trees = attrs.get("estimators_")
        if trees is None:
            return
        n_features = attrs.get("n_features_in_")
        packed = None
        if isinstance(trees, dict):
            where = join(path, "estimators_")
            packed = read_packed(trees, attrs, where, 1)
            if classifier is not None and issubclass(packed.cls, ClassifierMixin) != classifier:
                raise fail(where, f"this ensemble cannot hold {packed.key}")
            check_packed(packed, where)
            count = packed.shape[0]
        elif isinstance(trees, list):
            count = len(trees)
        else:
            raise fail(path, "'estimators_' must be a list or packed trees")
        features = _ragged(attrs, "estimators_features_", count, path)
        if features is not None:
            if type(n_features) is not int:
                raise fail(path, "'estimators_features_' needs n_features_in_ to check the feature indices against")
            values, offsets = features
            if values.dtype.kind not in "iu" or (values.size and (values.min() < 0 or values.max() >= n_features)):
                raise fail(path, f"'estimators_features_' must index the {n_features} input features")
            if packed is not None and np.any(np.diff(offsets) != packed.trees["n_features"]):
                raise fail(path, f"every tree takes {packed.trees['n_features']} features, as its feature subset must")
        for name in _PER_NODE:
            lengths = _ragged(attrs, name, count, path)
            if lengths is not None and (packed is None or not np.array_equal(
                    np.diff(lengths[1]), np.diff(packed.trees["node_offsets"]))):
                raise fail(path, f"'{name}' must hold one value per node of each tree")

    return check


def _unpack(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    out = dict(attrs)
    if isinstance(attrs.get("estimators_"), dict):
        where = join(path, "estimators_")
        out["estimators_"] = unpack_estimators(read_packed(attrs["estimators_"], attrs, where, 1), where)
    for name in _RAGGED:
        node = attrs.get(name)
        if isinstance(node, dict):
            values, offsets = node["values"], node["offsets"].tolist()
            parts = [values[a:b].copy() for a, b in itertools.pairwise(offsets)]
            out[name] = tuple(parts) if node["tuple"] else parts
    return out


def _spec(classifier: bool | None) -> Spec:
    return Spec(validate=_validator(classifier), pack=_pack, unpack=_unpack)


SCHEMAS = [
    ((sk.BaggingClassifier,), _spec(True)),
    ((sk.BaggingRegressor,), _spec(False)),
    ((sk.IsolationForest,), _spec(False)),
    ((sk.AdaBoostClassifier,), _spec(True)),
    ((sk.AdaBoostRegressor,), _spec(False)),
]
