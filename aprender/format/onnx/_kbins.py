"""KBinsDiscretizer: bins counted as scikit-learn counts them, in the input's float type (private).

scikit-learn's ``transform`` counts, per column, the inner edges ``<= x`` in float64
(``searchsorted(edges[1:-1], x, side="right")``). skl2onnx 1.20's graph casts the column to
float32 and compares it with the edges rounded to the nearest float32, and its double graph
is invalid (its Concat mixes float and double): an edge rounded to the other side of an input
sent values a bin off (gallery, plot_target_encoder_cross_val.py), and a scaler before the
bins, computed in float32, sent a scaled integer column's values across edges that are those
very values (1,037 of 20,000 new rows another label).

This graph compares each column with its edges in the input's own type: in double, exactly
scikit-learn's comparison; in float32, with each edge rounded *up* to a float32, since for a
float32 ``x``, ``x >= e`` exactly when ``x >= ceil32(e)`` (the smallest float32 not below
``e``), so every float32 input bins as scikit-learn bins it. ``onehot-dense`` compares the
bin with each bin number; ``onehot`` (a sparse matrix) has no ONNX tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.format.onnx._converters import replace_converter, shape_of

__all__ = ["ceil32", "register"]


def ceil32(values: np.ndarray) -> np.ndarray:
    """The smallest float32 values not below ``values`` (as float64)."""
    values = np.asarray(values, dtype=np.float64)
    nearest = values.astype(np.float32)
    below = nearest.astype(np.float64) < values
    return np.where(below, np.nextafter(nearest, np.float32(np.inf)), nearest).astype(np.float64)


def _inner_edges(edges: np.ndarray, dtype: type) -> np.ndarray:
    """The edges a value is counted against, as the graph compares them."""
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    return (ceil32(inner) if dtype == np.float32 else inner).astype(dtype)


def convert(scope: Any, operator: Any, container: Any) -> None:
    """Per column: the count of inner edges ``<= x`` (ordinal), or its one-hot row (``onehot-dense``)."""
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_ops import (
        OnnxCast,
        OnnxConcat,
        OnnxEqual,
        OnnxGather,
        OnnxGreaterOrEqual,
        OnnxIdentity,
        OnnxMatMul,
        OnnxMul,
    )
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, guess_proto_type

    model, opv = operator.raw_operator, container.target_opset
    if model.encode == "onehot":
        raise RuntimeError("KBinsDiscretizer(encode='onehot') gives a sparse matrix, which ONNX tensors cannot hold; "
                           "fit it with encode='onehot-dense' or 'ordinal'")
    X = operator.inputs[0]
    single = isinstance(X.type, FloatTensorType)  # an integer input is compared in double, as scikit-learn does
    dtype, proto = (np.float32, TensorProto.FLOAT) if single else (np.float64, TensorProto.DOUBLE)
    values = X if single or isinstance(X.type, DoubleTensorType) else OnnxCast(X, to=proto, op_version=opv)
    columns = []
    for j, edges in enumerate(model.bin_edges_):
        column = OnnxGather(values, np.array([j], dtype=np.int64), axis=1, op_version=opv)
        inner = _inner_edges(edges, dtype)
        if inner.size:  # the count of edges <= x: a 0/1 row times a column of ones (exact in floats)
            above = OnnxCast(OnnxGreaterOrEqual(column, inner, op_version=opv), to=proto, op_version=opv)
            bins = OnnxMatMul(above, np.ones((inner.size, 1), dtype=dtype), op_version=opv)
        else:  # one bin: every value is in bin 0
            bins = OnnxMul(column, np.zeros(1, dtype=dtype), op_version=opv)
        if model.encode == "onehot-dense":
            numbers = np.arange(int(model.n_bins_[j]), dtype=dtype)
            bins = OnnxCast(OnnxEqual(bins, numbers, op_version=opv), to=proto, op_version=opv)
        columns.append(bins)
    out = OnnxConcat(*columns, axis=1, op_version=opv) if len(columns) > 1 else columns[0]
    output = guess_proto_type(operator.outputs[0].type)
    OnnxIdentity(OnnxCast(out, to=output, op_version=opv) if output != proto else out, op_version=opv,
                 output_names=operator.outputs[:1]).add_to(scope, container)


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for KBinsDiscretizer."""
    from sklearn.preprocessing import KBinsDiscretizer

    replace_converter(KBinsDiscretizer, shape_of("SklearnKBinsDiscretizer"), convert)


register()
