"""CRC32 with zlib's polynomial: ISA-L's when ``isal`` is installed (the ``fast`` extra), else zlib's.

Both compute the same checksum (the files are identical either way); ISA-L's runs
several times faster, which is most of a full-CRC load of a large .apr file. ISA-L also
combines the CRCs of two adjacent pieces (``crc32_combine``), so a large file can be read
and checked in two halves at once; it is None without ISA-L.
"""

from __future__ import annotations

from collections.abc import Callable

try:
    from isal.isal_zlib import crc32, crc32_combine
except ImportError:  # the optional dependency is absent: the standard library's, which cannot combine
    from zlib import crc32

    crc32_combine: Callable[[int, int, int], int] | None = None  # type: ignore[no-redef]

__all__ = ["crc32", "crc32_combine"]
