"""Model files no aprender wrote: raw tensors of any SafeTensors or GGUF file.

``import`` turns such a file into an .apr of model type Custom: the tensors as they
are (GGML block tensors of GGUF, which aprender's model formats do not hold, are
dequantized to float32 by ``gguf.quants``) and a ``source`` record of where they came
from. The same readers let ``inspect``, ``validate`` and ``diff`` describe foreign files.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType
from gguf import quants as ggml_quants

from aprender.exceptions import FormatError
from aprender.format import ModelInfo, ModelState, ModelType, TensorInfo
from aprender.format._gguf_reader import BoundedReader
from aprender.format._state import SCHEMA_VERSION

__all__ = ["block_bits", "custom_state", "gguf_architecture", "gguf_info", "gguf_tensors", "is_raw", "open_gguf"]

#: GGUF tensor types stored as plain numpy arrays by the reader.
_PLAIN = {
    GGMLQuantizationType.F64, GGMLQuantizationType.F32, GGMLQuantizationType.F16,
    GGMLQuantizationType.I64, GGMLQuantizationType.I32, GGMLQuantizationType.I16, GGMLQuantizationType.I8,
}
#: Arrays in GGUF key-values (tokenizer vocabularies...) are summarised, not copied.
_MAX_KV_STRING = 1024


def custom_state(tensors: dict[str, np.ndarray], source: dict[str, Any]) -> ModelState:
    """A ModelState of raw tensors (model type Custom, no estimator) with its ``source`` record."""
    tensors = {name: np.ascontiguousarray(array) for name, array in sorted(tensors.items())}
    return ModelState(tensors=tensors, meta={"schema": SCHEMA_VERSION, "model_type": int(ModelType.CUSTOM),
                                             "source": source})


def is_raw(state: ModelState) -> bool:
    """The state holds tensors but no estimator (imported, or read from a foreign file)."""
    return not isinstance(state.meta.get("model"), dict)


def open_gguf(path: Path) -> BoundedReader:
    """Parse any GGUF file with the bounds-checked ``gguf.GGUFReader``."""
    where = f"'{path}'"
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return BoundedReader(path)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise FormatError(f"{where}: not a valid GGUF file: {type(exc).__name__}: {str(exc)[:200]}") from None


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


def _key_values(reader: BoundedReader) -> dict[str, Any]:
    return {name: _kv(field) for name, field in reader.fields.items() if not name.startswith("GGUF.")}


def gguf_architecture(reader: BoundedReader) -> str | None:
    """``general.architecture`` of a GGUF file, if it is a string."""
    field = reader.get_field("general.architecture")
    if field is None or field.types != [GGUFValueType.STRING]:
        return None
    return _kv(field)


def _shape(tensor: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in reversed(tensor.shape.tolist()))


def _block_type(tensor: Any) -> str | None:
    if tensor.tensor_type in _PLAIN or tensor.tensor_type == GGMLQuantizationType.BF16:
        return None
    return tensor.tensor_type.name.lower()


def gguf_tensors(reader: BoundedReader, path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Every tensor of a foreign GGUF file, and the ``source`` record of an import."""
    tensors: dict[str, np.ndarray] = {}
    dequantized: dict[str, str] = {}
    for t in reader.tensors:
        shape = _shape(t)
        if t.tensor_type in _PLAIN:
            array = np.array(t.data).reshape(shape)
        elif t.tensor_type == GGMLQuantizationType.BF16:
            array = np.array(t.data).view(ml_dtypes.bfloat16).reshape(shape)
        else:
            try:
                array = ggml_quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(shape)
            except NotImplementedError:
                raise FormatError(f"'{path}': tensor '{t.name[:80]}' has type {t.tensor_type.name}, which "
                                  "gguf.quants cannot dequantize") from None
            dequantized[t.name] = t.tensor_type.name.lower()
        tensors[t.name] = array
    source = {"format": "gguf", "metadata": _key_values(reader)}
    if dequantized:
        source["dequantized"] = dequantized
    return tensors, source


def gguf_info(reader: BoundedReader, path: Path) -> ModelInfo:
    """What ``inspect`` shows of a GGUF file another tool wrote."""
    tensors = []
    for t in reader.tensors:
        block = _block_type(t)
        dtype = block or ("bfloat16" if t.tensor_type == GGMLQuantizationType.BF16 else np.dtype(t.data.dtype).name)
        tensors.append(TensorInfo(t.name, dtype, _shape(t), int(t.n_bytes), int(t.data_offset), block))
    kinds = {t.quantization for t in tensors if t.quantization}
    return ModelInfo(
        format="gguf",
        path=str(path),
        file_size=len(reader.data),
        format_version=str(int(reader.fields["GGUF.version"].parts[0][0])),
        metadata=_key_values(reader),
        tensors=tuple(tensors),
        quantization=kinds.pop() if len(kinds) == 1 else None,
        extra={"alignment": int(reader.alignment), "foreign": True},
    )


def block_bits(qtype: str) -> float | None:
    """Bits per weight of a GGML block format (``q4_0`` -> 4.5), None if unknown."""
    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[qtype.upper()]]
    except KeyError:
        return None
    return size * 8 / block
