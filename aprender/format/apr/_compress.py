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

__all__ = ["MAX_ZSTD_WINDOW", "compress", "decompress"]

#: Largest expansion each format can produce (zstd: a 4-byte RLE block per 128 KiB;
#: LZ4: 255 bytes of match length per length byte), plus one block of slack.
_MAX_RATIO = {"zstd": (1 << 15, 1 << 17), "lz4": (1 << 8, 1 << 16)}
_CHUNK = 1 << 22
#: Largest zstd window a reader accepts: the decoder allocates it whatever the frame holds.
#: aprender writes at most 8 MiB (level 19); zstd's own default limit is 128 MiB.
MAX_ZSTD_WINDOW = 1 << 24


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
    try:
        out, extra = (_zstd if algorithm == "zstd" else _lz4)(stored, size)
    except (zstandard.ZstdError, RuntimeError) as exc:
        raise FormatError(f"{where}: corrupt {algorithm} data section: {exc}") from None
    if out is None or out.shape[0] != size or extra:
        raise FormatError(f"{where}: the {algorithm} data section does not expand to the {size} bytes the index "
                          "describes")
    return out


def _zstd(stored: memoryview, size: int) -> tuple[np.ndarray, bool]:
    # Streams into a buffer of the checked size; read_across_frames makes trailing bytes
    # parse as frames too (or raise), so nothing after the frame goes unnoticed.
    out = np.empty(size, dtype=np.uint8)
    view = memoryview(out)
    decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW)
    reader = decompressor.stream_reader(stored, read_size=_CHUNK, read_across_frames=True)
    filled = 0
    while filled < size:
        n = reader.readinto(view[filled:])
        if n == 0:
            break
        filled += n
    return out[:filled], bool(reader.read(1))


def _lz4(stored: memoryview, size: int) -> tuple[np.ndarray | None, bool]:
    # The one-shot decompressor allocates what the frame header declares: check it first.
    if lz4.frame.get_frame_info(stored)["content_size"] != size:
        return None, True
    decompressor = lz4.frame.LZ4FrameDecompressor(return_bytearray=True)
    out = decompressor.decompress(stored, max_length=size)  # max_length: one allocation of the checked size
    return np.frombuffer(out, dtype=np.uint8), not decompressor.eof or bool(decompressor.unused_data)
