"""Schemas of the multi-layer perceptrons (type 0x0020, NeuralSequential in the Rust aprender library).

Layer ``i`` is stored as ``layers.{i}.weight`` (``coefs_[i]``, ``[fan_in, fan_out]``)
and ``layers.{i}.bias`` (``intercepts_[i]``). Two training internals are rebuilt rather
than allow-listed, exactly and from a small state:

- ``_label_binarizer``: MLPClassifier always creates a default ``LabelBinarizer`` whose
  ``classes_`` equals its own ``classes_``, so only ``y_type_`` and ``sparse_input_`` are kept;
- ``_optimizer``: the Adam/SGD state (step count, moment or velocity arrays, learning
  rate), so that ``partial_fit`` after loading continues exactly as without saving.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import neural_network as sk
from sklearn.neural_network._stochastic_optimizers import AdamOptimizer, SGDOptimizer
from sklearn.preprocessing import LabelBinarizer

from aprender import neural_network as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail, n_features
from aprender.codec.schemas._model_checks import choice, class_labels, integer, is_fitted, real
from aprender.exceptions import UnsupportedTypeError

LAYER_ALIASES = {"coefs_": "layers.{i}.weight", "intercepts_": "layers.{i}.bias"}

_ACTIVATIONS = ("identity", "exp", "tanh", "logistic", "relu", "softmax")
_Y_TYPES = ("binary", "multiclass", "multilabel-indicator")
_BINARIZER_FIELDS = {"neg_label", "pos_label", "sparse_output", "classes_", "y_type_", "sparse_input_"}

#: kind -> (class, scalar fields, per-parameter array lists)
_OPTIMIZERS: dict[str, tuple[type, tuple[str, ...], tuple[str, ...]]] = {
    "adam": (AdamOptimizer, ("learning_rate_init", "learning_rate", "beta_1", "beta_2", "epsilon", "t"), ("ms", "vs")),
    "sgd": (SGDOptimizer, ("learning_rate_init", "learning_rate", "momentum", "power_t"), ("velocities",)),
}
_SGD_FLAGS = {"lr_schedule": str, "nesterov": bool}
#: Early stopping leaves coefs_ and _best_coefs as one list; the marker keeps that identity.
_SHARED = {"_best_coefs": "coefs_", "_best_intercepts": "intercepts_"}


# -- pack / unpack ------------------------------------------------------------------


def _same_labels(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)


def _pack_binarizer(lb: Any, classes: Any) -> dict[str, Any]:
    default = type(lb) is LabelBinarizer and lb.get_params() == LabelBinarizer().get_params()
    if not default or set(vars(lb)) != _BINARIZER_FIELDS or not _same_labels(lb.classes_, classes):
        raise UnsupportedTypeError("_label_binarizer", type(lb).__name__,
                                   "only the default LabelBinarizer that fit() creates is stored")
    return {"y_type_": lb.y_type_, "sparse_input_": lb.sparse_input_}


def _pack_optimizer(opt: Any) -> dict[str, Any]:
    for kind, (cls, scalars, lists) in _OPTIMIZERS.items():
        fields = set(scalars) | set(lists) | (set(_SGD_FLAGS) if kind == "sgd" else set())
        if type(opt) is cls and set(vars(opt)) == fields:
            return {"kind": kind, **vars(opt)}
    raise UnsupportedTypeError("_optimizer", type(opt).__name__, "unknown optimizer state")


def pack_mlp(state: dict[str, Any]) -> dict[str, Any]:
    """Replace the label binarizer and optimizer objects by their plain state."""
    state = dict(state)
    for best, current in _SHARED.items():
        if best in state and state[best] is state.get(current):
            state[best] = current
    if state.get("_label_binarizer") is not None:
        state["_label_binarizer"] = _pack_binarizer(state["_label_binarizer"], state.get("classes_"))
    if state.get("_optimizer") is not None:
        state["_optimizer"] = _pack_optimizer(state["_optimizer"])
    return state


def unpack_mlp(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Rebuild the label binarizer and optimizer from their validated state."""
    if not is_fitted(attrs):
        return attrs
    attrs = dict(attrs)
    for best, current in _SHARED.items():
        if type(attrs.get(best)) is str:
            attrs[best] = attrs[current]
    if attrs.get("_label_binarizer") is not None:
        lb = LabelBinarizer()
        lb.classes_ = attrs["classes_"]
        lb.__dict__.update(attrs["_label_binarizer"])
        attrs["_label_binarizer"] = lb
    if attrs.get("_optimizer") is not None:
        state = dict(attrs["_optimizer"])
        optimizer = _OPTIMIZERS[state.pop("kind")][0](params=[])
        optimizer.__dict__.update(state)
        attrs["_optimizer"] = optimizer
    return attrs


# -- validation ---------------------------------------------------------------------


def _arrays(attrs: Mapping[str, Any], name: str, path: str, count: int, ndim: int) -> list[np.ndarray]:
    value = attrs.get(name)
    if type(value) is not list or len(value) != count:
        raise fail(path, f"'{name}' must be a list of {count} arrays (n_layers_ - 1)")
    for i, a in enumerate(value):
        if not isinstance(a, np.ndarray) or a.ndim != ndim or a.dtype.kind != "f":
            raise fail(path, f"'{name}[{i}]' must be a {ndim}-d float array")
    return value


