"""A list or grid of same-class decision trees <-> one packed, JSON-able node.

A forest's ``estimators_`` (a list) and gradient boosting's ``estimators_`` (an
``(n_stages, K)`` object array) hold hundreds of trees that differ only in their
nodes and, for forests, their ``random_state``. Stored tree by tree that would be
hundreds of tensors and metadata nodes; packed it is::

    {"class": registry key, "shape": [n] or [n_stages, K],
     "params": hyperparameters shared by every tree,
     "per_tree": {name: int64 array}  -- int hyperparameters that differ (random_state),
     "shared": {name: owner attribute} -- a hyperparameter that IS an attribute of the
                                          ensemble (gradient boosting's trees share ``_rng``),
     "attrs": fitted attributes shared by every tree (n_features_in_, classes_, ...),
     "tree_": packed node arrays (aprender.codec.trees._sklearn_tree.pack_trees)}

The number of tensors does not depend on the number of trees.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.tree import BaseDecisionTree

from aprender.codec._checks import check_attr_name, fail, require
from aprender.codec._nodes import join, preview
from aprender.codec._registry import entry_for_class, entry_for_key
from aprender.codec.trees._sklearn_tree import (
    TREE_CLASSIFIER_FITTED,
    TREE_FITTED,
    build_trees,
    check_tree_arrays,
    check_tree_attrs,
    pack_trees,
)
from aprender.exceptions import UnsupportedTypeError

__all__ = ["Packed", "check_packed", "pack_ensemble", "pack_estimators", "read_packed", "unpack_ensemble",
           "unpack_estimators"]

_KEYS = frozenset(["class", "shape", "params", "per_tree", "shared", "attrs", "tree_"])
_IMMUTABLE = (type(None), bool, int, float, str, tuple, np.generic)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (arrays: same dtype, shape and contents)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        # Bit-identical contents; object arrays (labels) compare their items.
        return np.array_equal(a, b) if a.dtype.kind == "O" else a.tobytes() == b.tobytes()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, _IMMUTABLE):
        return bool(a == b) or (a != a and b != b)  # NaN equals NaN here
    return False


def _tree_states(flat: list[Any], path: str) -> tuple[type, str, list[dict[str, Any]]]:
    """The trees' one class, its registry key and each tree's attributes (the same names in every tree)."""
    if not flat:
        raise UnsupportedTypeError(path, "list", "an ensemble without trees cannot be stored")
    cls = type(flat[0])
    entry = entry_for_class(cls, join(path, 0))
    if not issubclass(cls, BaseDecisionTree) or any(type(e) is not cls for e in flat):
        raise UnsupportedTypeError(path, cls.__name__, "only ensembles of decision trees of one class are packed")
    states = [vars(e) for e in flat]
    if any(s.keys() != states[0].keys() for s in states):
        raise UnsupportedTypeError(path, cls.__name__, "the trees have different attributes")
    return cls, entry.key, states


def _sort_values(cls: type, states: list[dict[str, Any]], owner: Mapping[str, Any], path: str) -> dict[str, dict]:
    """Every attribute but ``tree_``, by where it is stored: params, per_tree, shared or attrs."""
    param_names = _param_names(cls)
    parts: dict[str, dict] = {"params": {}, "per_tree": {}, "shared": {}, "attrs": {}}
    for name, first in states[0].items():
        if name == "tree_":
            continue
        values = [s[name] for s in states]
        if all(_same(first, v) for v in values):
            owner_name = _owner_attribute(first, owner)
            if name in param_names and owner_name is not None:
                parts["shared"][name] = owner_name
            else:
                parts["params" if name in param_names else "attrs"][name] = first
        elif name in param_names and all(type(v) is int for v in values):
            parts["per_tree"][name] = np.array(values, dtype=np.int64)
        else:
            raise UnsupportedTypeError(join(path, name), type(first).__name__, "differs between the trees")
    return parts


def pack_estimators(estimators: list | np.ndarray, owner: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Pack ``estimators`` (trees of one allow-listed class); ``owner`` is the ensemble's state."""
    grid = np.asarray(estimators, dtype=object) if isinstance(estimators, list) else estimators
    cls, key, states = _tree_states(list(grid.ravel()), path)
    parts = _sort_values(cls, states, owner, path)
    return {
        "class": key,
        "shape": list(grid.shape),
        **parts,
        "tree_": pack_trees([s["tree_"] for s in states], path),
    }


