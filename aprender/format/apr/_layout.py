"""The bytes of an .apr v2 file: constants, header, tensor index (docs/apr-format.md).

Everything here is pure byte layout: packing and strictly validating the 64-byte
header and the binary tensor index. Parsing never trusts a size before checking it
against the length of the file, so nothing is allocated on a header's word alone.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntFlag
from typing import NamedTuple

import numpy as np

from aprender._lazy import LazyValues, bfloat16
from aprender._limits import MAX_ELEMENTS, MAX_NDIM, checked_shape
from aprender.exceptions import ChecksumMismatch, FormatError, UnsupportedVersion
from aprender.format._crc import crc32

__all__ = [
    "ALIGNMENT",
    "DTYPES",
    "FLAG_ENCRYPTED",
    "FLAG_LZ4",
    "FLAG_QUANTIZED",
    "FLAG_SHARDED",
    "FLAG_SIGNED",
    "FLAG_ZSTD",
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MAGIC",
    "QUANTIZED_CODES",
    "SIGNATURE_BLOCK_SIZE",
    "VERSION",
    "IndexEntry",
    "Flags",
    "Header",
    "align",
    "dtype_code",
    "pack_index",
    "parse_header",
    "parse_index",
]

MAGIC = b"APR\x00"
#: (major, minor) written and read.
VERSION = (2, 0)
HEADER_SIZE = 64
#: Metadata, index, data section and every tensor start on this boundary.
ALIGNMENT = 64
FOOTER_SIZE = 4
#: Ed25519 signature (64 bytes) followed by the raw public key (32 bytes).
SIGNATURE_BLOCK_SIZE = 96
#: Index entry limit: the u16 name length (shapes: aprender._limits.MAX_NDIM).
MAX_NAME_BYTES = 0xFFFF
#: Smallest index entry: name length, dtype, ndim, offset, size (empty name, 0-d).
_MIN_ENTRY = 2 + 1 + 1 + 8 + 8

# magic, major, minor, flags, tensor_count, metadata_offset, metadata_size,
# tensor_index_offset, data_offset, header CRC32, reserved
_HEADER = struct.Struct("<4sBBHIQIQQI20s")
assert _HEADER.size == HEADER_SIZE


class Flags(IntFlag):
    """Header flag bits: the values of the Rust aprender library's ``AprV2Flags``, so both read one file alike."""

    LZ4 = 0x0001
    ZSTD = 0x0002
    ENCRYPTED = 0x0004
    SIGNED = 0x0008
    SHARDED = 0x0010
    QUANTIZED = 0x0020


#: The bits as plain ints, for the tests every load makes: an enum member is read through a descriptor.
FLAG_LZ4, FLAG_ZSTD, FLAG_ENCRYPTED, FLAG_SIGNED, FLAG_SHARDED, FLAG_QUANTIZED = (
    Flags.LZ4.value, Flags.ZSTD.value, Flags.ENCRYPTED.value, Flags.SIGNED.value, Flags.SHARDED.value,
    Flags.QUANTIZED.value)
#: Bits this reader understands (sharded files are not supported).
_KNOWN_FLAGS = FLAG_LZ4 | FLAG_ZSTD | FLAG_ENCRYPTED | FLAG_SIGNED | FLAG_QUANTIZED


@dataclass(frozen=True)
class DType:
    """One dtype code: a numpy dtype, or a GGML block format (``block`` bytes per 32 values)."""

    code: int
    name: str
    numpy: np.dtype
    block: int = 0


def _q(code: int, name: str, block: int) -> DType:
    return DType(code, name, np.dtype(np.uint8), block)


