"""ModelState -> .apr bytes, as a list of chunks written in order (no full copy when plain)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aprender.codec import ModelState, canonical_json
from aprender.exceptions import FormatError
from aprender.format._crc import crc32
from aprender.format.apr._layout import (
    FLAG_ENCRYPTED,
    FLAG_LZ4,
    FLAG_QUANTIZED,
    FLAG_SIGNED,
    FLAG_ZSTD,
    HEADER_SIZE,
    Header,
    IndexEntry,
    align,
    layout,
    pack_index,
)
from aprender.format.apr._options import CONTAINER_KEYS, SaveOptions

__all__ = ["encode"]

Chunk = bytes | memoryview | np.ndarray


def _quantized(meta: dict[str, Any]) -> dict[str, str]:
    """Names of the GGML block tensors and their format, from ``meta["quantization"]``."""
    record = meta.get("quantization")
    if record is None:
        return {}
    return dict.fromkeys(record["tensors"], record["type"])


def _data_chunks(state: ModelState, entries: list[IndexEntry]) -> list[Chunk]:
    chunks: list[Chunk] = []
    for e in entries:
        array = np.ascontiguousarray(state.tensors[e.name])
        chunks.append(array.reshape(-1).view(np.uint8))
        if align(e.size) != e.size:
            chunks.append(bytes(align(e.size) - e.size))
    return chunks


def encode(
    state: ModelState,
    options: SaveOptions,
    *,
    signing_key: object = None,
    password: object = None,
    recipient_public_key: object = None,
) -> list[Chunk]:
    """The chunks of the .apr file holding ``state``; their concatenation is the file."""
    clash = CONTAINER_KEYS & set(state.meta)
    if clash:
        raise FormatError(f"model metadata may not use the container's key '{sorted(clash)[0]}'")
    entries, _ = layout(state.tensors, _quantized(state.meta))
    meta = {**state.meta, **options.stamped().records()}
    flags = 0  # plain ints: IntFlag arithmetic costs a microsecond per operation
    algorithm = options.compression.algorithm
    if algorithm is not None:
        meta["compression"] = {"algorithm": algorithm, "level": options.compression.level}
        flags |= FLAG_ZSTD if algorithm == "zstd" else FLAG_LZ4
    key = None
    if password is not None or recipient_public_key is not None:
        if password is not None and recipient_public_key is not None:
            raise ValueError("pass either password= or recipient_public_key=, not both")
        from aprender.format.apr._crypto import new_encryption

        meta["encryption"], key = new_encryption(password, recipient_public_key)
        flags |= FLAG_ENCRYPTED
    if "quantization" in meta:
        flags |= FLAG_QUANTIZED
    if signing_key is not None:
        flags |= FLAG_SIGNED
    meta_bytes = canonical_json(meta).encode()
    if len(meta_bytes) > 0xFFFFFFFF or len(entries) > 0xFFFFFFFF:
        raise FormatError("the metadata or the tensor count exceeds the 32-bit fields of the .apr header")
    index = pack_index(entries)
    index_offset = HEADER_SIZE + align(len(meta_bytes))
    header = Header(flags, len(entries), len(meta_bytes), index_offset, index_offset + len(index))
    prefix = b"".join([header.pack(), meta_bytes, bytes(align(len(meta_bytes)) - len(meta_bytes)), index])

    data: Sequence[Chunk] = _data_chunks(state, entries)
    if algorithm is not None:
        from aprender.format.apr._compress import compress

        data = [compress(b"".join(data), algorithm, options.compression.level)]
    if key is not None:
        from aprender.format.apr._crypto import encrypt

        data = encrypt(key, meta["encryption"], b"".join(data), aad=prefix)
    chunks: list[Chunk] = [prefix, *data]
    if signing_key is not None:
        from aprender.format.apr._crypto import sign

        chunks.append(sign(b"".join(chunks), signing_key))
    crc = 0
    for chunk in chunks:
        crc = crc32(chunk, crc)
    chunks.append(crc.to_bytes(4, "little"))
    return chunks
