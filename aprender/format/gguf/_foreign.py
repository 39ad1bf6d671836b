"""GGUF files any tool wrote (llama.cpp, gguf-py...): their tensors and their description.

aprender's own reader accepts only the tensor types it writes. Here every type
``gguf.quants`` can decode is read: plain tensors as they are, BF16 as
``ml_dtypes.bfloat16``, GGML block types (Q4_K, Q8_0, ...) dequantized to float32.
Parsing goes through the same bounds-checked reader, so a truncated or hostile file
raises :class:`~aprender.exceptions.FormatError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFValueType
from gguf import quants as ggml_quants

from aprender._lazy import bfloat16
from aprender.exceptions import FormatError
from aprender.format._info import ModelInfo, TensorInfo
from aprender.format.gguf._layout import ARCHITECTURE
from aprender.format.gguf._reader import BoundedReader

__all__ = ["describe", "is_foreign", "tensors"]

#: GGUF tensor types the reader returns as numpy arrays of their own dtype.
_PLAIN = frozenset([
    GGMLQuantizationType.F64, GGMLQuantizationType.F32, GGMLQuantizationType.F16,
    GGMLQuantizationType.I64, GGMLQuantizationType.I32, GGMLQuantizationType.I16, GGMLQuantizationType.I8,
])
#: Arrays in key-values (tokenizer vocabularies...) are summarised, long strings cut.
_MAX_KV_STRING = 1024


def _shape(tensor: Any) -> tuple[int, ...]:
    # GGUF lists dimensions fastest-first (ggml's ne0, ne1, ...); numpy wants them slowest-first
    return tuple(int(d) for d in reversed(tensor.shape.tolist()))


def _block_type(tensor: Any) -> str | None:
    """The GGML block type of a tensor (``"q4_k"``), None for plain and BF16 tensors."""
    if tensor.tensor_type in _PLAIN or tensor.tensor_type == GGMLQuantizationType.BF16:
        return None
    return tensor.tensor_type.name.lower()


def _native(array: np.ndarray) -> np.ndarray:
    """A C-ordered copy, out of the memory map, in native byte order (a big-endian file's are swapped views)."""
    return np.array(array, dtype=array.dtype.newbyteorder("="), order="C")


def _array(reader: BoundedReader, tensor: Any, where: str) -> np.ndarray:
    shape = _shape(tensor)
    if tensor.tensor_type in _PLAIN:
        return _native(tensor.data).reshape(shape)
    if tensor.tensor_type == GGMLQuantizationType.BF16:
        raw = np.array(tensor.data).view(np.uint16)  # the reader gives BF16 as raw bytes
        return (raw.byteswap() if reader.byte_order == "S" else raw).view(bfloat16()).reshape(shape)
    try:
        return ggml_quants.dequantize(np.asarray(tensor.data), tensor.tensor_type).reshape(shape)
    except NotImplementedError:
        raise FormatError(f"{where}: tensor '{tensor.name[:80]}' has type {tensor.tensor_type.name}, which "
                          "gguf.quants cannot dequantize") from None
    except ValueError as exc:
        raise FormatError(f"{where}: tensor '{tensor.name[:80]}' ({tensor.tensor_type.name}): {exc}") from None


def tensors(reader: BoundedReader, where: str, *, as_float32: bool = False) -> dict[str, np.ndarray]:
    """Every tensor of the file as a fresh numpy array (block types dequantized to float32)."""
    out = {t.name: _array(reader, t, where) for t in reader.tensors}
    if as_float32:
        narrow = (np.dtype(np.float16), bfloat16())
        out = {name: a.astype(np.float32) if a.dtype in narrow else a for name, a in out.items()}
    return out


def _kv(field: Any) -> Any:
    """A key-value as JSON: scalars and strings as they are, arrays by their length."""
    if field.types and field.types[0] == GGUFValueType.ARRAY:
        return f"<array of {len(field.data)}>"
    try:
        value = field.contents()
    except (UnicodeDecodeError, ValueError, IndexError):
        return "<unreadable>"
    if isinstance(value, str) and len(value) > _MAX_KV_STRING:
        return value[:_MAX_KV_STRING] + "..."
    return value.item() if isinstance(value, np.generic) else value


def is_foreign(reader: BoundedReader) -> bool:
    """``general.architecture`` is not aprender's: another tool wrote the file."""
    field = reader.get_field("general.architecture")
    return field is None or field.types != [GGUFValueType.STRING] or _kv(field) != ARCHITECTURE


def _key_values(reader: BoundedReader) -> dict[str, Any]:
    """The file's key-values as JSON-able values (the ``GGUF.*`` header fields left out)."""
    return {name: _kv(field) for name, field in reader.fields.items() if not name.startswith("GGUF.")}


def describe(reader: BoundedReader, path: str) -> ModelInfo:
    """A :class:`ModelInfo` of a GGUF file another tool wrote: key-values and tensor table, no model."""
    table = []
    for t in reader.tensors:
        block = _block_type(t)
        dtype = block or ("bfloat16" if t.tensor_type == GGMLQuantizationType.BF16 else np.dtype(t.data.dtype).name)
        table.append(TensorInfo(t.name, dtype, _shape(t), int(t.n_bytes), int(t.data_offset), block))
    kinds = {t.quantization for t in table if t.quantization}
    return ModelInfo(
        format="gguf",
        path=path,
        file_size=len(reader.data),
        format_version=str(int(reader.fields["GGUF.version"].parts[0][0])),
        metadata=_key_values(reader),
        tensors=tuple(table),
        quantization=kinds.pop() if len(kinds) == 1 else None,
        extra={"alignment": int(reader.alignment), "foreign": True},
    )
