"""ONNX converters of the mixture of experts and of its gate (registered through aprender.format.onnx's hook).

The graph is the inference algorithm of docs/schema/moe.md, with every expert's own
skl2onnx graph embedded (``OnnxSubEstimator``):

    logits = (X @ gating.weights + gating.bias) / temperature
    gates = Softmax(logits)                         # [N, K]
    values, indices = TopK(gates, top_k)            # ties: lower expert index first
    weights = ScatterElements(0, indices, values / ReduceSum(values))   # dense [N, K]
    regression:     variable = ReduceSum(expert outputs [N, K] * weights)
    classification: probabilities = ReduceSum(aligned expert probabilities [N, K, C] * weights)
                    label = classes_[ArgMax(probabilities)]

Experts a row is not routed to are evaluated too but enter with weight 0. A
``capacity_factor`` makes routing depend on the whole batch through a sequential
queue, which this graph does not express: such models are refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor, SoftmaxGating
from aprender.exceptions import UnsupportedExportError
from aprender.format.onnx._converters import register_converter
from aprender.format.onnx._inputs import label_values

__all__ = ["register"]


def _refuse_capacity(moe: Any) -> None:
    if moe.capacity_factor is not None:
        raise UnsupportedExportError(
            f"{type(moe).__name__} with capacity_factor={moe.capacity_factor!r} cannot be exported to ONNX: "
            "capacity makes each row's experts depend on the other rows of the batch (a sequential queue per "
            "expert), which the exported graph does not compute. Set capacity_factor=None before exporting."
        )


def _logits(gate: Any, X: Any, dtype: np.dtype, opv: int) -> Any:
    """(X @ weights + bias) / temperature."""
    from skl2onnx.algebra.onnx_ops import OnnxAdd, OnnxDiv, OnnxMatMul

    return OnnxDiv(
        OnnxAdd(OnnxMatMul(X, gate.weights_.astype(dtype), op_version=opv), gate.bias_.astype(dtype), op_version=opv),
        np.array([gate.temperature], dtype=dtype), op_version=opv,
    )


def _dense_weights(moe: Any, X: Any, dtype: np.dtype, opv: int) -> Any:
    """The [N, K] combination weights: gate softmax, top-k, renormalised, zero elsewhere."""
    from skl2onnx.algebra.onnx_ops import (
        OnnxDiv,
        OnnxMul,
        OnnxReduceSumApi11,
        OnnxScatterElements,
        OnnxSoftmax,
        OnnxTopK,
    )

    gates = OnnxSoftmax(_logits(moe.gating_, X, dtype, opv), axis=1, op_version=opv)
    top = OnnxTopK(gates, np.array([moe.top_k], dtype=np.int64), axis=1, largest=1, sorted=1, op_version=opv)
    kept = OnnxDiv(top[0], OnnxReduceSumApi11(top[0], axes=[1], keepdims=1, op_version=opv), op_version=opv)
    zeros = OnnxMul(gates, np.array([0], dtype=dtype), op_version=opv)
    return OnnxScatterElements(zeros, top[1], kept, axis=1, op_version=opv)


def convert_regressor(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter of :class:`MixtureOfExpertsRegressor` (output ``variable``, [N, 1])."""
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from skl2onnx.algebra.onnx_ops import OnnxConcat, OnnxIdentity, OnnxMul, OnnxReduceSumApi11
    from skl2onnx.common.data_types import guess_numpy_type

    moe, opv = operator.raw_operator, container.target_opset
    _refuse_capacity(moe)
    X = operator.inputs[0]
    dtype = guess_numpy_type(X.type)
    weights = _dense_weights(moe, X, dtype, opv)
    outputs = [OnnxSubEstimator(expert, X, op_version=opv) for expert in moe.experts_]
    stacked = OnnxConcat(*outputs, axis=1, op_version=opv) if len(outputs) > 1 else outputs[0]
    total = OnnxReduceSumApi11(OnnxMul(stacked, weights, op_version=opv), axes=[1], keepdims=1, op_version=opv)
    OnnxIdentity(total, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)


