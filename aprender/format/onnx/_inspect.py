"""``inspect_file`` and ``validate_file`` of ONNX files: the graph's header, inputs, outputs and initializers."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx

from aprender.codec import ModelType
from aprender.exceptions import FormatError
from aprender.format._info import ModelInfo, TensorInfo, ValidationReport
from aprender.format._io import existing_file
from aprender.format.onnx._external import refuse_external_data
from aprender.format.onnx._props import read_props

__all__ = ["inspect_file", "load_tensors", "validate_file"]


def _read_model(path: str | os.PathLike) -> tuple[onnx.ModelProto, int, str]:
    from google.protobuf.message import DecodeError

    p = existing_file(path)
    size = p.stat().st_size
    try:
        onx = onnx.load(str(p), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise FormatError(f"'{p}': not a valid ONNX model (protobuf ModelProto): {exc}") from None
    if onx.ir_version <= 0 or not onx.HasField("graph"):
        raise FormatError(f"'{p}': not an ONNX model: no IR version or no graph in the {size}-byte file")
    refuse_external_data(onx, str(p))
    return onx, size, str(p)


def _elem_name(elem_type: int) -> str:

    if elem_type == onnx.TensorProto.STRING:
        return "string"
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError):
        return f"onnx:{elem_type}"


def _value_info(info: Any) -> dict[str, Any]:
    tensor = info.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
    return {"name": info.name, "dtype": _elem_name(tensor.elem_type), "shape": dims}


def _initializer(init: Any) -> TensorInfo:
    import math

    dtype = _elem_name(init.data_type)
    shape = tuple(int(d) for d in init.dims)
    if init.HasField("raw_data"):
        nbytes = len(init.raw_data)
    elif init.string_data:
        nbytes = sum(len(s) for s in init.string_data)
    else:
        itemsize = np.dtype(dtype).itemsize if not dtype.startswith(("onnx:", "string")) else 0
        nbytes = math.prod(shape) * itemsize
    return TensorInfo(name=init.name, dtype=dtype, shape=shape, nbytes=nbytes)


def inspect_file(path: str | os.PathLike) -> ModelInfo:
    """Describe an ONNX file: opsets, inputs/outputs, aprender metadata, initializers.

    Works on any ONNX model; the aprender fields are empty for files other tools wrote.
    ``extra`` holds ``opset`` (domain -> version), ``inputs`` and ``outputs``
    (name, dtype, shape with ``None`` or a symbol for free dimensions),
    ``producer``, ``graph``, ``doc_string`` and all raw ``metadata_props``.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    FormatError
        If the file is not an ONNX model.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import onnx as apr_onnx
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.onnx")
    >>> apr_onnx.save_file(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> info = apr_onnx.inspect_file(path)
    >>> info.model_type.name, info.extra["inputs"]
    ('LINEAR_REGRESSION', [{'name': 'X', 'dtype': 'float32', 'shape': [None, 1]}])
    """
    onx, size, where = _read_model(path)
    raw = {p.key: p.value for p in onx.metadata_props}
    meta = read_props(raw)
    try:
        model_type = ModelType[meta["model_type"]] if "model_type" in meta else None
    except KeyError:
        model_type = None
    graph = onx.graph
    return ModelInfo(
        format="onnx",
        path=where,
        file_size=size,
        model_type=model_type,
        class_key=meta.get("class"),
        format_version=str(onx.ir_version),
        metadata=meta,
        tensors=tuple(_initializer(init) for init in graph.initializer),
        extra={
            "opset": {op.domain or "ai.onnx": op.version for op in onx.opset_import},
            "inputs": [_value_info(i) for i in graph.input],
            "outputs": [_value_info(o) for o in graph.output],
            "producer": f"{onx.producer_name} {onx.producer_version}".strip(),
            "graph": graph.name,
            "doc_string": onx.doc_string,
            "metadata_props": raw,
        },
    )


def validate_file(path: str | os.PathLike) -> ValidationReport:
    """Check an ONNX file completely: it parses and passes ``onnx.checker`` (full check).

    ``aprender.validate("model.onnx")`` lands here (ONNX files are neither signed nor
    encrypted, and aprender cannot load them back into a model).

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a file.
    FormatError
        If the file is not an ONNX model or fails the checker (type or shape inference).

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import Ridge
    >>> path = os.path.join(tempfile.mkdtemp(), "ridge.onnx")
    >>> aprender.save(Ridge().fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> aprender.validate(path).checks
    ('ONNX protobuf parsed', 'onnx.checker (full check, shape inference)')
    """
    onx, _, where = _read_model(path)
    try:
        onnx.checker.check_model(onx, full_check=True)
    except Exception as exc:  # ValidationError, InferenceError
        raise FormatError(f"'{where}': the ONNX model fails onnx.checker: {str(exc).strip()}") from None
    return ValidationReport(str(path), "onnx", ("ONNX protobuf parsed", "onnx.checker (full check, shape inference)"),
                            model=False)


def load_tensors(path: str | os.PathLike, **options: Any) -> dict[str, np.ndarray]:
    """The graph's numeric initializers (weights, thresholds ...) by name; string initializers are left out."""
    from onnx import numpy_helper

    graph = _read_model(path)[0].graph
    return {init.name: numpy_helper.to_array(init) for init in graph.initializer
            if init.data_type != onnx.TensorProto.STRING}
