"""Progressive (layer-wise) distillation between multi-layer perceptrons (private).

For each pair ``student_layer:teacher_layer`` of the layer map, in order, the
student's hidden layers up to ``student_layer`` are trained (as an MLPRegressor whose
output layer is a learned linear projection) to reproduce the teacher's pre-activations
of hidden layer ``teacher_layer`` on the transfer set -- the "hints" of FitNets
(Romero et al., 2015). Each stage starts from the layers the previous stage learned;
the full student then starts from them too when it is fitted on the soft targets.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from aprender.exceptions import DistillationError

__all__ = ["hidden_sizes", "hint_layers", "is_mlp", "parse_layer_map", "pre_activations", "warm_fit"]

_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "identity": lambda z: z,
    "logistic": expit,
    "tanh": np.tanh,
    "relu": lambda z: np.maximum(z, 0.0),
}


def is_mlp(model: Any) -> bool:
    """Whether ``model`` is a scikit-learn (or aprender) multi-layer perceptron."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    return isinstance(model, (MLPClassifier, MLPRegressor))


def hidden_sizes(mlp: Any) -> list[int]:
    sizes = mlp.hidden_layer_sizes
    return [int(s) for s in (sizes if hasattr(sizes, "__iter__") else [sizes])]


def parse_layer_map(layer_map: str | None, n_student: int, n_teacher: int) -> list[tuple[int, int]]:
    """Pairs ``(student_layer, teacher_layer)`` of hidden-layer indices from ``"0:0,1:2"``.

    ``None`` pairs every student hidden layer with the teacher's layer at the same
    relative depth. Both sides must be in range and strictly increasing.
    """
    if layer_map is None:
        last = max(n_student - 1, 1)
        return [(s, round(s * (n_teacher - 1) / last)) for s in range(n_student)]
    pairs = []
    for item in str(layer_map).split(","):
        parts = item.strip().split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise DistillationError(f"layer map item {item.strip()!r} is not 'student:teacher' (e.g. '0:0,1:2')")
        pairs.append((int(parts[0]), int(parts[1])))
    for s, t in pairs:
        if s >= n_student or t >= n_teacher:
            raise DistillationError(
                f"layer map pair {s}:{t} is out of range: the student has {n_student} hidden layers "
                f"and the teacher {n_teacher} (indices start at 0)"
            )
    for (s0, t0), (s1, t1) in itertools.pairwise(pairs):
        if s1 <= s0 or t1 <= t0:
            raise DistillationError(f"layer map pairs must increase on both sides: {s0}:{t0} then {s1}:{t1}")
    return pairs


def pre_activations(mlp: Any, X: np.ndarray) -> list[np.ndarray]:
    """The fitted MLP's hidden layers on ``X``, before their activation function.

    The hints are these rather than the activations: a ReLU layer's zeros carry no
    gradient, and regressing onto them killed every unit of small student layers.
    """
    activation = _ACTIVATIONS[mlp.activation]
    out, h = [], X
    for W, b in zip(mlp.coefs_[:-1], mlp.intercepts_[:-1], strict=True):
        z = h @ W + b
        out.append(z)
        h = activation(z)
    return out


def warm_fit(model: Any, X: np.ndarray, y: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]],
             **fit_params: Any) -> Any:
    """Fit the MLP ``model`` starting from ``layers`` (weight, bias) for its first layers.

    One iteration builds the network's shapes; the given layers replace the first
    ones; ``warm_start`` then continues from them with the model's own ``max_iter``.
    ``warm_start`` and ``max_iter`` are restored afterwards.
    """
    if not layers:
        return model.fit(X, y, **fit_params)
    params = model.get_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.set_params(max_iter=1, warm_start=False).fit(X, y, **fit_params)
    for i, (W, b) in enumerate(layers):
        model.coefs_[i] = W.copy()
        model.intercepts_[i] = b.copy()
    model.set_params(max_iter=params["max_iter"], warm_start=True).fit(X, y, **fit_params)
    return model.set_params(warm_start=params["warm_start"])


def hint_layers(
    student: Any, teacher: Any, X: np.ndarray, pairs: list[tuple[int, int]], phase: Callable[[str], None]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train the student's hidden layers on the teacher's hints; return them as (weight, bias)."""
    from aprender.neural_network import MLPRegressor

    hints = pre_activations(teacher, X)
    sizes = hidden_sizes(student)
    keep = {k: v for k, v in student.get_params().items() if k in MLPRegressor().get_params()}
    layers: list[tuple[np.ndarray, np.ndarray]] = []
    for s, t in pairs:
        phase(f"matching student layer {s} to teacher layer {t}")
        stage = clone(MLPRegressor(**{**keep, "hidden_layer_sizes": tuple(sizes[: s + 1]), "early_stopping": False}))
        spread = hints[t].std(axis=0)
        warm_fit(stage, X, hints[t] / np.where(spread > 0, spread, 1.0), layers)  # unit scale per column
        layers = list(zip(stage.coefs_[: s + 1], stage.intercepts_[: s + 1], strict=True))
    return layers
