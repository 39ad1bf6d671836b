"""The ``sgd_loss`` handler: the Cython loss objects of SGD models.

``Hinge(threshold)``, ``ModifiedHuber()``, ... are rebuilt by calling the class from
:data:`SGD_LOSSES` with at most one finite float argument.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sklearn.linear_model._sgd_fast as sgd_fast

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoder, Encoder

__all__ = ["SGD_LOSS", "SGD_LOSSES"]

#: The SGD loss classes that can be rebuilt, and how many float arguments each takes.
SGD_LOSSES: dict[str, tuple[type, int]] = {
    "Hinge": (sgd_fast.Hinge, 1),
    "SquaredHinge": (sgd_fast.SquaredHinge, 1),
    "ModifiedHuber": (sgd_fast.ModifiedHuber, 0),
    "EpsilonInsensitive": (sgd_fast.EpsilonInsensitive, 1),
    "SquaredEpsilonInsensitive": (sgd_fast.SquaredEpsilonInsensitive, 1),
}


def _encode_sgd_loss(value: Any, enc: Encoder, path: str) -> dict[str, Any]:
    name = type(value).__name__
    if SGD_LOSSES.get(name, (None,))[0] is not type(value):
        raise UnsupportedTypeError(path, f"sklearn.linear_model._sgd_fast.{name}")
    _, args = value.__reduce__()
    return {"loss": name, "args": [float(a) for a in args]}


def _decode_sgd_loss(node: Mapping[str, Any], dec: Decoder, path: str) -> Any:
    name, args = node.get("loss"), node.get("args")
    entry = SGD_LOSSES.get(name) if isinstance(name, str) else None
    if entry is None:
        raise fail(path, f"SGD loss {preview(name, 40)} is not allowed")
    cls, n_args = entry
    if not isinstance(args, list) or len(args) != n_args \
            or not all(type(a) in (int, float) and math.isfinite(a) for a in args):
        raise fail(path, f"SGD loss {name} takes {n_args} finite number(s), found {preview(args, 80)}")
    return cls(*map(float, args))


SGD_LOSS = register_handler(Handler("sgd_loss", tuple(c for c, _ in SGD_LOSSES.values()), _encode_sgd_loss,
                                    _decode_sgd_loss, {"loss": (str,), "args": (list,)}))
