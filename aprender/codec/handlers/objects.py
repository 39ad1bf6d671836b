"""Plain helper objects of scikit-learn that are not estimators, rebuilt from their attributes.

Meta-estimators hold small internal objects: scorers, cross-validation splitters,
Gaussian-process kernels, ``CalibratedClassifierCV``'s per-fold calibrated
classifiers, ... Their whole state is their ``__dict__``, which holds only values
the codec already stores (arrays, estimators, functions by name, other objects).
Such an object is stored as::

    {"__t__": "object", "class": "sklearn.metrics._scorer._Scorer", "state": {name: node}}

and rebuilt with ``cls.__new__(cls)`` plus its state. The class comes only from
:data:`OBJECTS`, a table written in this file (key -> module, class name): a key
read from a file is looked up there, and only the module named by the table is
imported. Objects that reach compiled code (KD-trees, splines, ...) are not plain
and have their own handlers.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aprender.codec._checks import check_attr_name, fail
from aprender.codec._nodes import join, preview
from aprender.codec._param_rules import check_object_state
from aprender.codec.handlers._base import Handler, register_handler
from aprender.codec.handlers.functions import check_literal
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["CLASS", "CLASS_VALUES", "OBJECT", "OBJECTS", "object_class"]

_KERNELS = (
    "CompoundKernel", "ConstantKernel", "DotProduct", "ExpSineSquared", "Exponentiation", "Matern",
    "PairwiseKernel", "Product", "RBF", "RationalQuadratic", "Sum", "WhiteKernel",
)
_SPLITTERS = (
    "GroupKFold", "GroupShuffleSplit", "KFold", "LeaveOneGroupOut", "LeaveOneOut", "LeavePGroupsOut",
    "LeavePOut", "PredefinedSplit", "RepeatedKFold", "RepeatedStratifiedKFold", "ShuffleSplit",
    "StratifiedGroupKFold", "StratifiedKFold", "StratifiedShuffleSplit", "TimeSeriesSplit",
)

_SCORERS = ("_Scorer", "_CurveScorer")

#: Every helper class the codec may rebuild: key -> (module, class name). Keys are
#: the class's defining module and qualified name.
OBJECTS: dict[str, tuple[str, str]] = {
    **{f"sklearn.metrics._scorer.{n}": ("sklearn.metrics._scorer", n)
       for n in (*_SCORERS, "_PassthroughScorer", "_MultimetricScorer")},
    **{f"sklearn.gaussian_process.kernels.{n}": ("sklearn.gaussian_process.kernels", n) for n in _KERNELS},
    **{f"sklearn.model_selection._split.{n}": ("sklearn.model_selection._split", n) for n in _SPLITTERS},
    "sklearn.model_selection._split._CVIterableWrapper": ("sklearn.model_selection._split", "_CVIterableWrapper"),
    "sklearn.calibration._CalibratedClassifier": ("sklearn.calibration", "_CalibratedClassifier"),
    "sklearn.utils._metadata_requests.MetadataRequest": ("sklearn.utils._metadata_requests", "MetadataRequest"),
    "sklearn.utils._metadata_requests.MethodMetadataRequest":
        ("sklearn.utils._metadata_requests", "MethodMetadataRequest"),
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer":
        ("sklearn.neural_network._stochastic_optimizers", "AdamOptimizer"),
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer":
        ("sklearn.neural_network._stochastic_optimizers", "SGDOptimizer"),
}


#: Classes whose ``owner`` is the estimator that holds them (scikit-learn's metadata routing,
#: from ``set_fit_request`` and the like): a reference back up the tree, which the encoder
#: would follow forever. Routing uses the owner only in messages, by its class name when it
#: is an object (``_routing_repr``), so that name is what is stored, and rebuilt.
_OWNED = frozenset(["sklearn.utils._metadata_requests.MetadataRequest",
                    "sklearn.utils._metadata_requests.MethodMetadataRequest"])


def _key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _owner_name(owner: Any) -> str:
    return owner if isinstance(owner, str) else type(owner).__name__


def object_class(key: object, path: str) -> type:
    """The class an ``object`` node names, from :data:`OBJECTS` only."""
    where = OBJECTS.get(key) if isinstance(key, str) else None
    if where is None:
        raise fail(path, f"object class {preview(key, 120)} is not allow-listed")
    module, name = where
    return getattr(importlib.import_module(module), name)


class _Allowed(type):
    """``isinstance(x, _AllowedObject)``: ``type(x)`` is exactly a class of :data:`OBJECTS`."""

    def __instancecheck__(cls, value: Any) -> bool:
        key = _key(type(value))
        return key in OBJECTS and object_class(key, "") is type(value)


class _AllowedObject(metaclass=_Allowed):
    pass


def _encode_object(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    state = getattr(value, "__dict__", None)
    if not isinstance(state, dict):
        raise UnsupportedTypeError(path, _key(type(value)), "the object keeps no plain attribute dict")
    key = _key(type(value))
    if key in _OWNED and "owner" in state:
        state = {**state, "owner": _owner_name(state["owner"])}
    return {
        "class": key,
        "state": {k: enc.value(v, join(path, k), 1) for k, v in sorted(state.items())},
    }


def _decode_object(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    cls = object_class(node.get("class"), path)
    state_node = node.get("state")
    if not isinstance(state_node, dict):
        raise fail(path, "'object' node needs a 'state' object")
    kwargs = state_node.get("_kwargs") if cls.__name__ in _SCORERS else None
    if kwargs is not None:  # passed to the scorer's function on every call: bounded literals, as a partial's
        why = check_literal(kwargs, path)
        if why is not None:
            raise fail(join(path, "_kwargs"), f"a scorer's keyword arguments must be bounded literals, found {why}")
    state = {}
    for name, value in state_node.items():
        check_attr_name(cls, name, {}, path)
        state[name] = dec.value(value, join(path, name), 1)
    if node["class"] in _OWNED and not isinstance(state.get("owner"), str):
        raise fail(join(path, "owner"), "a metadata request names its owner by class name")
    check_object_state(state, dec.trust, path)
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


OBJECT = register_handler(Handler("object", (_AllowedObject,), _encode_object, _decode_object,
                                  {"class": (str,), "state": (dict,)}))

#: Classes of :data:`OBJECTS` that may stand as a value themselves, not only their instances:
#: scikit-learn accepts a splitter class as ``cv`` (``cv=StratifiedKFold``) in a model saved
#: before it is fitted. Stored as ``{"__t__": "class", "v": key}``.
CLASS_VALUES = frozenset(f"sklearn.model_selection._split.{n}" for n in _SPLITTERS)


class _AllowedClass(type):
    """``isinstance(c, _ClassValue)``: ``c`` is exactly a class of :data:`CLASS_VALUES`."""

    def __instancecheck__(cls, value: Any) -> bool:
        if not isinstance(value, type):
            return False
        key = _key(value)
        return key in CLASS_VALUES and object_class(key, "") is value


class _ClassValue(metaclass=_AllowedClass):
    pass


def _encode_class(value: type, enc: Encoding, path: str) -> dict[str, Any]:
    return {"v": _key(value)}


def _decode_class(node: Mapping[str, Any], dec: Decoding, path: str) -> type:
    if node["v"] not in CLASS_VALUES:
        raise fail(path, f"class {preview(node['v'], 120)} may not stand as a value")
    return object_class(node["v"], path)


CLASS = register_handler(Handler("class", (_ClassValue,), _encode_class, _decode_class, {"v": (str,)}))
