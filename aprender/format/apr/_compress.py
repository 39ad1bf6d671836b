"""Compression of the .apr data section: one zstd or LZ4 frame (``zstandard``, ``lz4``).

Decompression fills a buffer of the size the tensor index implies, and only after
checking that size against the compressed bytes: first against what the format can
physically produce, then against a default cap on the expansion
(:data:`MAX_DECOMPRESSED_RATIO` times the compressed bytes plus
:data:`DECOMPRESSED_ALLOWANCE`). What a small file can make a load allocate is thus
proportional to the file unless the caller opts in (``max_decompressed_ratio=None``).
"""

from __future__ import annotations

import numpy as np

from aprender.exceptions import FormatError

__all__ = [
    "DECOMPRESSED_ALLOWANCE",
    "MAX_DECOMPRESSED_RATIO",
    "MAX_ZSTD_WINDOW",
    "check_expansion",
    "check_ratio_option",
    "compress",
    "decompress",
]

#: Largest expansion each format can produce (zstd: a 4-byte RLE block per 128 KiB;
#: LZ4: 255 bytes of match length per length byte), plus one block of slack.
_MAX_RATIO = {"zstd": (1 << 15, 1 << 17), "lz4": (1 << 8, 1 << 16)}
_CHUNK = 1 << 22
#: Largest zstd window a reader accepts: the decoder allocates it whatever the frame holds.
#: aprender writes at most 8 MiB (level 19); zstd's own default limit is 128 MiB.
MAX_ZSTD_WINDOW = 1 << 24
#: Default cap on a data section's expansion: decompressed bytes <= this many times the
#: compressed bytes + DECOMPRESSED_ALLOWANCE. The zoo's models compress 2-13x (zstd-max),
#: dense one-hot data about 160x; only near-constant data goes further (up to zstd's
#: 32768x), and the allowance still takes 32 MiB of it whatever the ratio.
MAX_DECOMPRESSED_RATIO = 256
DECOMPRESSED_ALLOWANCE = 32 << 20


def compress(data: bytes | memoryview, algorithm: str, level: int) -> bytes:
    """One frame holding ``data`` (deterministic for a given level)."""
    import lz4.frame  # zstandard and lz4 load with the first compressed file: plain loads skip them
    import zstandard

    if algorithm == "zstd":
        return zstandard.ZstdCompressor(level=level).compress(data)
    return lz4.frame.compress(data, compression_level=level, store_size=True)


def check_ratio_option(max_ratio: float | None) -> None:
    """Refuse a ``max_decompressed_ratio`` that is neither None nor a positive number."""
    if max_ratio is not None and (isinstance(max_ratio, bool) or not isinstance(max_ratio, (int, float))
                                  or not max_ratio > 0):
        raise ValueError(f"max_decompressed_ratio must be a positive number or None, got {max_ratio!r}")


def check_expansion(stored: int, algorithm: str, size: int, where: str,
                    max_ratio: float | None = MAX_DECOMPRESSED_RATIO) -> None:
    """Refuse ``size`` decompressed bytes from ``stored`` compressed ones before anything is allocated.

    Beyond what ``algorithm`` can produce the file is malformed; beyond ``max_ratio``
    (None: no cap) it is refused unless the caller opts in.
    """
    ratio, slack = _MAX_RATIO[algorithm]
    if size > stored * ratio + slack:
        raise FormatError(f"{where}: the index needs {size} data bytes, more than {stored} bytes of "
                          f"{algorithm} can hold")
    if max_ratio is not None and size > stored * max_ratio + DECOMPRESSED_ALLOWANCE:
        raise FormatError(f"{where}: the index declares {size} data bytes for {stored} bytes of {algorithm}, "
                          f"more than a load expands by default ({max_ratio:g}x the compressed bytes + "
                          f"{DECOMPRESSED_ALLOWANCE >> 20} MiB); if you trust the file, load it with "
                          "max_decompressed_ratio=None or a higher ratio (CLI: --allow-large)")


def decompress(stored: memoryview, algorithm: str, size: int, where: str,
               max_ratio: float | None = MAX_DECOMPRESSED_RATIO) -> np.ndarray:
    """Expand one frame to exactly ``size`` bytes, as a writable ``uint8`` array.

    ``size`` is checked first (:func:`check_expansion`); the frame is then streamed
    into a buffer of that size, so a frame that expands further fails, never grows it.
    """
    import zstandard

    check_expansion(len(stored), algorithm, size, where, max_ratio)
    try:
        out, extra = (_zstd if algorithm == "zstd" else _lz4)(stored, size)
    except (zstandard.ZstdError, RuntimeError) as exc:
        raise FormatError(f"{where}: corrupt {algorithm} data section: {exc}") from None
    if out is None or out.shape[0] != size or extra:
        raise FormatError(f"{where}: the {algorithm} data section does not expand to the {size} bytes the index "
                          "describes")
    return out


def _zstd(stored: memoryview, size: int) -> tuple[np.ndarray, bool]:
    import zstandard

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
    import lz4.frame

    # The one-shot decompressor allocates what the frame header declares: check it first.
    if lz4.frame.get_frame_info(stored)["content_size"] != size:
        return None, True
    decompressor = lz4.frame.LZ4FrameDecompressor(return_bytearray=True)
    out = decompressor.decompress(stored, max_length=size)  # max_length: one allocation of the checked size
    return np.frombuffer(out, dtype=np.uint8), not decompressor.eof or bool(decompressor.unused_data)