@functools.cache
def _param_names(cls: type) -> frozenset[str]:
    """``cls``'s hyperparameter names (scikit-learn reads them from the signature on every call)."""
    return frozenset(cls._get_param_names())


def _owner_attribute(value: Any, owner: Mapping[str, Any]) -> str | None:
    """Name of the ensemble attribute that is the very object ``value`` (mutable objects only)."""
    if isinstance(value, _IMMUTABLE):
        return None
    return next((name for name, v in owner.items() if v is value), None)


@dataclass(frozen=True)
class Packed:
    """A packed node read from a file, its parts type-checked."""

    cls: type
    key: str
    shape: tuple[int, ...]
    params: dict[str, Any]
    per_tree: dict[str, np.ndarray]
    shared: dict[str, Any]
    attrs: dict[str, Any]
    trees: dict[str, Any]


def _check_per_tree(per_tree: dict[str, Any], packed: dict[str, Any], cls: type, n_trees: int, path: str) -> None:
    """Each per-tree hyperparameter is one of ``cls``'s, stored nowhere else, as ``n_trees`` int64s."""
    names = _param_names(cls)
    for name, values in per_tree.items():
        if name not in names or name in packed["params"] or name in packed["shared"]:
            raise fail(path, f"per-tree hyperparameter {preview(name)} is not a separate {cls.__name__} "
                             "parameter")
        if not isinstance(values, np.ndarray) or values.dtype != np.int64 or values.shape != (n_trees,):
            raise fail(path, f"per-tree '{name}' must be int64 of shape ({n_trees},)")


