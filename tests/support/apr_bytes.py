"""Byte-level edits of .apr files, as a forger makes them: CRCs refreshed, header fields read.

Offsets are those of docs/apr-format.md's 64-byte header.
"""

from __future__ import annotations

import zlib

__all__ = ["layout_of", "refresh_crcs"]


def refresh_crcs(data: bytes | bytearray) -> bytes:
    """Recompute the header and footer CRCs, as a forger would, so structure checks are reached."""
    data = bytearray(data)
    header_crc = zlib.crc32(bytes(data[44:64]), zlib.crc32(bytes(data[:40])))
    data[40:44] = header_crc.to_bytes(4, "little")
    data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
    return bytes(data)


def layout_of(data: bytes) -> tuple[int, int, int]:
    """(metadata size, tensor index offset, data offset) from a header."""
    return (int.from_bytes(data[20:24], "little"), int.from_bytes(data[24:32], "little"),
            int.from_bytes(data[32:40], "little"))
