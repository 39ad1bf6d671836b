"""ONNX converter of SVR and NuSVR computing in double, whatever the input type.

scikit-learn's libsvm computes ``predict(x) = sum_i dual_coef_i K(x, sv_i) + intercept_`` in
float64. skl2onnx 1.20 writes it as ONNX-ML's ``SVMRegressor``, whose coefficients are
float32 attributes and which ONNX Runtime runs in float32 only (it has no double kernel, so
a float64 export could not be made): with large dual coefficients the float32 sum loses
the prediction (the gallery measured an RBF/polynomial SVR off by 0.18; a degree-3
polynomial kernel with C=100 here is 0.5 off). This converter builds the same sum from
standard operators in double: the input is cast to double, the kernel is computed as
libsvm does (RBF from the differences ``x - sv``, polynomial
``(gamma x.sv + coef0)^degree``, sigmoid ``tanh(gamma x.sv + coef0)``), and the result is
cast to the input's type. A float32 graph thus only rounds its input and its output.
Precomputed and callable kernels are refused before conversion (``_gaps``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.format.onnx._converters import replace_converter

__all__ = ["dense", "register", "svm_kernel"]


def dense(values: Any) -> np.ndarray:
    """A fitted matrix as float64, densified (a model fitted on scipy.sparse data keeps sparse ones)."""
    return np.asarray(values.toarray() if hasattr(values, "toarray") else values, dtype=np.float64)


def svm_kernel(est: Any, X: Any, opv: int) -> Any:
    """``K(X, support_vectors_)``, ``[N, n_SV]``, in double."""
    from skl2onnx.algebra.onnx_ops import (
        OnnxAdd,
        OnnxExp,
        OnnxMatMul,
        OnnxMul,
        OnnxPow,
        OnnxReduceSumSquare,
        OnnxSub,
        OnnxTanh,
        OnnxUnsqueeze,
    )

    sv = dense(est.support_vectors_)
    gamma, coef0 = np.array([est._gamma], dtype=np.float64), np.array([est.coef0], dtype=np.float64)
    if est.kernel == "rbf":
        diff = OnnxSub(OnnxUnsqueeze(X, np.array([1], dtype=np.int64), op_version=opv), sv, op_version=opv)
        squared = OnnxReduceSumSquare(diff, np.array([2], dtype=np.int64), keepdims=0, op_version=opv)
        return OnnxExp(OnnxMul(squared, -gamma, op_version=opv), op_version=opv)
    dot = OnnxMatMul(X, sv.T, op_version=opv)
    if est.kernel == "linear":
        return dot
    scaled = OnnxAdd(OnnxMul(dot, gamma, op_version=opv), coef0, op_version=opv)
    if est.kernel == "poly":
        return OnnxPow(scaled, np.array([est.degree], dtype=np.float64), op_version=opv)
    return OnnxTanh(scaled, op_version=opv)  # "sigmoid"


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter: ``variable`` (``[N, 1]``, the input's float type) computed in double."""
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_ops import OnnxAdd, OnnxCast, OnnxMatMul
    from skl2onnx.common.data_types import guess_proto_type

    est, opv = operator.raw_operator, container.target_opset
    X = OnnxCast(operator.inputs[0], to=TensorProto.DOUBLE, op_version=opv)
    weights = dense(est.dual_coef_).T  # [n_SV, 1]
    y = OnnxAdd(OnnxMatMul(svm_kernel(est, X, opv), weights, op_version=opv),
                est.intercept_.astype(np.float64), op_version=opv)
    out = OnnxCast(y, to=guess_proto_type(operator.inputs[0].type), op_version=opv, output_names=operator.outputs[:1])
    out.add_to(scope, container)


def _shape(operator: Any) -> None:
    """``[N, 1]`` of the input's float type (skl2onnx's SVM shape calculator knows its own aliases only)."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    rows = operator.inputs[0].get_first_dimension()
    operator.outputs[0].type = (DoubleTensorType if double else FloatTensorType)([rows, 1])


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for SVR and NuSVR."""
    from sklearn.svm import SVR, NuSVR

    for cls in (SVR, NuSVR):
        replace_converter(cls, _shape, convert)


register()
