"""Schemas of the mixture of experts (type 0x0040, the Rust aprender library's MixtureOfExperts) and its gate.

One file holds the whole mixture: the fitted experts' tensors under ``experts.{i}.``
(each expert with its own schema: ``experts.0.coefficients``) and the gate's under
``gating.`` (``gating.weights``, ``gating.bias``). The validators prove before anything
is built that the expert count, the gate's shape and ``top_k`` agree, and that every
classification expert's classes index into the mixture's ``classes_``.
docs/schema/moe.md describes the layout and the inference algorithm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
from aprender.codec._nodes import join
from aprender.codec.schemas._model_checks import class_labels
from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor, SoftmaxGating

GATING_ALIASES = {"weights_": "weights", "bias_": "bias"}
MOE_ALIASES = {"experts_": "experts", "gating_": "gating"}


def check_gating(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """weights_ is (n_features, n_experts), bias_ (n_experts,), one class label per expert."""
    n = n_features(attrs, path)
    k = class_labels(attrs, path)
    array(attrs, "weights_", path, ndim=(2,), shape={0: n, 1: k})
    array(attrs, "bias_", path, ndim=(1,), shape={0: k})


def _experts(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, n: int, method: str) -> list:
    experts = attrs.get("experts_")
    if not isinstance(experts, list) or not experts:
        raise fail(path, "'experts_' must be a non-empty list of fitted experts")
    for i, expert in enumerate(experts):
        if not hasattr(expert, method):
            raise fail(join(path, f"experts.{i}"), f"{type(expert).__name__} has no {method}()")
        if not any(k.endswith("_") and not k.startswith("__") for k in vars(expert)):
            raise fail(join(path, f"experts.{i}"), f"expert {type(expert).__name__} is not fitted")
        if getattr(expert, "n_features_in_", n) != n:
            raise fail(join(path, f"experts.{i}"), f"expert expects {expert.n_features_in_} features, the mixture {n}")
    declared = params.get("experts")
    if isinstance(declared, list) and len(declared) != len(experts):
        raise fail(path, f"the 'experts' hyperparameter lists {len(declared)} estimators, {len(experts)} are fitted")
    if declared is None and params.get("n_experts") != len(experts):
        raise fail(path, f"n_experts={params.get('n_experts')!r} but {len(experts)} experts are fitted")
    return experts


def _check_gate(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, n: int, k: int) -> None:
    gate = attrs.get("gating_")
    where = join(path, "gating")
    if not isinstance(gate, SoftmaxGating) or not isinstance(getattr(gate, "weights_", None), np.ndarray):
        raise fail(where, f"'gating_' must be a fitted SoftmaxGating, found {type(gate).__name__}")
    if gate.weights_.shape != (n, k):
        raise fail(where, f"gate weights have shape {gate.weights_.shape}; {n} features and {k} experts need {(n, k)}")
    top_k = params.get("top_k")
    if type(top_k) is not int or not 1 <= top_k <= k:
        raise fail(path, f"top_k={top_k!r} must lie in [1, {k}] for {k} experts")


def _check_mixture(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, method: str) -> list:
    n = n_features(attrs, path)
    experts = _experts(params, attrs, path, n, method)
    _check_gate(params, attrs, path, n, len(experts))
    return experts


def check_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Experts, gate and top_k agree; one noise variance per expert."""
    experts = _check_mixture(params, attrs, path, "predict")
    array(attrs, "noise_variance_", path, ndim=(1,), shape={0: len(experts)})


def check_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Experts, gate and top_k agree; each expert's classes are distinct indices into classes_."""
    experts = _check_mixture(params, attrs, path, "predict_proba")
    n_classes = class_labels(attrs, path, minimum=2)
    for i, expert in enumerate(experts):
        labels = getattr(expert, "classes_", None)
        valid = isinstance(labels, np.ndarray) and labels.ndim == 1 and labels.dtype.kind in "iu" and labels.size > 0
        if not valid or labels.min() < 0 or labels.max() >= n_classes or np.any(np.diff(labels.astype(np.int64)) <= 0):
            raise fail(join(path, f"experts.{i}"),
                       f"classes_ must be increasing class indices in [0, {n_classes}), found {labels!r}"[:300])


SCHEMAS = [
    ((SoftmaxGating,), Spec(ModelType.MIXTURE_OF_EXPERTS, GATING_ALIASES, ("weights_",), check_gating)),
    ((MixtureOfExpertsRegressor,), Spec(ModelType.MIXTURE_OF_EXPERTS, MOE_ALIASES, validate=check_regressor)),
    ((MixtureOfExpertsClassifier,), Spec(ModelType.MIXTURE_OF_EXPERTS, MOE_ALIASES, validate=check_classifier)),
]

