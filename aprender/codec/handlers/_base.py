"""Named handlers for values that are neither JSON nor plain arrays.

Each handler owns one tag in the metadata tree and knows how to split its values
into tensors plus metadata and how to check and rebuild them. A value whose type has
no handler is refused by the encoder; a tag with no handler is refused by the decoder.

Handler modules are imported on first need, not with the codec: some of them import
scipy.interpolate or scikit-learn's neighbors, which a file that holds no such value
should not pay for. :data:`TAG_MODULES` says which module registers each tag (the
decoder imports it when a file names the tag), :data:`TYPE_ROOTS` which modules a
handler's types are defined under (the encoder imports a handler module when a value's
class, or one of its bases, comes from one of them). Both are checked against the
registrations by tests/test_lazy_imports.py.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join

__all__ = ["ANY", "NULL", "TAG_MODULES", "TENSOR", "TYPE_ROOTS", "Decoding", "Encoding", "Fields", "Handler",
           "for_tag", "for_value", "register_handler", "tensor_field"]

_PACKAGE = "aprender.codec.handlers"

#: Tag -> the handler module (under aprender.codec.handlers) that registers it, in the
#: order the encoder tries the handlers.
TAG_MODULES: dict[str, str] = {
    "binary_tree": "binary_tree",
    "interp1d": "interpolate",
    "bspline": "interpolate",
    "masked": "containers",
    "bunch": "containers",
    "defaultdict": "containers",
    "ordereddict": "containers",
    "sgd_loss": "sgd_loss",
    "column_selector": "column_selector",
    "distribution": "distributions",
    "imputer_triplet": "impute",
    "pandas_missing": "pandas_missing",
    "partial": "functions",
    "function": "functions",
    "sklearn_loss": "loss",
    "callback": "callbacks",
    "object": "objects",
    "class": "objects",
    "random_state": "random_state",
    "records": "records",
    "numpy_generator": "rng",
    "coo": "sparse",
    "sparse": "sparse",
    "slice": "std",
    "dtype": "std",
    "set": "std",
    "range": "std",
    "datetime": "std",
    "sklearn_tree": "tree",
    "catboost_booster": "catboost_booster",
    "xgboost_booster": "xgboost_booster",
    "lightgbm_booster": "lightgbm_booster",
}

#: Handler module -> the modules its handlers' types are defined under (a prefix covers
#: its submodules). A value can be an instance of such a type only when a class of its
#: MRO comes from one of them, and that module is then imported already.
TYPE_ROOTS: dict[str, tuple[str, ...]] = {
    "binary_tree": ("sklearn.neighbors",),
    "callbacks": ("sklearn.callback",),
    "catboost_booster": ("_catboost",),  # CatBoost's compiled module, top-level
    "column_selector": ("sklearn.compose",),
    "containers": ("numpy.ma", "collections", "sklearn.utils"),
    "distributions": ("scipy.stats",),
    "impute": ("sklearn.impute",),
    "interpolate": ("scipy.interpolate",),
    "functions": ("builtins", "functools", "numpy", "joblib"),
    "loss": ("sklearn._loss",),
    "objects": ("sklearn",),
    "pandas_missing": ("pandas",),
    "random_state": ("numpy.random",),
    "records": (),
    "rng": ("numpy.random",),
    # scikit-learn 1.6 builds its Cython losses' module as a top-level "_loss".
    "sgd_loss": ("sklearn.linear_model", "sklearn._loss", "_loss"),
    "sparse": ("scipy.sparse",),
    "std": ("builtins", "numpy"),
    "tree": ("sklearn.tree",),
    "xgboost_booster": ("xgboost",),
    "lightgbm_booster": ("lightgbm",),
}
_ORDER = {tag: i for i, tag in enumerate(TAG_MODULES)}

#: A field that may be absent or ``null`` lists ``NULL`` among its JSON types.
NULL: type = type(None)
#: A field holding any value node, decoded further by the handler (``dec.value``).
ANY: tuple[type, ...] = (object,)
#: A tensor reference (``{"__t__": "tensor", ...}``), resolved with :func:`tensor_field`.
TENSOR: tuple[type, ...] = (dict,)
#: Field name -> the JSON types (``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, ``NULL``) it may have.
Fields = Mapping[str, tuple[type, ...]]
_JSON_TYPES = frozenset([str, int, float, bool, list, dict, NULL, object])


class Encoding(Protocol):
    """What a handler's ``encode`` may call on the encoder (``aprender.codec._encode.Encoder``).

    Handlers type against these two protocols rather than the encoder and decoder
    classes, which import the handlers: the codec's modules then import one way.
    """

    def tensor(self, array: np.ndarray, name: str, *, scalar: type | None = None) -> dict[str, Any]:
        """Store ``array`` as the tensor ``name``; the reference node to put in the metadata."""
        ...

    def value(self, value: Any, path: str, depth: int) -> Any:
        """The metadata node of any value, nested ``depth`` levels deep."""
        ...


class Decoding(Protocol):
    """What a handler's ``decode`` may use of the decoder (``aprender.codec._decode.Decoder``)."""

    #: The load's ``aprender.codec.trust.Trust``: the functions and hyperparameters the caller trusted.
    trust: Any

    def tensor(self, node: Mapping[str, Any], path: str) -> Any:
        """The tensor a reference node names, checked."""
        ...

    def value(self, node: Any, path: str, depth: int) -> Any:
        """The value of any metadata node, checked, nested ``depth`` levels deep."""
        ...


