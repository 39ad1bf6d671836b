"""LightGBM fitted on a DataFrame with pandas ``category`` columns, fed column by column (private).

LightGBM encodes such columns itself: at predict time it sets each column's categories to
the training ones (``booster_.pandas_categorical``), takes the codes (0, 1, ...; an unknown
category or a missing value becomes NaN) and compares the codes with its categorical
splits. The graph does the same before the trees: each category column is a string input
mapped by a ``LabelEncoder`` to its code, the numeric columns are cast, and a ``Concat``
makes the matrix the tree ensemble reads.

An unknown or missing category maps to NaN, which matches no category split and goes
right, as LightGBM sends it (measured: also where the split's ``missing_type`` is None).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FRAME", "frame_inputs", "register_frame"]

#: skl2onnx operator name of the DataFrame-to-matrix step.
FRAME = "AprenderLightGbmFrame"


def register_frame() -> None:
    """Register the frame operator's converter and shape calculator with skl2onnx (once)."""
    from skl2onnx.common._registration import register_converter, register_shape_calculator

    register_converter(FRAME, _convert_frame)
    register_shape_calculator(FRAME, _frame_shape)


def frame_inputs(scope: Any, model: Any, inputs: list[Any]) -> list[Any]:
    """The one numeric matrix input of ``model``'s trees: ``inputs`` itself, or a frame operator's output."""
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, StringTensorType

    if len(inputs) == 1 and not isinstance(inputs[0].type, StringTensorType):
        return inputs
    operator = scope.declare_local_operator(FRAME, model)
    operator.inputs = inputs
    double = any(isinstance(i.type, DoubleTensorType) for i in inputs)
    matrix = (DoubleTensorType if double else FloatTensorType)([None, int(model.n_features_in_)])
    operator.outputs.append(scope.declare_local_variable("features", matrix))
    return list(operator.outputs)


def _frame_shape(operator: Any) -> None:
    """The output type is declared by :func:`frame_inputs`; nothing to infer."""


def _convert_frame(scope: Any, operator: Any, container: Any) -> None:
    from onnx import TensorProto
    from skl2onnx.common.data_types import DoubleTensorType, StringTensorType

    from aprender.exceptions import UnsupportedExportError

    model = operator.raw_operator
    double = isinstance(operator.outputs[0].type, DoubleTensorType)
    to = TensorProto.DOUBLE if double else TensorProto.FLOAT
    tables = list(model.booster_.pandas_categorical or [])
    strings = [i for i in operator.inputs if isinstance(i.type, StringTensorType)]
    if len(strings) != len(tables) or len(operator.inputs) != model.n_features_in_:
        raise UnsupportedExportError(
            f"cannot export {type(model).__name__} to ONNX: the sample has {len(strings)} string or category columns "
            f"of {len(operator.inputs)}, the model was fitted on {len(tables)} category columns of "
            f"{model.n_features_in_}; pass a sample with the columns and dtypes it was fitted on")
    columns = []
    table = iter(tables)
    for index, column in enumerate(operator.inputs):
        name = scope.get_unique_variable_name(f"feature{index}")
        if isinstance(column.type, StringTensorType):
            categories = next(table)
            coded = scope.get_unique_variable_name(f"code{index}")
            container.add_node("LabelEncoder", [column.full_name], [coded], op_domain="ai.onnx.ml", op_version=2,
                               name=scope.get_unique_operator_name("LabelEncoder"),
                               keys_strings=[str(c) for c in categories],
                               values_floats=[float(code) for code in range(len(categories))],
                               default_float=float("nan"))
            source = coded
        else:
            source = column.full_name
        container.add_node("Cast", [source], [name], to=to, name=scope.get_unique_operator_name("Cast"))
        columns.append(name)
    container.add_node("Concat", columns, [operator.outputs[0].full_name], axis=1,
                       name=scope.get_unique_operator_name("Concat"))
