"""Compression of the .apr data section: one zstd or LZ4 frame (``zstandard``, ``lz4``).

Decompression fills a buffer of the size the tensor index implies, and only after
checking that the compressed bytes could possibly expand to it: the output of a
hostile file is bounded by what its compressed bytes justify, never by a claim.
"""

from __future__ import annotations

import lz4.frame
import numpy as np
import zstandard

from aprender.exceptions import FormatError

__all__ = ["compress", "decompress"]

#: Largest expansion each format can produce (zstd: a 4-byte RLE block per 128 KiB;
#: LZ4: 255 bytes of match length per length byte), plus one block of slack.
_MAX_RATIO = {"zstd": (1 << 15, 1 << 17), "lz4": (1 << 8, 1 << 16)}
_CHUNK = 1 << 24


def compress(data: bytes | memoryview, algorithm: str, level: int) -> bytes:
    """One frame holding ``data`` (deterministic for a given level)."""
    if algorithm == "zstd":
        return zstandard.ZstdCompressor(level=level).compress(data)
    return lz4.frame.compress(data, compression_level=level, store_size=True)


def decompress(stored: memoryview, algorithm: str, size: int, where: str) -> np.ndarray:
    """Expand one frame to exactly ``size`` bytes, as a writable ``uint8`` array."""
    ratio, slack = _MAX_RATIO[algorithm]
    if size > len(stored) * ratio + slack:
        raise FormatError(f"{where}: the index needs {size} data bytes, more than {len(stored)} bytes of "
                          f"{algorithm} can hold")
    out = np.empty(size, dtype=np.uint8)
    try:
        filled, extra = (_zstd if algorithm == "zstd" else _lz4)(stored, memoryview(out))
    except (zstandard.ZstdError, RuntimeError) as exc:
        raise FormatError(f"{where}: corrupt {algorithm} data section: {exc}") from None
    if filled != size or extra:
        raise FormatError(f"{where}: the {algorithm} data section does not expand to the {size} bytes the index "
                          "describes")
    return out


def _zstd(stored: memoryview, out: memoryview) -> tuple[int, bool]:
    # read_across_frames: trailing bytes must parse as frames too, or raise.
    reader = zstandard.ZstdDecompressor().stream_reader(stored, read_across_frames=True)
    filled = 0
    while filled < len(out):
        n = reader.readinto(out[filled : filled + _CHUNK])
        if n == 0:
            break
        filled += n
    return filled, bool(reader.read(1))


def _lz4(stored: memoryview, out: memoryview) -> tuple[int, bool]:
    decompressor = lz4.frame.LZ4FrameDecompressor()
    filled, data = 0, stored
    while not decompressor.eof:
        chunk = decompressor.decompress(data, max_length=_CHUNK)
        data = b""
        if filled + len(chunk) > len(out):
            return filled + len(chunk), True
        out[filled : filled + len(chunk)] = chunk
        filled += len(chunk)
        if not chunk:
            break
    return filled, not decompressor.eof or bool(decompressor.unused_data)