@dataclass(frozen=True)
class Handler:
    """Encode/decode pair for one family of Python types.

    ``fields`` declares every field of the tag's nodes and the JSON types each may
    have. The decoder checks a node against it before ``decode`` sees the node, so
    ``decode`` can use every declared field at its declared type; a field that is not
    declared is refused.
    """

    tag: str
    types: tuple[type, ...]
    encode: Callable[[Any, Encoding, str], dict[str, Any]]
    decode: Callable[[Mapping[str, Any], Decoding, str], Any]
    fields: Fields


#: Tag -> handler. Replaced whole, never changed in place: a load in another thread reads
#: one consistent table while a handler module registers.
_HANDLERS: dict[str, Handler] = {}
_LOCK = threading.Lock()


def register_handler(handler: Handler) -> Handler:
    """Add a handler; a tag can be registered once, with a declaration of its node fields."""
    global _HANDLERS
    with _LOCK:
        if handler.tag in _HANDLERS:
            raise ValueError(f"handler tag '{handler.tag}' is already registered")
        if not isinstance(handler.fields, Mapping) or not handler.fields or "__t__" in handler.fields or not all(
            isinstance(kinds, tuple) and kinds and set(kinds) <= _JSON_TYPES for kinds in handler.fields.values()
        ):
            raise ValueError(f"handler '{handler.tag}' must declare its node fields as {{name: (JSON types...)}}")
        # The encoder tries handlers in one order, whichever modules happened to be imported first.
        ordered = sorted([*_HANDLERS.values(), handler], key=lambda h: _ORDER.get(h.tag, len(_ORDER)))
        _HANDLERS = {h.tag: h for h in ordered}
    return handler


def _import(module: str) -> None:
    # import_module, not a look in sys.modules: while another thread runs a handler module,
    # the module is in sys.modules before its handlers are registered, and import_module waits.
    importlib.import_module(f"{_PACKAGE}.{module}")


def _matching(handlers: Any, value: Any) -> Handler | None:
    for handler in handlers:
        if isinstance(value, handler.types):
            return handler
    return None


def for_value(value: Any) -> Handler | None:
    """The handler for ``value``'s type, if any, importing the handler modules its classes may need."""
    handler = _matching(_HANDLERS.values(), value)
    if handler is not None:
        return handler
    homes = {c.__module__ for c in type(value).__mro__}
    candidates = [module for module, roots in TYPE_ROOTS.items()
                  if any(home == root or home.startswith(root + ".") for home in homes for root in roots)]
    for module in candidates:
        _import(module)
    return _matching(_HANDLERS.values(), value) if candidates else None


def for_tag(tag: str) -> Handler | None:
    """The handler that owns ``tag``, if any; its module is imported on the first file that names it."""
    handler = _HANDLERS.get(tag)
    if handler is None and tag in TAG_MODULES:
        _import(TAG_MODULES[tag])
        handler = _HANDLERS.get(tag)
    return handler


def tensor_field(dec: Decoding, node: Mapping[str, Any], field: str, path: str, kinds: str) -> np.ndarray:
    ref = node.get(field)
    if not isinstance(ref, dict) or ref.get("__t__") != "tensor":
        raise fail(path, f"'{field}' must be a tensor reference")
    array = dec.tensor(ref, join(path, field))
    if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds:
        raise fail(path, f"'{field}' has dtype {getattr(array, 'dtype', type(array))}, expected kind {kinds!r}")
    return array
