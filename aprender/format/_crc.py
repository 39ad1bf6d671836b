"""CRC32 with zlib's polynomial: ISA-L's when ``isal`` is installed (the ``fast`` extra), else zlib's.

Both compute the same checksum (the files are identical either way); ISA-L's runs
several times faster, which is most of a full-CRC load of a large .apr file.
"""

from __future__ import annotations

try:
    from isal.isal_zlib import crc32
except ImportError:  # the optional dependency is absent: the standard library's
    from zlib import crc32

__all__ = ["crc32"]
