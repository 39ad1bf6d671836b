"""Named handlers for the container values of fitted meta-estimators.

- ``bunch``: ``sklearn.utils.Bunch`` (``named_estimators_`` of Voting/Stacking), a dict
  whose items are encoded like a ``dict`` node's.
- ``defaultdict`` / ``ordereddict``: the standard-library dicts; a ``defaultdict``'s
  factory must be ``list``, ``dict``, ``int``, ``float`` or ``None``.
- ``masked``: ``numpy.ma.MaskedArray`` (a search's ``cv_results_["param_*"]``): its
  data (any array node) and its full boolean mask of the same shape.

SGD models' loss objects have their own module, ``sgd_loss``: it imports scikit-learn's
linear models, which a Voting model's ``Bunch`` does not need.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.utils import Bunch

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import ANY, Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BUNCH", "DEFAULTDICT", "MASKED", "ORDEREDDICT"]

_FACTORIES: dict[str, type | None] = {"list": list, "dict": dict, "int": int, "float": float, "None": None}


def _encode_items(value: Mapping[Any, Any], enc: Encoding, path: str) -> list:
    return [[enc.value(k, path, 1), enc.value(v, join(path, k), 1)] for k, v in value.items()]


def _decode_items(node: Mapping[str, Any], dec: Decoding, path: str, out: dict) -> dict:
    return out | dec.value({"__t__": "dict", "items": node.get("items")}, path, 1)


def _encode_bunch(value: Bunch, enc: Encoding, path: str) -> dict[str, Any]:
    if not all(type(k) is str for k in value):
        raise UnsupportedTypeError(path, "Bunch", "Bunch keys must be strings")
    return {"items": _encode_items(value, enc, path)}


def _decode_bunch(node: Mapping[str, Any], dec: Decoding, path: str) -> Bunch:
    items = _decode_items(node, dec, path, {})
    if not all(type(k) is str for k in items):
        raise fail(path, "Bunch keys must be strings")
    return Bunch(**items)


def _encode_defaultdict(value: defaultdict, enc: Encoding, path: str) -> dict[str, Any]:
    factory = next((k for k, f in _FACTORIES.items() if f is value.default_factory), None)
    if factory is None:
        raise UnsupportedTypeError(path, "defaultdict", f"default_factory {value.default_factory!r} is not storable")
    return {"factory": factory, "items": _encode_items(value, enc, path)}


def _decode_defaultdict(node: Mapping[str, Any], dec: Decoding, path: str) -> defaultdict:
    factory = node.get("factory")
    if factory not in _FACTORIES:
        raise fail(path, f"defaultdict factory {preview(factory, 40)} is not allowed")
    return _decode_items(node, dec, path, defaultdict(_FACTORIES[factory]))


def _encode_ordereddict(value: OrderedDict, enc: Encoding, path: str) -> dict[str, Any]:
    return {"items": _encode_items(value, enc, path)}


def _decode_ordereddict(node: Mapping[str, Any], dec: Decoding, path: str) -> OrderedDict:
    return _decode_items(node, dec, path, OrderedDict())


def _encode_masked(value: np.ma.MaskedArray, enc: Encoding, path: str) -> dict[str, Any]:
    data, mask = np.asarray(value.data), np.ma.getmaskarray(value)
    if data.dtype.kind in "biuf" and mask.any():
        # What lies under the mask is never read, and is often np.empty's leftovers (a search's
        # cv_results_["param_*"] of candidates that lack the parameter): the file gets zeros, so the
        # same model gives the same bytes, a bool tensor holds only 0 and 1, and no stale memory is written.
        data = np.where(mask, np.zeros((), dtype=data.dtype), data)
    return {"data": enc.value(data, join(path, "data"), 1), "mask": enc.value(mask, join(path, "mask"), 1)}


def _decode_masked(node: Mapping[str, Any], dec: Decoding, path: str) -> np.ma.MaskedArray:
    data = dec.value(node.get("data"), join(path, "data"), 1)
    mask = dec.value(node.get("mask"), join(path, "mask"), 1)
    if not isinstance(data, np.ndarray) or not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ \
            or mask.shape != data.shape:
        raise fail(path, "a masked array needs an array 'data' and a boolean 'mask' of the same shape")
    return np.ma.MaskedArray(data, mask=mask)


MASKED = register_handler(Handler("masked", (np.ma.MaskedArray,), _encode_masked, _decode_masked,
                                  {"data": ANY, "mask": ANY}))
BUNCH = register_handler(Handler("bunch", (Bunch,), _encode_bunch, _decode_bunch, {"items": (list,)}))
DEFAULTDICT = register_handler(Handler("defaultdict", (defaultdict,), _encode_defaultdict, _decode_defaultdict,
                                       {"factory": (str,), "items": (list,)}))
ORDEREDDICT = register_handler(Handler("ordereddict", (OrderedDict,), _encode_ordereddict, _decode_ordereddict,
                                       {"items": (list,)}))