_BF16 = 2
#: Codes 0-7 are those of the Rust aprender library's APR v2; 8 and 9 (its generic Q4/Q8)
#: are never reused. bfloat16's entry comes in on first use (ml_dtypes): ``DTYPES[2]``
#: builds it.
DTYPES: dict[int, DType] = LazyValues({
    d.code: d
    for d in (
        DType(0, "float32", np.dtype("<f4")),
        DType(1, "float16", np.dtype("<f2")),
        DType(3, "float64", np.dtype("<f8")),
        DType(4, "int32", np.dtype("<i4")),
        DType(5, "int64", np.dtype("<i8")),
        DType(6, "int8", np.dtype("i1")),
        DType(7, "uint8", np.dtype("u1")),
        DType(10, "int16", np.dtype("<i2")),
        DType(11, "uint16", np.dtype("<u2")),
        DType(12, "uint32", np.dtype("<u4")),
        DType(13, "uint64", np.dtype("<u8")),
        DType(14, "bool", np.dtype(np.bool_)),
        # GGML blocks of 32 values, byte for byte as in GGUF (gguf.quants).
        _q(16, "q8_0", 34),
        _q(17, "q4_0", 18),
        _q(18, "q4_1", 20),
    )
}, {_BF16: lambda: DType(_BF16, "bfloat16", bfloat16())})
_BY_NUMPY = {d.numpy: d.code for d in DTYPES.values() if not d.block}
#: Code -> bytes per value, 0 for GGML blocks (what parse_index reads per entry).
_ITEMSIZES = {d.code: 0 if d.block else d.numpy.itemsize for d in DTYPES.values()} | {_BF16: 2}
QUANTIZED_CODES = {d.name: d.code for d in DTYPES.values() if d.block}
_BLOCK_VALUES = 32


