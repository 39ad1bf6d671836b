"""How a ModelState maps onto GGUF: key names, tensor names, ranks and dtypes.

GGUF (ggml's C reader) limits tensor names to 63 bytes and tensors to 4 dimensions,
and has no unsigned or bool tensor types. Tensors that do not fit are stored under a
GGUF-legal name, shape and dtype, and the ``aprender.tensor_map`` key records how to
undo it (docs/gguf-format.md). Both directions live here so they cannot drift apart.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import quant_shape_to_byte_shape

from aprender._lazy import bfloat16
from aprender._limits import checked_shape
from aprender.codec._nodes import preview
from aprender.exceptions import FormatError, UnsupportedTypeError

__all__ = [
    "ARCHITECTURE",
    "DTYPE_NAMES",
    "KEY_ATTRS",
    "KEY_CLASS",
    "KEY_MODEL_TYPE",
    "KEY_PARAMS",
    "KEY_QUANTIZATION",
    "KEY_SCHEMA",
    "KEY_TENSOR_MAP",
    "KEY_USER",
    "MAX_DIMS",
    "MAX_NAME_BYTES",
    "PREFIX_EXTRA",
    "PREFIX_VERSIONS",
    "Placed",
    "check_entry",
    "place",
    "restore",
    "stored_form",
]

#: ``general.architecture`` of every file aprender writes.
ARCHITECTURE = "aprender"

KEY_SCHEMA = "aprender.schema"
KEY_MODEL_TYPE = "aprender.model_type"
KEY_CLASS = "aprender.class"
KEY_PARAMS = "aprender.params"
KEY_ATTRS = "aprender.attrs"
KEY_USER = "aprender.user"
KEY_QUANTIZATION = "aprender.quantization"
KEY_TENSOR_MAP = "aprender.tensor_map"
#: ``aprender.versions.<library>``: one string per library version.
PREFIX_VERSIONS = "aprender.versions."
#: ``aprender.meta.<key>``: any other top-level codec metadata, as canonical JSON.
PREFIX_EXTRA = "aprender.meta."

#: ggml's GGML_MAX_NAME is 64 bytes including the terminating NUL.
MAX_NAME_BYTES = 63
#: ggml's GGML_MAX_DIMS.
MAX_DIMS = 4

#: numpy dtype -> GGML type for the dtypes GGUF stores natively.
_NATIVE: dict[np.dtype, GGMLQuantizationType] = {
    np.dtype(np.float64): GGMLQuantizationType.F64,
    np.dtype(np.float32): GGMLQuantizationType.F32,
    np.dtype(np.float16): GGMLQuantizationType.F16,
    np.dtype(np.int64): GGMLQuantizationType.I64,
    np.dtype(np.int32): GGMLQuantizationType.I32,
    np.dtype(np.int16): GGMLQuantizationType.I16,
    np.dtype(np.int8): GGMLQuantizationType.I8,
}

#: dtypes GGML lacks -> the same-width signed integer they are stored as (bits unchanged).
_STORED_AS: dict[np.dtype, np.dtype] = {
    np.dtype(np.uint64): np.dtype(np.int64),
    np.dtype(np.uint32): np.dtype(np.int32),
    np.dtype(np.uint16): np.dtype(np.int16),
    np.dtype(np.uint8): np.dtype(np.int8),
    np.dtype(np.bool_): np.dtype(np.int8),
}
_TRUE_DTYPES = {dtype.name: dtype for dtype in _STORED_AS}

#: GGML type -> numpy dtype name of the unquantized tensor types.
DTYPE_NAMES = {ggml: dtype.name for dtype, ggml in _NATIVE.items()} | {GGMLQuantizationType.BF16: "bfloat16"}


@dataclass(frozen=True)
class Placed:
    """One state tensor as it goes into the GGUF file."""

    name: str
    array: np.ndarray
    raw_dtype: GGMLQuantizationType | None
    mapping: dict[str, Any] | None


def _short_name(name: str) -> str:
    """``~<16 hex digits of sha256>~<tail>``: unique, and the tail stays readable in gguf-dump."""
    head = "~" + hashlib.sha256(name.encode()).hexdigest()[:16] + "~"
    tail = name.encode()[-(MAX_NAME_BYTES - len(head)) :].decode("utf-8", errors="ignore")
    return head + tail


def _gguf_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    if len(shape) == 0:
        return (1,)
    if len(shape) > MAX_DIMS:
        return (math.prod(shape[: -MAX_DIMS + 1]), *shape[-MAX_DIMS + 1 :])
    return shape


def place(name: str, array: np.ndarray, qtype: GGMLQuantizationType | None) -> Placed:
    """Map a state tensor to a GGUF name, shape and type (``qtype``: GGML blocks in ``array``)."""
    mapping: dict[str, Any] = {}
    stored = array
    raw_dtype = qtype
    if qtype is None:
        if array.dtype in _STORED_AS:
            stored = array.view(_STORED_AS[array.dtype])
            mapping["dtype"] = array.dtype.name
        elif array.dtype.name == "bfloat16":  # ml_dtypes' (an array of it means ml_dtypes is imported)
            stored, raw_dtype = array.view(np.int16), GGMLQuantizationType.BF16
        elif array.dtype not in _NATIVE:
            raise UnsupportedTypeError(name, f"ndarray of dtype {array.dtype}", "GGUF has no such tensor type")
    shape = _gguf_shape(array.shape)
    if shape != array.shape:
        stored = stored.reshape(shape)
        mapping["shape"] = list(array.shape)
    gguf_name = name
    if len(name.encode()) > MAX_NAME_BYTES:
        gguf_name = _short_name(name)
        mapping["name"] = name
    return Placed(gguf_name, np.ascontiguousarray(stored), raw_dtype, mapping or None)


def _fail(gguf_name: str, where: str, message: str) -> FormatError:
    return FormatError(f"{where}: tensor '{gguf_name[:80]}': {message}")


def check_entry(gguf_name: str, dtype: np.dtype, shape: tuple[int, ...], entry: Any,
                where: str) -> tuple[str, np.dtype, tuple[int, ...]]:
    """Validate a tensor_map entry against the stored dtype and shape; return the true name, dtype, shape."""
    if entry is None:
        return gguf_name, dtype, shape
    if not isinstance(entry, dict) or not set(entry) <= {"name", "shape", "dtype"}:
        raise _fail(gguf_name, where, "invalid aprender.tensor_map entry")
    true_dtype, true_shape, name = entry.get("dtype"), entry.get("shape"), entry.get("name", gguf_name)
    if true_dtype is not None:
        true = _TRUE_DTYPES.get(true_dtype) if isinstance(true_dtype, str) else None
        if true is None or _STORED_AS[true] != dtype:
            raise _fail(gguf_name, where, f"cannot be restored to dtype {preview(true_dtype, 40)} from {dtype}")
        dtype = true
    if true_shape is not None:
        true_shape = checked_shape(true_shape, f"{where}: tensor '{gguf_name[:80]}': mapped shape")
        if math.prod(true_shape) != math.prod(shape) or _gguf_shape(tuple(true_shape)) != shape:
            raise _fail(gguf_name, where, f"mapped shape {list(true_shape)} does not match stored shape {list(shape)}")
        shape = tuple(true_shape)
    if not isinstance(name, str) or not name or len(name) > 4096:
        raise _fail(gguf_name, where, "invalid mapped tensor name")
    return name, dtype, shape


def restore(gguf_name: str, array: np.ndarray, ggml_type: GGMLQuantizationType, entry: Any,
            where: str) -> tuple[str, np.ndarray]:
    """Undo :func:`place` for one tensor read from a file; ``entry`` is its tensor_map record."""
    if ggml_type == GGMLQuantizationType.BF16:
        array = array.view(bfloat16())
    name, dtype, shape = check_entry(gguf_name, array.dtype, array.shape, entry, where)
    if dtype != array.dtype:
        if dtype == np.bool_ and not np.isin(array, (0, 1)).all():
            raise _fail(gguf_name, where, "bool tensor holds values other than 0 and 1")
        array = array.view(dtype)
    return name, array.reshape(shape)


def stored_form(ggml_type: GGMLQuantizationType, ne: list[int]) -> tuple[np.dtype, tuple[int, ...]]:
    """dtype and numpy shape of a GGUF tensor as the reader returns it (block tensors: uint8 bytes)."""
    shape = tuple(reversed(ne))
    if ggml_type in DTYPE_NAMES and ggml_type != GGMLQuantizationType.BF16:
        return np.dtype(DTYPE_NAMES[ggml_type]), shape
    if ggml_type == GGMLQuantizationType.BF16:
        return bfloat16(), shape
    return np.dtype(np.uint8), quant_shape_to_byte_shape(shape, ggml_type)