def _write_classifier_outputs(scope: Any, operator: Any, container: Any, scores: Any, proba: Any) -> None:
    """label = classes_[ArgMax(scores)] (first maximum on ties) and the probabilities."""
    from skl2onnx.algebra.onnx_ops import OnnxArgMax, OnnxGather, OnnxIdentity

    opv = container.target_opset
    labels = label_values(operator.raw_operator)
    label = OnnxGather(labels, OnnxArgMax(scores, axis=1, keepdims=0, op_version=opv), axis=0, op_version=opv)
    OnnxIdentity(label, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)
    OnnxIdentity(proba, op_version=opv, output_names=operator.outputs[1:2]).add_to(scope, container)


def convert_gating(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter of a standalone :class:`SoftmaxGating` (label and probabilities)."""
    from skl2onnx.algebra.onnx_ops import OnnxSoftmax
    from skl2onnx.common.data_types import guess_numpy_type

    X, opv = operator.inputs[0], container.target_opset
    logits = _logits(operator.raw_operator, X, guess_numpy_type(X.type), opv)
    # predict() takes the arg-max of the logits, as here
    _write_classifier_outputs(scope, operator, container, logits, OnnxSoftmax(logits, axis=1, op_version=opv))


def convert_classifier(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter of :class:`MixtureOfExpertsClassifier` (outputs label and probabilities)."""
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from skl2onnx.algebra.onnx_ops import OnnxConcat, OnnxMatMul, OnnxMul, OnnxReduceSumApi11, OnnxUnsqueezeApi11
    from skl2onnx.common.data_types import guess_numpy_type

    moe, opv = operator.raw_operator, container.target_opset
    _refuse_capacity(moe)
    X = operator.inputs[0]
    dtype = guess_numpy_type(X.type)
    n_classes = moe.classes_.shape[0]
    weights = OnnxUnsqueezeApi11(_dense_weights(moe, X, dtype, opv), axes=[2], op_version=opv)
    aligned = []
    for expert in moe.experts_:
        proba = OnnxSubEstimator(expert, X, op_version=opv, options={"zipmap": False})[1]
        # Expert column j is mixture class expert.classes_[j]: a 0/1 matrix moves it there exactly.
        placement = np.zeros((expert.classes_.shape[0], n_classes), dtype=dtype)
        placement[np.arange(expert.classes_.shape[0]), expert.classes_] = 1
        aligned.append(OnnxUnsqueezeApi11(OnnxMatMul(proba, placement, op_version=opv), axes=[1], op_version=opv))
    stacked = OnnxConcat(*aligned, axis=1, op_version=opv) if len(aligned) > 1 else aligned[0]
    proba = OnnxReduceSumApi11(OnnxMul(stacked, weights, op_version=opv), axes=[1], keepdims=0, op_version=opv)
    _write_classifier_outputs(scope, operator, container, proba, proba)


def _regressor_shape(operator: Any) -> None:
    from skl2onnx.common.shape_calculator import calculate_linear_regressor_output_shapes

    calculate_linear_regressor_output_shapes(operator)


def _classifier_shape(operator: Any) -> None:
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes

    calculate_linear_classifier_output_shapes(operator)


def register() -> None:
    """Hand the converters to :func:`aprender.format.onnx.register_converter` (no skl2onnx import)."""
    register_converter(MixtureOfExpertsRegressor, _regressor_shape, convert_regressor)
    # nocl: skl2onnx's classifier shape calculator asks for it; labels are always classes_.
    classifier_options = {"zipmap": [False, True], "nocl": [False]}
    register_converter(MixtureOfExpertsClassifier, _classifier_shape, convert_classifier, options=classifier_options)
    register_converter(SoftmaxGating, _classifier_shape, convert_gating, options=classifier_options)


register()
