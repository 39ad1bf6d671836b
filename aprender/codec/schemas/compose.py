"""Schema of ColumnTransformer and FunctionTransformer (functions are stored by name).

Fitted transformers are nested under ``transformers_.{i}.{name}.``; column selections,
``output_indices_`` (slices) and the input-index map are metadata. Every column a
file selects is checked against ``n_features_in_`` / ``feature_names_in_`` before
sklearn indexes an input with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import compose as sk
from sklearn import preprocessing as skp

from aprender import compose as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail, n_features
from aprender.codec.schemas.pipeline import check_names, is_estimator
from aprender.codec.schemas.preprocessing import check_feature_names

#: Transformer values that are not estimators.
_KEYWORDS = ("drop", "passthrough")


def _triples(value: Any, name: str, path: str) -> list[tuple]:
    """A list of (name, transformer, columns) triples whose transformers can transform."""
    if not isinstance(value, list) or not all(isinstance(t, tuple) and len(t) == 3 for t in value):
        raise fail(path, f"'{name}' must be a list of (name, transformer, columns) triples")
    for label, trans, _ in value:
        keyword = type(trans) is str and trans in _KEYWORDS
        if not keyword and not (is_estimator(trans) and hasattr(trans, "transform")):
            raise fail(path, f"'{name}' entry '{label}' must be a transformer, 'drop' or 'passthrough'")
    return value


def _check_selection(columns: Any, n: int, names: np.ndarray | None, where: str, path: str) -> None:
    """A column selection that can only pick existing columns."""
    if isinstance(columns, slice):
        return  # slicing never reaches past the end
    items = columns.tolist() if isinstance(columns, np.ndarray) else columns
    items = items if isinstance(items, list) else [items]
    if items and all(type(c) is bool for c in items):
        if len(items) != n:
            raise fail(path, f"{where}: boolean column mask of length {len(items)} for {n} features")
        return
    known = set(names.tolist()) if names is not None else set()
    for c in items:
        if type(c) is str:
            if c not in known:
                raise fail(path, f"{where}: column {c[:80]!r} is not among the fitted feature names")
        elif not isinstance(c, (int, np.integer)) or isinstance(c, bool) or not -n <= c < n:
            raise fail(path, f"{where}: column {repr(c)[:80]} is outside the {n} fitted features")


def _is_weight(item: tuple[Any, Any]) -> bool:
    name, weight = item
    return type(name) is str and isinstance(weight, (int, float, np.number)) and not isinstance(weight, bool)


def _check_index_map(value: Any, names: list[str], n: int, path: str) -> None:
    """_transformer_to_input_indices maps every transformer name to input positions."""
    if not isinstance(value, dict) or not set(names) <= set(value):
        raise fail(path, "'_transformer_to_input_indices' must map every transformer name to column indices")
    for name, indices in value.items():
        if not isinstance(indices, list) or not all(type(i) is int and 0 <= i < n for i in indices):
            raise fail(path, f"'_transformer_to_input_indices' of '{str(name)[:80]}' must be indices in [0, {n})")


def _check_output_indices(value: Any, names: list[str], path: str) -> None:
    """output_indices_ gives every transformer a forward slice of the output columns."""
    if not isinstance(value, dict) or not set(names) <= set(value):
        raise fail(path, "'output_indices_' must give every transformer a slice of the output")
    for name, sl in value.items():
        if not isinstance(sl, slice) or type(sl.start) is not int or type(sl.stop) is not int \
                or not 0 <= sl.start <= sl.stop or sl.step is not None:
            raise fail(path, f"'output_indices_' of '{str(name)[:80]}' must be a slice(start, stop) with "
                             "0 <= start <= stop")


def check_column_transformer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Transformers, their columns and the output layout agree with the fitted input width."""
    check_names([t[0] for t in _triples(params.get("transformers"), "transformers", path)], params,
                "transformer", path)
    weights = params.get("transformer_weights")
    if weights is not None and not (isinstance(weights, dict) and all(map(_is_weight, weights.items()))):
        raise fail(path, "'transformer_weights' must map transformer names to numbers")
    n = n_features(attrs, path)
    check_feature_names(attrs, n, path)
    fitted = _triples(attrs.get("transformers_"), "transformers_", path)
    names = [t[0] for t in fitted]
    check_names(names, {}, "transformer", path)  # includes sklearn's own "remainder"
    feature_names = attrs.get("feature_names_in_")
    for name, _, columns in fitted:
        _check_selection(columns, n, feature_names, f"columns of '{name}'", path)
    remainder = attrs.get("_remainder")
    if not isinstance(remainder, tuple) or len(remainder) != 3 or remainder[0] != "remainder":
        raise fail(path, "'_remainder' must be a ('remainder', transformer, columns) triple")
    _check_selection(remainder[2], n, feature_names, "remainder columns", path)
    columns = attrs.get("_columns")
    if not isinstance(columns, list) or len(columns) != len(params["transformers"]):
        raise fail(path, "'_columns' must hold one column selection per transformer")
    for (name, _, _), selection in zip(params["transformers"], columns, strict=True):
        _check_selection(selection, n, feature_names, f"columns of '{name}'", path)
    _check_index_map(attrs.get("_transformer_to_input_indices"), names, n, path)
    _check_output_indices(attrs.get("output_indices_"), names, path)
    if type(attrs.get("sparse_output_")) is not bool:
        raise fail(path, "'sparse_output_' must be a bool")


def check_function_transformer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """func and inverse_func are None or callables (decoded by name from the function allow-list)."""
    for name in ("func", "inverse_func"):
        if params.get(name) is not None and not callable(params[name]):
            raise fail(path, f"FunctionTransformer '{name}' must be a function or None")


SCHEMAS = [
    ((ap.ColumnTransformer, sk.ColumnTransformer),
     Spec(ModelType.COLUMN_TRANSFORMER, validate=check_column_transformer)),
    ((skp.FunctionTransformer,), Spec(ModelType.COLUMN_TRANSFORMER, validate=check_function_transformer)),
]
