"""Named handler for scikit-learn's loss objects (``sklearn._loss.loss``).

Gradient boosting keeps its loss as ``_loss``: a Python object wrapping a Cython
loss and a link function. It is stored by class name plus the few numbers that
configure it (quantile, Huber's fitted delta, Tweedie power, number of classes) and
rebuilt through its own constructor; only the classes listed here are accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sklearn._loss import loss as _loss

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["LOSS_CLASSES"]

_Reader = Callable[[Any], Any]
_quantile: _Reader = lambda loss: float(loss.closs.quantile)  # noqa: E731
_power: _Reader = lambda loss: float(loss.closs.power)  # noqa: E731

#: Class name -> (class, {constructor option: how to read it from a loss object}).
LOSS_CLASSES: dict[str, tuple[type, dict[str, _Reader]]] = {
    "HalfSquaredError": (_loss.HalfSquaredError, {}),
    "AbsoluteError": (_loss.AbsoluteError, {}),
    "PinballLoss": (_loss.PinballLoss, {"quantile": _quantile}),
    "HuberLoss": (_loss.HuberLoss, {"quantile": lambda loss: float(loss.quantile),
                                    "delta": lambda loss: float(loss.closs.delta)}),
    "HalfPoissonLoss": (_loss.HalfPoissonLoss, {}),
    "HalfGammaLoss": (_loss.HalfGammaLoss, {}),
    "HalfTweedieLoss": (_loss.HalfTweedieLoss, {"power": _power}),
    "HalfTweedieLossIdentity": (_loss.HalfTweedieLossIdentity, {"power": _power}),
    "HalfBinomialLoss": (_loss.HalfBinomialLoss, {}),
    "HalfMultinomialLoss": (_loss.HalfMultinomialLoss, {"n_classes": lambda loss: int(loss.n_classes)}),
    "ExponentialLoss": (_loss.ExponentialLoss, {}),
}
#: Caches some losses keep for array-API inputs; they must be empty to be stored.
_CACHES = ("xp", "device", "class_indexing_offsets", "y_true_int", "y_true_one_hot")


def _encode_loss(loss: Any, enc: Encoding, path: str) -> dict[str, Any]:
    name = type(loss).__name__
    if LOSS_CLASSES.get(name, (None,))[0] is not type(loss):
        raise UnsupportedTypeError(path, f"{type(loss).__module__}.{name}", "not a supported scikit-learn loss")
    if any(getattr(loss, cache, None) is not None for cache in _CACHES):
        raise UnsupportedTypeError(path, name, "the loss holds array-API state")
    options = {option: read(loss) for option, read in LOSS_CLASSES[name][1].items()}
    return {"class": name, "options": options, "constant_hessian": bool(loss.constant_hessian)}


def _decode_loss(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    name, options, constant = node["class"], node["options"], node["constant_hessian"]
    if name not in LOSS_CLASSES:
        raise fail(path, f"unknown loss {preview(name, 80)}")
    cls, readers = LOSS_CLASSES[name]
    if options.keys() != readers.keys():
        raise fail(path, f"{name} needs exactly the options {sorted(readers)} and a bool 'constant_hessian'")
    for option, value in options.items():
        valid = type(value) is int and value >= 2 if option == "n_classes" else (
            type(value) is float and math.isfinite(value))
        if not valid:
            raise fail(path, f"{name} option '{option}' has an invalid value {preview(value)}")
    try:
        loss = cls(sample_weight=None, **options)
    except (TypeError, ValueError) as exc:
        raise fail(path, f"invalid {name}: {exc}") from None
    # Without sample weights some losses have a constant hessian; with them, never.
    if constant and not loss.constant_hessian:
        raise fail(path, f"{name} never has a constant hessian")
    loss.constant_hessian = constant
    return loss


register_handler(Handler("sklearn_loss", (_loss.BaseLoss,), _encode_loss, _decode_loss,
                          {"class": (str,), "options": (dict,), "constant_hessian": (bool,)}))
