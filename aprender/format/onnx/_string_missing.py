"""SimpleImputer on string columns whose missing values are NaN (private).

A string column's missing values are NaN in pandas and in scikit-learn
(``SimpleImputer(strategy="constant", fill_value="missing")`` before a OneHotEncoder, the
usual way to encode them), but an ONNX string tensor cannot hold NaN: fed through
``input_feed`` (``numpy.asarray(values, dtype=str)``) a missing value arrives as the string
``"nan"``. skl2onnx 1.20 refuses such an imputer (its string converter matches a string
``missing_values`` only); it is converted here with ``missing_values="nan"``, what the graph
reads for NaN, and skl2onnx's own converter. A column holding the text "nan" is read as missing.
"""

from __future__ import annotations

import copy
from typing import Any

from aprender.format.onnx._converters import convert_as, wrap_registered

__all__ = ["MISSING_TEXT", "register"]

#: What a NaN of a string column is in the graph's string input.
MISSING_TEXT = "nan"
_registered = False


def register() -> None:
    """Wrap the converter registered for SimpleImputer (once, after ``_exact_trees.register``)."""
    global _registered
    if _registered:
        return
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from sklearn.impute import SimpleImputer

    wrap_registered(sklearn_operator_name_map[SimpleImputer], _nan_as_text)
    _registered = True


def _nan_as_text(original: Any) -> Any:
    def converter(scope: Any, operator: Any, container: Any) -> None:
        from skl2onnx.common.data_types import StringTensorType
        from sklearn.utils._missing import is_scalar_nan

        model = operator.raw_operator
        if not (isinstance(operator.inputs[0].type, StringTensorType) and is_scalar_nan(model.missing_values)):
            original(scope, operator, container)
            return
        reading = copy.copy(model)
        reading.missing_values = MISSING_TEXT
        convert_as(reading, original, scope, operator, container)

    return converter
