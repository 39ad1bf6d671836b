"""``inspect_file``: an .apr file's header, metadata and tensor table, without a key or its data."""

from __future__ import annotations

import os
from typing import Any

from aprender.codec import ModelType
from aprender.exceptions import FormatError
from aprender.format._info import ModelInfo, TensorInfo
from aprender.format.apr._layout import FLAG_SIGNED, Flags, IndexEntry
from aprender.format.apr._read import read_prefix

__all__ = ["inspect_file"]

PathLike = str | os.PathLike


def _model_type(meta: dict[str, Any]) -> ModelType | None:
    code: Any = meta.get("model_type")  # anything a file holds: ModelType refuses what is not a code
    try:
        return ModelType(code)
    except ValueError:
        return None


def _true_shape(entry: IndexEntry, quantization: Any, where: str) -> tuple[int, ...]:
    """A tensor's shape; for GGML blocks (indexed by their padded value shape) the quantization record's."""
    if not entry.dtype.block:
        return entry.shape
    from aprender.format.quantize import block_shape, true_shape

    try:  # read_prefix checked that the record and the index name the same block tensors
        shape, _ = true_shape(quantization["tensors"][entry.name], entry.name)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    if block_shape(shape, entry.dtype.name) != entry.array_shape():
        raise FormatError(f"{where}: quantized tensor '{entry.name}' of shape {list(shape)} does not fit its "
                          f"{entry.size} bytes of {entry.dtype.name} blocks")
    return shape


def inspect_file(path: PathLike) -> ModelInfo:
    """Header, metadata and tensor table of an .apr file, without a key or reading the data.

    The header CRC, metadata and index are verified; the data section is not read
    (use :func:`validate_file` for that).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "secret.apr")
    >>> apr.save_encrypted(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, "pw")
    >>> info = apr.inspect_file(path)
    >>> info.model_type.name, info.encrypted, [t.name for t in info.tensors]
    ('LINEAR_REGRESSION', True, ['coefficients', 'intercept', 'singular_'])
    """
    parsed, public_key = read_prefix(path)
    plain = parsed.compression is None and not parsed.encrypted
    base = parsed.header.data_offset
    meta, flags = parsed.meta, parsed.header.flags
    quantization = meta.get("quantization")
    tensors = tuple(
        TensorInfo(e.name, e.dtype.name, _true_shape(e, quantization, parsed.where), e.size,
                   base + e.offset if plain else None, e.dtype.name if e.dtype.block else None)
        for e in parsed.entries
    )
    model = meta.get("model")
    return ModelInfo(
        format="apr",
        path=str(path),
        file_size=parsed.total,
        model_type=_model_type(meta),
        class_key=model.get("class") if isinstance(model, dict) else None,
        format_version="2.0",
        metadata=meta,
        tensors=tensors,
        compressed=parsed.compression,
        encrypted=parsed.encrypted,
        signed=bool(flags & FLAG_SIGNED),
        created_at=meta.get("created_at"),
        quantization=quantization["type"] if quantization else None,
        embedded_public_key=public_key,
        extra={
            "flags": [f.name for f in Flags if flags & f.value],
            "tensor_index_offset": parsed.header.tensor_index_offset,
            "data_offset": base,
            "data_size": parsed.data_size,
            "stored_data_size": parsed.stored.stop - parsed.stored.start,
        },
    )