def _resolve_shared(packed: dict[str, Any], cls: type, owner: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Each shared hyperparameter of ``cls``, as the ensemble attribute it names."""
    names = _param_names(cls)
    resolved = {}
    for name, source in packed["shared"].items():
        if name not in names or name in packed["params"] or not isinstance(source, str) or source not in owner:
            raise fail(path, f"shared hyperparameter {preview(name)} must name an attribute of the ensemble")
        resolved[name] = owner[source]
    return resolved


def read_packed(node: object, owner: Mapping[str, Any], path: str, ndim: int) -> Packed:
    """Type-check a packed node: allow-listed tree class, shape, names; resolve ``shared``."""
    if not isinstance(node, dict) or node.keys() != _KEYS:
        raise fail(path, f"packed trees need exactly the keys {sorted(_KEYS)}")
    entry = entry_for_key(node["class"], path)
    if not issubclass(entry.cls, BaseDecisionTree):
        raise fail(path, f"packed estimators must be decision trees, found {entry.key}")
    shape = node["shape"]
    if not (isinstance(shape, list) and len(shape) == ndim and all(type(d) is int and d >= 1 for d in shape)):
        raise fail(path, f"'shape' must list {ndim} positive ints, found {preview(shape)}")
    params, per_tree, attrs = node["params"], node["per_tree"], node["attrs"]
    if not all(isinstance(node[part], dict) for part in ("params", "per_tree", "shared", "attrs", "tree_")):
        raise fail(path, "'params', 'per_tree', 'shared', 'attrs' and 'tree_' must be objects")
    _check_per_tree(per_tree, node, entry.cls, math.prod(shape), path)
    resolved = _resolve_shared(node, entry.cls, owner, path)
    for name in attrs:
        check_attr_name(entry.cls, name, params, path)
        if name == "tree_":
            raise fail(path, "'tree_' belongs in the packed node arrays, not in 'attrs'")
    return Packed(entry.cls, entry.key, tuple(shape), params, per_tree, resolved, attrs, node["tree_"])


def check_packed(packed: Packed, path: str) -> None:
    """Validate the node arrays and the shared fitted attributes of packed trees."""
    check_tree_arrays(packed.trees, packed.shape, path)
    trees = packed.trees
    classifier = issubclass(packed.cls, ClassifierMixin)
    require(packed.attrs, TREE_FITTED + (TREE_CLASSIFIER_FITTED if classifier else ()), path)
    check_tree_attrs(packed.attrs, trees["n_features"], trees["n_outputs"], trees["n_classes"], classifier, path)


def unpack_estimators(packed: Packed, path: str) -> list | np.ndarray:
    """Rebuild the trees of a :class:`Packed` node that passed :func:`check_packed`.

    Returns a list for a 1-d shape (forests) and an object array otherwise.
    """
    varying = {name: values.tolist() for name, values in packed.per_tree.items()}
    params = {**packed.params, **packed.shared}
    # Hyperparameters are validated once, not per tree: integer constraints are ranges,
    # so checking the smallest and largest value of each per-tree int covers every tree.
    for pick in (min, max) if varying else (min,):
        template = _template(packed, {**params, **{k: pick(v) for k, v in varying.items()}}, path)
    # Every tree starts from the template's hyperparameters plus the shared, read-only
    # fitted values (n_features_in_, classes_, ...), then gets its own ints and nodes.
    common = {**vars(template), **packed.attrs}
    cls, new = packed.cls, packed.cls.__new__
    estimators = []
    for i, tree in enumerate(build_trees(packed.trees)):
        est = new(cls)
        state = common.copy()
        for name, values in varying.items():
            state[name] = values[i]
        state["tree_"] = tree
        est.__dict__.update(state)
        estimators.append(est)
    if len(packed.shape) == 1:
        return estimators
    grid = np.empty(len(estimators), dtype=object)
    grid[:] = estimators
    return grid.reshape(packed.shape)


#: (class, scalar hyperparameters) already validated: the check is pure and costs more than
#: building every tree's estimator object.
_VALIDATED: set[tuple] = set()
_JSON_SCALARS = (type(None), bool, int, float, str)


def _template(packed: Packed, params: dict[str, Any], path: str) -> Any:
    key = None
    if all(type(v) in _JSON_SCALARS for v in params.values()):
        key = (packed.cls, tuple(sorted((k, type(v).__name__, v) for k, v in params.items())))
    try:
        est = packed.cls(**params)
        if key not in _VALIDATED:
            est._validate_params()
    except Exception as exc:  # hostile hyperparameters must surface as a format error
        raise fail(path, f"invalid hyperparameters for {packed.key}: {type(exc).__name__}: {exc}") from None
    if key is not None and len(_VALIDATED) < 1024:
        _VALIDATED.add(key)
    return est


# -- an ensemble's ``estimators_``, as a schema's ``pack`` and ``unpack`` -----------------


def pack_ensemble(attrs: dict[str, Any]) -> dict[str, Any]:
    """A Spec ``pack``: ``estimators_`` as one packed node."""
    if "estimators_" not in attrs:
        return attrs
    return {**attrs, "estimators_": pack_estimators(attrs["estimators_"], attrs, "estimators_")}


def unpack_ensemble(ndim: int) -> Callable[[dict[str, Any], Mapping[str, Any], str], dict[str, Any]]:
    """A Spec ``unpack``: the packed ``estimators_`` rebuilt as a grid of ``ndim`` dimensions."""
    def unpack(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
        if "estimators_" not in attrs:
            return attrs
        where = join(path, "estimators_")
        return {**attrs, "estimators_": unpack_estimators(read_packed(attrs["estimators_"], attrs, where, ndim), where)}

    return unpack
