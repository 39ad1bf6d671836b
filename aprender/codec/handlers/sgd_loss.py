"""The ``sgd_loss`` handler: the Cython loss objects of SGD models.

SGD classifiers and ``SGDOneClassSVM`` keep the loss they were fitted with as
``_loss_function_``: a ``sklearn.linear_model._sgd_fast`` loss (``Hinge(threshold)``,
``ModifiedHuber()``, ...) or, for ``log_loss``, ``squared_error`` and ``huber``, one of
``sklearn._loss._loss``'s (``CyHalfBinomialLoss()``, ``CyHalfSquaredError()``,
``CyHuberLoss(delta)``). Each is rebuilt by calling the class from :data:`SGD_LOSSES`,
a table written here, with its few float arguments: finite, non-negative and at most
:data:`MAX_ARGUMENT` (a threshold, an epsilon, a delta).

``partial_fit`` and ``fit`` replace ``_loss_function_`` with a loss built from the
estimator's own ``loss`` and ``epsilon`` before ``_sgd_fast`` runs, so the loaded object is
never handed to compiled code: a file can only choose among these harmless values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sklearn.linear_model._sgd_fast as sgd_fast
from sklearn._loss import _loss as cy_loss

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["MAX_ARGUMENT", "SGD_LOSS", "SGD_LOSSES"]

#: The SGD loss classes that can be rebuilt, and how many float arguments each takes
#: (scikit-learn 1.6 to 1.9 use these and no others: ``BaseSGDClassifier.loss_functions``,
#: ``BaseSGDRegressor.loss_functions``, ``SGDOneClassSVM.loss_functions``).
SGD_LOSSES: dict[str, tuple[type, int]] = {
    "Hinge": (sgd_fast.Hinge, 1),
    "SquaredHinge": (sgd_fast.SquaredHinge, 1),
    "ModifiedHuber": (sgd_fast.ModifiedHuber, 0),
    "EpsilonInsensitive": (sgd_fast.EpsilonInsensitive, 1),
    "SquaredEpsilonInsensitive": (sgd_fast.SquaredEpsilonInsensitive, 1),
    "CyHalfBinomialLoss": (cy_loss.CyHalfBinomialLoss, 0),
    "CyHalfSquaredError": (cy_loss.CyHalfSquaredError, 0),
    "CyHuberLoss": (cy_loss.CyHuberLoss, 1),
}
#: Largest argument a file may give a loss: thresholds are 0 or 1, epsilons and Huber's
#: delta are the estimator's ``epsilon`` (0.1 by default, in the units of the target).
MAX_ARGUMENT = 1e12


def _encode_sgd_loss(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    name = type(value).__name__
    if SGD_LOSSES.get(name, (None,))[0] is not type(value):
        raise UnsupportedTypeError(path, f"{type(value).__module__}.{name}")
    _, args = value.__reduce__()
    return {"loss": name, "args": [float(a) for a in args]}


def _decode_sgd_loss(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    name, args = node.get("loss"), node.get("args")
    entry = SGD_LOSSES.get(name) if isinstance(name, str) else None
    if entry is None:
        raise fail(path, f"SGD loss {preview(name, 40)} is not allowed (known: {', '.join(SGD_LOSSES)})")
    cls, n_args = entry
    if not isinstance(args, list) or len(args) != n_args or not all(
            type(a) in (int, float) and math.isfinite(a) and 0 <= a <= MAX_ARGUMENT for a in args):
        raise fail(path, f"SGD loss {name} takes {n_args} finite number(s) in [0, {MAX_ARGUMENT:g}], "
                         f"found {preview(args, 80)}")
    return cls(*map(float, args))


SGD_LOSS = register_handler(Handler("sgd_loss", tuple(c for c, _ in SGD_LOSSES.values()), _encode_sgd_loss,
                                    _decode_sgd_loss, {"loss": (str,), "args": (list,)}))