def _check_layers(attrs: Mapping[str, Any], path: str) -> list[tuple[int, ...]]:
    """The layers chain n_features_in_ -> ... -> n_outputs_; returns the parameter shapes."""
    n_layers = integer(attrs, "n_layers_", path, low=2)
    n_outputs = integer(attrs, "n_outputs_", path, low=1)
    coefs = _arrays(attrs, "coefs_", path, n_layers - 1, 2)
    intercepts = _arrays(attrs, "intercepts_", path, n_layers - 1, 1)
    fan_in = n_features(attrs, path)
    source = f"n_features_in_ is {fan_in}"
    for i, (w, b) in enumerate(zip(coefs, intercepts, strict=True)):
        if w.shape[0] != fan_in:
            raise fail(path, f"layers do not chain: layer {i} weight is {list(w.shape)} but {source}")
        if b.shape != (w.shape[1],):
            raise fail(path, f"layer {i} bias is {list(b.shape)} but its weight is {list(w.shape)}")
        if w.dtype != coefs[0].dtype or b.dtype != coefs[0].dtype:
            raise fail(path, f"layer {i} is {w.dtype}/{b.dtype}, expected {coefs[0].dtype} like layer 0")
        fan_in, source = w.shape[1], f"layer {i} has {w.shape[1]} outputs"
    if fan_in != n_outputs:
        raise fail(path, f"the last layer has {fan_in} outputs but n_outputs_ is {n_outputs}")
    choice(attrs, "out_activation_", path, _ACTIVATIONS)
    return [w.shape for w in coefs] + [b.shape for b in intercepts]


def _check_same_shapes(value: Any, name: str, shapes: list[tuple[int, ...]], path: str) -> None:
    if type(value) is not list or [getattr(a, "shape", None) for a in value] != shapes:
        raise fail(path, f"'{name}' must hold one float array per layer parameter, shaped {shapes}")
    if not all(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in value):
        raise fail(path, f"'{name}' must hold float arrays")


def _check_best(attrs: Mapping[str, Any], shapes: list[tuple[int, ...]], path: str) -> None:
    n = len(shapes) // 2
    for (best, current), part in zip(_SHARED.items(), (shapes[:n], shapes[n:]), strict=True):
        value = attrs.get(best)
        if best in attrs and not (type(value) is str and value == current):
            _check_same_shapes(value, best, part, path)


def _check_optimizer(attrs: Mapping[str, Any], shapes: list[tuple[int, ...]], path: str) -> None:
    state = attrs.get("_optimizer")
    if state is None:
        return
    where = f"{path}._optimizer" if path else "_optimizer"
    kind = state.get("kind") if type(state) is dict else None
    if kind not in _OPTIMIZERS:
        raise fail(where, "must be {'kind': 'adam' | 'sgd', ...}")
    _, scalars, lists = _OPTIMIZERS[kind]
    flags = _SGD_FLAGS if kind == "sgd" else {}
    if set(state) != {"kind", *scalars, *lists, *flags}:
        raise fail(where, f"fields {sorted(state)} do not match the {kind} optimizer")
    for name in scalars:
        if not real(state[name]):
            raise fail(where, f"'{name}' must be a number")
    for name, cls in flags.items():
        if type(state[name]) is not cls:
            raise fail(where, f"'{name}' must be a {cls.__name__}")
    for name in lists:
        _check_same_shapes(state[name], name, shapes, where)


def _check_binarizer(attrs: Mapping[str, Any], path: str) -> None:
    n_classes, n_outputs = class_labels(attrs, path), attrs["n_outputs_"]
    state = attrs.get("_label_binarizer")
    where = f"{path}._label_binarizer" if path else "_label_binarizer"
    if type(state) is not dict or set(state) != {"y_type_", "sparse_input_"}:
        raise fail(where, "must be {'y_type_': ..., 'sparse_input_': ...}")
    y_type = choice(state, "y_type_", where, _Y_TYPES)
    if type(state["sparse_input_"]) is not bool:
        raise fail(where, "'sparse_input_' must be a bool")
    expected = 1 if y_type == "binary" else n_classes
    if n_outputs != expected or (y_type == "binary" and n_classes > 2):
        raise fail(path, f"{n_classes} classes ({y_type}) cannot produce {n_outputs} output units")


def check_mlp_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Layer shapes chain from n_features_in_ to n_outputs_; training state matches them."""
    shapes = _check_layers(attrs, path)
    _check_best(attrs, shapes, path)
    _check_optimizer(attrs, shapes, path)


def check_mlp_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for the regressor, and the output units match classes_ and the target type."""
    check_mlp_regressor(params, attrs, path)
    _check_binarizer(attrs, path)


#: What only partial_fit / warm-start training reads: the optimizer's moments, the best-loss
#: snapshot and its counters, the loss curves and the training random state.
TRAINING_ONLY = ("_optimizer", "_best_coefs", "_best_intercepts", "_no_improvement_count", "_random_state",
                 "loss_curve_", "validation_scores_", "best_loss_", "best_validation_score_", "t_")


def _spec(validate: Any) -> Spec:
    return Spec(ModelType.NEURAL_SEQUENTIAL, LAYER_ALIASES, quantizable=("coefs_",), validate=validate,
                pack=pack_mlp, unpack=unpack_mlp, training_only=TRAINING_ONLY)


SCHEMAS = [
    ((ap.MLPClassifier, sk.MLPClassifier), _spec(check_mlp_classifier)),
    ((ap.MLPRegressor, sk.MLPRegressor), _spec(check_mlp_regressor)),
]
