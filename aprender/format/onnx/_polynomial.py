"""PolynomialFeatures: skl2onnx's graph, with its bias column in the input's type (private).

skl2onnx 1.20 makes the bias column (``include_bias=True``, the default) with a float32
``ConstantOfShape`` whatever the input's type, so its double graph concatenates float with
double and is invalid: ``dtype=None``, which asks for double for PolynomialFeatures
(``_double.NEEDS_DOUBLE``), fell back to float32 for every model with more than the bias
column, and a tree model after it then compares float32 products with its thresholds. The
graph here is skl2onnx's, with that one constant written in the input's type.
"""

from __future__ import annotations

from typing import Any

from aprender.format.onnx._converters import replace_converter, shape_of

__all__ = ["register"]


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx's converter; in a double graph its float32 bias constant becomes a double one."""
    from onnx import TensorProto
    from onnx.helper import make_tensor
    from skl2onnx.common.data_types import DoubleTensorType
    from skl2onnx.operator_converters.polynomial_features import convert_sklearn_polynomial_features

    first = len(container.nodes)
    convert_sklearn_polynomial_features(scope, operator, container)
    if not isinstance(operator.inputs[0].type, DoubleTensorType):
        return
    for node in container.nodes[first:]:
        for attribute in node.attribute if node.op_type == "ConstantOfShape" else ():
            if attribute.name == "value" and attribute.t.data_type == TensorProto.FLOAT:
                attribute.t.CopyFrom(make_tensor(attribute.t.name, TensorProto.DOUBLE, [1], [1.0]))


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for PolynomialFeatures."""
    from sklearn.preprocessing import PolynomialFeatures

    replace_converter(PolynomialFeatures, shape_of("SklearnPolynomialFeatures"), convert)


register()