def align(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`ALIGNMENT`."""
    return -(-n // ALIGNMENT) * ALIGNMENT


def dtype_code(dtype: np.dtype, name: str) -> int:
    """The code of a numpy dtype; ``FormatError`` if .apr cannot store it."""
    dtype = np.dtype(dtype)
    code = _BY_NUMPY.get(dtype)
    if code is None and dtype.name == "bfloat16" and dtype == DTYPES[_BF16].numpy:
        code = _BF16
    if code is None:
        raise FormatError(f"tensor '{name}' has dtype {dtype}, which .apr cannot store")
    return code


# -- header ----------------------------------------------------------------------------


class Header(NamedTuple):
    """The variable fields of the 64-byte header (metadata always starts at byte 64).

    A named tuple, like :class:`IndexEntry`: every load and save builds one, and a frozen
    dataclass costs several times more to build.
    """

    flags: int  # a plain int: IntFlag arithmetic costs microseconds per test on every load
    tensor_count: int
    metadata_size: int
    tensor_index_offset: int
    data_offset: int

    def tail_size(self) -> int:
        """Bytes after the data section: signature block (if signed) and footer."""
        return FOOTER_SIZE + (SIGNATURE_BLOCK_SIZE if self.flags & FLAG_SIGNED else 0)

    def pack(self) -> bytes:
        """The 64 header bytes, CRC included."""
        fields = [MAGIC, *VERSION, int(self.flags), self.tensor_count, HEADER_SIZE, self.metadata_size,
                  self.tensor_index_offset, self.data_offset]
        unsigned = _HEADER.pack(*fields, 0, bytes(20))
        return _HEADER.pack(*fields, header_crc(unsigned), bytes(20))


def header_crc(header: bytes | memoryview) -> int:
    """CRC32 of header bytes 0-39 and 44-63 (everything but the CRC field)."""
    return crc32(header[44:64], crc32(header[:40]))


def check_magic(head: bytes | memoryview | np.ndarray, total: int, where: str) -> None:
    """Reject what is not an .apr file at all, before anything else is read."""
    if total == 0:
        raise FormatError(f"{where}: the file is empty")
    found = bytes(head[:4])
    if found != MAGIC[: len(found)]:
        raise FormatError(f"{where}: not an .apr file (bytes 0-3 are {found.hex()}, expected {MAGIC.hex()})")


def parse_header(head: bytes | memoryview | np.ndarray, total: int, where: str) -> Header:
    """Validate the first 64 bytes of a ``total``-byte file and return its header.

    Checks, in order: magic, version, header CRC, reserved bytes, flags, and that
    every offset and size is aligned, ordered and inside the file.
    """
    check_magic(head, total, where)
    if total < HEADER_SIZE + FOOTER_SIZE:
        raise FormatError(f"{where}: truncated at {total} bytes (an .apr file needs at least "
                          f"{HEADER_SIZE + FOOTER_SIZE})")
    head = bytes(head[:HEADER_SIZE])
    (_, major, minor, flags, count, meta_offset, meta_size, index_offset, data_offset, crc,
     reserved) = _HEADER.unpack(head)
    if (major, minor) != VERSION:
        raise UnsupportedVersion(f"{major}.{minor}", f"{VERSION[0]}.{VERSION[1]}", where)
    actual = header_crc(head)
    if crc != actual:
        raise ChecksumMismatch(crc, actual, "header (bytes 0-63)")
    if reserved != bytes(20):
        raise FormatError(f"{where}: reserved header bytes 44-63 must be zero")
    _check_flags(flags, where)
    header = Header(flags, count, meta_size, index_offset, data_offset)
    if meta_offset != HEADER_SIZE:
        raise FormatError(f"{where}: metadata_offset (bytes 12-19) is {meta_offset}, must be {HEADER_SIZE}")
    if meta_size == 0 or HEADER_SIZE + meta_size + header.tail_size() > total:
        raise FormatError(f"{where}: metadata_size {meta_size} (bytes 20-23) does not fit the {total}-byte file")
    if index_offset != HEADER_SIZE + align(meta_size):
        raise FormatError(f"{where}: tensor_index_offset {index_offset} (bytes 24-31) must be "
                          f"{HEADER_SIZE + align(meta_size)}, right after the padded metadata")
    if data_offset % ALIGNMENT or not index_offset + count * _MIN_ENTRY <= data_offset:
        raise FormatError(f"{where}: data_offset {data_offset} (bytes 32-39) is not a 64-byte aligned offset "
                          f"after an index of {count} tensors")
    if data_offset + header.tail_size() > total:
        raise FormatError(f"{where}: data_offset {data_offset} (bytes 32-39) lies past the end of the "
                          f"{total}-byte file (truncated?)")
    return header


def _check_flags(flags: int, where: str) -> None:
    if flags & FLAG_SHARDED:
        raise FormatError(f"{where}: sharded .apr files are not supported")
    if flags & ~_KNOWN_FLAGS:
        raise FormatError(f"{where}: unknown header flags 0x{flags & ~_KNOWN_FLAGS:04x} (bytes 6-7)")
    if flags & FLAG_LZ4 and flags & FLAG_ZSTD:
        raise FormatError(f"{where}: header flags select both LZ4 and zstd compression")


# -- tensor index ----------------------------------------------------------------------


class IndexEntry(NamedTuple):
    """One tensor index entry; ``offset`` is relative to the data section.

    A named tuple: a load builds one per tensor, and a frozen dataclass costs several
    times more to build.
    """

    name: str
    code: int
    shape: tuple[int, ...]
    offset: int
    size: int

    @property
    def dtype(self) -> DType:
        return DTYPES[self.code]

    def array_shape(self) -> tuple[int, ...]:
        """Shape of the numpy array: the shape itself, or the block bytes per row."""
        if not self.dtype.block:
            return self.shape
        *lead, last = self.shape
        return (*lead, last // _BLOCK_VALUES * self.dtype.block)


def _block_nbytes(code: int, shape: tuple[int, ...]) -> int | None:
    """Bytes of GGML blocks holding ``shape`` values, or None if the last axis is not whole blocks."""
    if not shape or shape[-1] % _BLOCK_VALUES:
        return None
    return math.prod(shape) // _BLOCK_VALUES * DTYPES[code].block


def layout(tensors: Mapping[str, np.ndarray], quantized: Mapping[str, str]) -> tuple[list[IndexEntry], int]:
    """Index entries for ``tensors`` sorted by name, and the data section length.

    ``quantized`` maps the names of GGML block tensors to their format: those are
    ``uint8`` arrays whose last axis holds whole blocks, indexed by their value shape.
    """
    entries, offset = [], 0
    for name in sorted(tensors):
        array = tensors[name]
        if name in quantized:
            code = QUANTIZED_CODES[quantized[name]]
            block = DTYPES[code].block
            if array.dtype != np.uint8 or array.ndim < 1 or array.shape[-1] % block:
                raise FormatError(f"tensor '{name}' is not an array of whole {quantized[name]} blocks")
            shape = (*array.shape[:-1], array.shape[-1] // block * _BLOCK_VALUES)
        else:
            code, shape = dtype_code(array.dtype, name), array.shape
        if len(name.encode()) > MAX_NAME_BYTES or not name or array.ndim > MAX_NDIM:
            raise FormatError(f"tensor '{name[:80]}': names must have 1-{MAX_NAME_BYTES} bytes and at most "
                              f"{MAX_NDIM} dimensions")
        entries.append(IndexEntry(name, code, tuple(shape), offset, array.nbytes))
        offset = align(offset + array.nbytes)
    return entries, offset


def pack_index(entries: list[IndexEntry]) -> bytes:
    """The index bytes, zero-padded to the alignment."""
    out = bytearray()
    for e in entries:
        name = e.name.encode()
        out += struct.pack(f"<H{len(name)}sBB{len(e.shape)}QQQ", len(name), name, e.code, len(e.shape),
                           *e.shape, e.offset, e.size)
    return bytes(out) + bytes(align(len(out)) - len(out))


#: The rest of an index entry with ``ndim`` dimensions: its shape, offset and size.
_ENTRY_TAIL = [struct.Struct(f"<{ndim}QQQ") for ndim in range(MAX_NDIM + 1)]


def _at(where: str, i: int, offset: int) -> str:
    """Where index entry ``i``, at file byte ``offset``, is: the start of its messages."""
    return f"{where}: tensor index entry {i} at byte {offset}"


def parse_index(raw: bytes, header: Header, where: str) -> tuple[list[IndexEntry], int]:
    """Validate the index bytes; return the entries and the data section length.

    Entries must be sorted by name without duplicates and tile the data section in
    that order: each starts at the aligned end of the previous one.
    """
    entries: list[IndexEntry] = []
    pos, expected_offset, previous = 0, 0, b""
    base, end = header.tensor_index_offset, len(raw)
    for i in range(header.tensor_count):
        # Read for every tensor of every load: bytes are indexed and sizes looked up rather than
        # unpacked and computed, and the location in messages is built only when one is raised.
        start = pos
        if pos + _MIN_ENTRY > end:
            raise FormatError(f"{_at(where, i, base + start)}: the index ends before all {header.tensor_count} entries")
        name_len = raw[pos] | raw[pos + 1] << 8
        if pos + _MIN_ENTRY + name_len > end:
            raise FormatError(f"{_at(where, i, base + start)}: name of {name_len} bytes runs past the index")
        pos += 2 + name_len
        name_bytes = raw[pos - name_len : pos]
        code, ndim = raw[pos], raw[pos + 1]
        pos += 2
        if ndim > MAX_NDIM or pos + 8 * ndim + 16 > end:
            raise FormatError(f"{_at(where, i, base + start)}: {ndim} dimensions do not fit the index "
                              f"(at most {MAX_NDIM})")
        *shape, offset, size = _ENTRY_TAIL[ndim].unpack_from(raw, pos)
        pos += 8 * ndim + 16
        try:
            name = name_bytes.decode()
        except UnicodeDecodeError:
            raise FormatError(f"{_at(where, i, base + start)}: tensor name is not UTF-8") from None
        if not name_bytes:
            raise FormatError(f"{_at(where, i, base + start)}: empty tensor name")
        if name_bytes <= previous:
            raise FormatError(f"{_at(where, i, base + start)}: tensor '{name[:80]}' breaks the strictly sorted "
                              "order of names")
        itemsize = _ITEMSIZES.get(code)
        if itemsize is None:
            raise FormatError(f"{_at(where, i, base + start)}: tensor '{name[:80]}' has unknown dtype code {code}")
        # Unpacked dimensions are ints >= 0: a positive product in range is checked_shape's verdict too.
        count = math.prod(shape)
        if not 0 < count <= MAX_ELEMENTS:
            checked_shape(shape, f"{_at(where, i, base + start)}: tensor '{name[:80]}'")
        dims = tuple(shape)
        expected_size = count * itemsize if itemsize else _block_nbytes(code, dims)
        if size != expected_size:
            raise FormatError(f"{_at(where, i, base + start)}: tensor '{name[:80]}' of shape {shape} and "
                              f"dtype {DTYPES[code].name} cannot occupy {size} bytes")
        if offset != expected_offset:
            raise FormatError(f"{_at(where, i, base + start)}: tensor '{name[:80]}' starts at data byte {offset}, "
                              f"expected {expected_offset} (tensors tile the data section in name order, "
                              "64-byte aligned)")
        entries.append(IndexEntry(name, code, dims, offset, size))
        previous, expected_offset = name_bytes, align(offset + size)
    if align(pos) != end or any(raw[pos:]):
        raise FormatError(f"{where}: the tensor index ends at byte {base + pos}; bytes {base + pos}-"
                          f"{header.data_offset - 1} must be zero padding below the next 64-byte boundary")
    return entries, expected_offset
