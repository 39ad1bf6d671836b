"""PowerTransformer in the input's float type, as scipy computes it (private).

skl2onnx 1.20 writes its constants as float32, so its double graph mixes float and double
and ONNX Runtime refuses it; ``dtype=None`` then fell back to float32 for a model that asks
for double, and a PowerTransformer before XGBoost trees, computed in float32, put new rows
up to 0.35 (of the prediction's scale) off while passing verification on probe rows.

This graph follows scipy's transforms, which scikit-learn calls per column:
Yeo-Johnson is ``expm1(l * log1p(x)) / l`` for ``x >= 0`` (``log1p(x)`` where ``|l| < eps``)
and ``-expm1((2 - l) * log1p(-x)) / (2 - l)`` below 0 (``-log1p(-x)`` where ``|l - 2| < eps``);
Box-Cox is ``expm1(l * log(x)) / l`` (``log(x)`` where ``l == 0``); then the fitted
StandardScaler when ``standardize``. ONNX has no ``expm1``/``log1p``: ``Exp(.) - 1`` and
``Log(1 + .)`` in double agree with them to ~1e-15 of the result's scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.format.onnx._converters import replace_converter

__all__ = ["register"]


def _power(exponents: np.ndarray, logs: Any, opv: int) -> Any:
    """``(exp(exponents * logs) - 1) / exponents`` with a zero exponent's divisor taken as 1."""
    from skl2onnx.algebra.onnx_ops import OnnxDiv, OnnxExp, OnnxMul, OnnxSub

    divisor = np.where(exponents == 0, 1, exponents).astype(exponents.dtype)
    grown = OnnxSub(OnnxExp(OnnxMul(logs, exponents, op_version=opv), op_version=opv),
                    np.ones(1, dtype=exponents.dtype), op_version=opv)
    return OnnxDiv(grown, divisor, op_version=opv)


def _yeo_johnson(x: Any, lambdas: np.ndarray, opv: int) -> Any:
    from skl2onnx.algebra.onnx_ops import OnnxAdd, OnnxGreaterOrEqual, OnnxLog, OnnxNeg, OnnxSub, OnnxWhere

    dtype, eps = lambdas.dtype, np.finfo(np.float64).eps
    one = np.ones(1, dtype=dtype)
    above = OnnxLog(OnnxAdd(x, one, op_version=opv), op_version=opv)  # log1p(x)
    below = OnnxLog(OnnxSub(one, x, op_version=opv), op_version=opv)  # log1p(-x)
    positive = OnnxWhere(np.abs(lambdas.astype(np.float64)) < eps, above,
                         _power(np.where(np.abs(lambdas) < eps, 0, lambdas).astype(dtype), above, opv),
                         op_version=opv)
    two = (2 - lambdas.astype(np.float64))
    negative = OnnxNeg(OnnxWhere(np.abs(two) < eps, below,
                                 _power(np.where(np.abs(two) < eps, 0, two).astype(dtype), below, opv),
                                 op_version=opv), op_version=opv)
    return OnnxWhere(OnnxGreaterOrEqual(x, np.zeros(1, dtype=dtype), op_version=opv), positive, negative,
                     op_version=opv)


def _box_cox(x: Any, lambdas: np.ndarray, opv: int) -> Any:
    from skl2onnx.algebra.onnx_ops import OnnxLog, OnnxWhere

    logs = OnnxLog(x, op_version=opv)
    return OnnxWhere(lambdas == 0, logs, _power(lambdas, logs, opv), op_version=opv)


def convert(scope: Any, operator: Any, container: Any) -> None:
    """Each column's power transform with its fitted lambda, then the fitted scaler."""
    from skl2onnx.algebra.onnx_ops import OnnxCast, OnnxDiv, OnnxIdentity, OnnxSub
    from skl2onnx.common.data_types import DoubleTensorType, guess_proto_type

    model, opv = operator.raw_operator, container.target_opset
    X = operator.inputs[0]
    double = isinstance(X.type, DoubleTensorType)
    dtype = np.float64 if double else np.float32
    proto = guess_proto_type(operator.outputs[0].type)
    x = X if double else OnnxCast(X, to=proto, op_version=opv)
    lambdas = np.asarray(model.lambdas_, dtype=dtype)
    out = (_yeo_johnson if model.method == "yeo-johnson" else _box_cox)(x, lambdas, opv)
    if model.standardize:
        scaler = model._scaler
        out = OnnxDiv(OnnxSub(out, scaler.mean_.astype(dtype), op_version=opv), scaler.scale_.astype(dtype),
                      op_version=opv)
    OnnxIdentity(out, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)


def _shape(operator: Any) -> None:
    """``[N, n_features]`` of the input's float type (skl2onnx's calculator says float32 always)."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    rows, columns = operator.inputs[0].type.shape
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    operator.outputs[0].type = (DoubleTensorType if double else FloatTensorType)([rows, columns])


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for PowerTransformer."""
    from sklearn.preprocessing import PowerTransformer

    replace_converter(PowerTransformer, _shape, convert)


register()
