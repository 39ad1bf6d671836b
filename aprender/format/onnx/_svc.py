"""ONNX converter of SVC and NuSVC computing their decision values in double.

skl2onnx 1.20 writes ONNX-ML's ``SVMClassifier``, whose support vectors and coefficients
are float32 attributes and which ONNX Runtime runs in float32 whatever the input type. A
polynomial kernel makes large terms that cancel: the gallery's iris SVC got 1 of 150
labels wrong and decision values 1.3e-3 off; a binary degree-5 kernel with C=100 gets
31 of 100 labels wrong here, in float32 and float64 alike. This converter computes
libsvm's one-vs-one decision values from standard operators in double (the kernel is
``_svr.svm_kernel``)::

    dec[:, (i, j)] = K[:, SV of i] @ coef[j-1, SV of i] + K[:, SV of j] @ coef[i, SV of j] + b[(i, j)]

and from them what scikit-learn returns: labels by libsvm's votes (``dec > 0`` votes for
``i``; ties to the lowest class), ``decision_function`` as ``-dec`` for two classes (laid out
``[d, -d]``, or ``[-d, d]`` with ``raw_scores``, as skl2onnx does), the pairwise values for
``decision_function_shape="ovo"``, and otherwise scikit-learn's ``_ovr_decision_function``: votes plus
``s / (3 (|s| + 1))`` with ``s`` the summed signed confidences. Models with
``probability=True`` keep skl2onnx's converter (libsvm's pairwise coupling).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from aprender.format.onnx._converters import replace_converter
from aprender.format.onnx._svr import dense, svm_kernel

__all__ = ["register"]


def _pairs(est: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights ``[n_SV, n_pairs]``, and the pair -> class matrices of the first and second class."""
    n = len(est.classes_)
    starts = np.r_[0, np.cumsum(est.n_support_)]
    coef = dense(est._dual_coef_)
    pairs = list(combinations(range(n), 2))
    weights = np.zeros((coef.shape[1], len(pairs)))
    first, second = np.zeros((len(pairs), n)), np.zeros((len(pairs), n))
    for p, (i, j) in enumerate(pairs):
        si, sj = slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1])
        weights[si, p], weights[sj, p] = coef[j - 1, si], coef[i, sj]
        first[p, i], second[p, j] = 1.0, 1.0
    return weights, first, second


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter: ``label`` and ``probabilities`` (= ``decision_function``) computed in double."""
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_ops import (
        OnnxAbs,
        OnnxAdd,
        OnnxArgMax,
        OnnxCast,
        OnnxConcat,
        OnnxDiv,
        OnnxGather,
        OnnxGreater,
        OnnxGreaterOrEqual,
        OnnxIdentity,
        OnnxMatMul,
        OnnxMul,
        OnnxNeg,
    )
    from skl2onnx.common.data_types import guess_proto_type
    from skl2onnx.operator_converters.support_vector_machines import convert_sklearn_svm_classifier

    from aprender.format.onnx._inputs import label_values

    est, opv = operator.raw_operator, container.target_opset
    if est.probability is True:  # scikit-learn 1.9 deprecates the parameter: its default is a marker string
        convert_sklearn_svm_classifier(scope, operator, container)
        return
    X = OnnxCast(operator.inputs[0], to=TensorProto.DOUBLE, op_version=opv)
    weights, first, second = _pairs(est)
    dec = OnnxAdd(OnnxMatMul(svm_kernel(est, X, opv), weights, op_version=opv),
                  dense(est._intercept_), op_version=opv)  # [N, n_pairs]

    def votes(won: Any) -> Any:  # class votes when "won" says the pair's first class wins
        return OnnxAdd(OnnxMatMul(OnnxCast(won, to=TensorProto.DOUBLE, op_version=opv), first - second,
                                  op_version=opv), second.sum(axis=0), op_version=opv)

    zero = np.array([0.0])
    libsvm_votes = votes(OnnxGreater(dec, zero, op_version=opv))
    if len(est.classes_) == 2:  # decision_function is -dec; raw_scores (asked by calibration, OvR) flips it
        negated = OnnxNeg(dec, op_version=opv)
        raw = container.get_options(est, {"raw_scores": False})["raw_scores"]
        scores = OnnxConcat(*((dec, negated) if raw else (negated, dec)), axis=1, op_version=opv)
    elif est.decision_function_shape == "ovo":
        scores = dec
    else:
        summed = OnnxMatMul(dec, (first - second).astype(np.float64), op_version=opv)
        scale = OnnxMul(OnnxAdd(OnnxAbs(summed, op_version=opv), np.array([1.0]), op_version=opv),
                        np.array([3.0]), op_version=opv)
        scores = OnnxAdd(votes(OnnxGreaterOrEqual(dec, zero, op_version=opv)),
                         OnnxDiv(summed, scale, op_version=opv), op_version=opv)
    by = scores if est.break_ties and len(est.classes_) > 2 and est.decision_function_shape == "ovr" else libsvm_votes
    best = OnnxArgMax(by, axis=1, keepdims=0, op_version=opv)
    label = OnnxGather(label_values(est), best, axis=0, op_version=opv)
    OnnxIdentity(label, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)
    out = OnnxCast(scores, to=guess_proto_type(operator.inputs[0].type), op_version=opv,
                   output_names=operator.outputs[1:2])
    out.add_to(scope, container)


def _shape(operator: Any) -> None:
    """``label`` ``[N]`` (int64 or string), ``probabilities`` ``[N, columns]`` of the input's float type."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, Int64TensorType, StringTensorType

    est = operator.raw_operator
    rows = operator.inputs[0].get_first_dimension()
    n = len(est.classes_)
    columns = n * (n - 1) // 2 if est.decision_function_shape == "ovo" and n > 2 else n
    strings = all(isinstance(c, str) for c in est.classes_)
    operator.outputs[0].type = (StringTensorType if strings else Int64TensorType)([rows])
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    operator.outputs[1].type = (DoubleTensorType if double else FloatTensorType)([rows, columns])


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for SVC and NuSVC."""
    from skl2onnx.common._registration import get_converter
    from sklearn.svm import SVC, NuSVC

    options = get_converter("SklearnSVC").get_allowed_options()
    for cls in (SVC, NuSVC):
        replace_converter(cls, _shape, convert, options=options)


register()
