"""The graph inputs of an exported model, and the feeds that match them.

Naming (docs/onnx.md):

- one input ``"X"`` of shape ``[None, n_features]`` for numeric data (float32 or
  float64 as asked; int64 / bool / string when the sample ``X`` holds those),
- ``"X"`` of shape ``[None, 1]`` for a 1-d sample: text estimators fed one document
  per row (strings), LabelEncoder fed one label per row,
- one input per column, named after the column, of shape ``[None, 1]``, for a
  DataFrame with non-numeric columns or a model starting with a ColumnTransformer.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.exceptions import UnsupportedExportError

__all__ = ["FLOAT_DTYPES", "initial_types", "input_feed", "label_values", "needs_columns"]

#: dtype= values the exporter accepts.
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: ONNX TensorProto element type -> numpy dtype used to feed it.
_FEED_DTYPES = {1: np.float32, 11: np.float64, 7: np.int64, 9: np.bool_, 8: object}


def _dense(X: Any) -> np.ndarray:
    # a scipy.sparse sample or input: ONNX tensors are dense
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def _is_frame(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def needs_columns(model: Any, X: Any) -> bool:
    """A DataFrame sample is fed column by column (vs. one ``X`` matrix)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    if not _is_frame(X):
        return False
    if any(_kind(dt) not in "fiub" for dt in X.dtypes):
        return True  # strings, categories: one matrix cannot hold them with the numbers
    first = model
    while isinstance(first, Pipeline):
        first = first.steps[0][1]
    return isinstance(first, ColumnTransformer)


def _kind(dtype: Any) -> str:
    # numpy dtypes and pandas extension dtypes (Int64, string, category) both have .kind
    return str(getattr(dtype, "kind", "O"))


def _tensor_type(kind: str, dtype: np.dtype, shape: list[int | None]) -> Any:
    from skl2onnx.common.data_types import (
        BooleanTensorType,
        DoubleTensorType,
        FloatTensorType,
        Int64TensorType,
        StringTensorType,
    )

    if kind == "f":
        return (DoubleTensorType if dtype == np.float64 else FloatTensorType)(shape)
    if kind in "iu":
        return Int64TensorType(shape)
    if kind == "b":
        return BooleanTensorType(shape)
    return StringTensorType(shape)


def initial_types(model: Any, X: Any, dtype: np.dtype) -> list[tuple[str, Any]]:
    """skl2onnx ``initial_types`` for ``model`` and an optional sample ``X``."""
    if X is None:
        n = getattr(model, "n_features_in_", None)
        if not isinstance(n, (int, np.integer)):
            raise ValueError(
                f"cannot tell the input of {type(model).__name__} without a sample: it has no n_features_in_. "
                "Pass X (a few rows of the data it predicts on)."
            )
        return [("X", _tensor_type("f", dtype, [None, int(n)]))]
    if needs_columns(model, X):
        return [
            (str(name), _tensor_type(_kind(dt), dtype, [None, 1]))
            for name, dt in zip(X.columns, X.dtypes, strict=True)
        ]
    if _is_frame(X):  # all columns numeric: one matrix of their common type (bool + float -> float)
        kind = np.result_type(*(getattr(dt, "numpy_dtype", dt) for dt in X.dtypes)).kind
        return [("X", _tensor_type(kind, dtype, [None, X.shape[1]]))]
    sample = _dense(X)
    if sample.ndim == 1:  # one document (texts) or one label (LabelEncoder) per row
        return [("X", _tensor_type(sample.dtype.kind, dtype, [None, 1]))]
    if sample.ndim != 2:
        raise ValueError(f"X must be 2-dimensional (rows x features) or 1-d (texts, labels), got shape {sample.shape}")
    return [("X", _tensor_type(sample.dtype.kind, dtype, [None, sample.shape[1]]))]


def input_feed(onx: Any, X: Any) -> dict[str, np.ndarray]:
    """The ``InferenceSession.run`` feed of ``X`` for an exported model.

    ``X`` is what the estimator itself takes: a 2-d array (scipy.sparse is densified),
    a 1-d array of texts, or a DataFrame (or a mapping of column name to values) for
    per-column inputs.
    Values are cast to each input's element type.

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format.onnx import input_feed, to_onnx
    >>> onx = to_onnx(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> feed = input_feed(onx, np.array([[2.0]]))
    >>> feed["X"].dtype
    dtype('float32')
    """
    inputs = list(onx.graph.input)
    if len(inputs) == 1 and not isinstance(X, Mapping) and not (_is_frame(X) and inputs[0].name in X.columns):
        (inp,) = inputs
        values = X.to_numpy() if _is_frame(X) else _dense(X)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        return {inp.name: _cast(values, inp)}
    feed = {}
    for inp in inputs:
        if inp.name not in X:
            raise KeyError(f"the model has an input '{inp.name}' and X has no such column")
        column = X[inp.name]
        values = column.to_numpy() if hasattr(column, "to_numpy") else np.asarray(column)
        feed[inp.name] = _cast(values.reshape(-1, 1), inp)
    return feed


def _cast(values: np.ndarray, inp: Any) -> np.ndarray:
    elem = inp.type.tensor_type.elem_type
    target = _FEED_DTYPES.get(elem)
    if target is None:
        raise TypeError(f"input '{inp.name}' has ONNX element type {elem}, which input_feed does not produce")
    if target is object:
        return np.asarray(values, dtype=str).astype(object)
    return np.ascontiguousarray(values, dtype=target)


def label_values(model: Any) -> np.ndarray:
    """classes_ as skl2onnx writes labels: strings, or int64 for integer (and bool) labels."""
    classes = model.classes_
    if all(isinstance(c, str) for c in classes):
        return classes.astype(str)
    if all(isinstance(c, (numbers.Integral, bool, np.bool_)) for c in classes.tolist()):
        return classes.astype(np.int64)
    raise UnsupportedExportError(
        f"{type(model).__name__} with classes {classes.tolist()[:5]} cannot be exported to ONNX: "
        "ONNX labels are integers or strings"
    )
