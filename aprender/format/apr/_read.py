""".apr bytes -> ModelState: checks in a fixed order, then tensors as views.

Order (docs/apr-format.md, "What each load path verifies"): magic; signature (when
asked); header version, CRC, flags and offsets; footer CRC over the whole file
(skipped by the memory-mapped path); metadata JSON; tensor index; then the data
section is decrypted and decompressed as the flags say, and every tensor becomes a
view into one buffer.
"""

from __future__ import annotations

import mmap
import os
from typing import Any, NamedTuple

import numpy as np

from aprender.codec import ModelState, parse_json
from aprender.exceptions import ChecksumMismatch, FormatError, SignatureInvalid
from aprender.format._crc import crc32, crc32_combine
from aprender.format._io import existing_file, fill, open_model_file
from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO, check_expansion, decompress
from aprender.format.apr._layout import (
    FLAG_ENCRYPTED,
    FLAG_LZ4,
    FLAG_QUANTIZED,
    FLAG_SIGNED,
    FLAG_ZSTD,
    FOOTER_SIZE,
    HEADER_SIZE,
    QUANTIZED_CODES,
    SIGNATURE_BLOCK_SIZE,
    Header,
    IndexEntry,
    check_magic,
    parse_header,
    parse_index,
)
from aprender.format.apr._options import CONTAINER_KEYS

__all__ = ["Keys", "Parsed", "check", "map_file", "parse", "read_file", "read_prefix", "state_of", "verify_signature"]

#: Read size of the default load; the CRC of one chunk runs while the next is read.
_CHUNK = 1 << 23


class Keys(NamedTuple):
    """What the caller passed to open a file, and how far its data section may expand."""

    password: object = None
    secret_key: object = None
    verifying_key: object = None
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO


class Parsed(NamedTuple):
    """A checked header, metadata and index (named tuples: each load builds one of these and one Keys)."""

    header: Header
    meta: dict[str, Any]
    entries: list[IndexEntry]
    data_size: int
    total: int
    where: str

    @property
    def compression(self) -> str | None:
        """``"zstd"``, ``"lz4"`` or None."""
        flags = self.header.flags
        return "zstd" if flags & FLAG_ZSTD else "lz4" if flags & FLAG_LZ4 else None

    @property
    def encrypted(self) -> bool:
        return bool(self.header.flags & FLAG_ENCRYPTED)

    @property
    def stored(self) -> slice:
        """Where the data section lies in the file."""
        return slice(self.header.data_offset, self.total - self.header.tail_size())


# -- reading files ---------------------------------------------------------------------


def read_file(path: str | os.PathLike) -> tuple[np.ndarray, int, str]:
    """The whole file in a fresh writable buffer, and the CRC32 of all but its footer.

    The magic is checked before anything else is read past the first chunk. A large
    file is read in chunks: with ISA-L, two threads each read and checksum one half
    and the two CRCs are combined (faulting in fresh memory, which dominates, then runs
    on both cores); without it, the CRC of each chunk runs on a second thread while the
    next chunk is read.
    """
    where = f"'{os.fspath(path)}'"
    fd, total = open_model_file(path)
    try:
        buffer = np.empty(total, dtype=np.uint8)
        view = memoryview(buffer)
        end = max(total - FOOTER_SIZE, 0)
        if total <= _CHUNK:  # one read: a small file costs no more than its first bytes
            fill(fd, view, 0, where)
            check_magic(view[:4], total, where)
            return buffer, crc32(view[:end]), where
        # Imported here: a small file (and every header-only read) needs no thread pool.
        from concurrent.futures import ThreadPoolExecutor

        fill(fd, view[:HEADER_SIZE], 0, where)
        check_magic(view[:4], total, where)
        crc = crc32(view[:HEADER_SIZE])
        if crc32_combine is not None:
            half = HEADER_SIZE + (total - HEADER_SIZE) // 2
            halves = ((HEADER_SIZE, half), (half, total))
            with ThreadPoolExecutor(max_workers=2) as pool:
                parts = [pool.submit(_read_summed, fd, view, lo, hi, end, where) for lo, hi in halves]
                for part, (lo, hi) in zip(parts, halves, strict=True):
                    crc = crc32_combine(crc, part.result(), min(hi, end) - lo)
            return buffer, crc, where
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = None
            for start in range(HEADER_SIZE, total, _CHUNK):
                stop = min(start + _CHUNK, total)
                fill(fd, view[start:stop], start, where)
                if pending is not None:
                    crc = pending.result()
                pending = pool.submit(crc32, view[start : min(stop, end)], crc)
            return buffer, pending.result(), where
    finally:
        os.close(fd)


def _read_summed(fd: int, view: memoryview, lo: int, hi: int, end: int, where: str) -> int:
    """Read bytes ``lo:hi`` of the file into ``view`` chunk by chunk; the CRC32 of those below ``end``."""
    crc = 0
    for start in range(lo, hi, _CHUNK):
        stop = min(start + _CHUNK, hi)
        fill(fd, view[start:stop], start, where)
        crc = crc32(view[start : min(stop, end)], crc)  # the chunk is still in the cache
    return crc


def map_file(path: str | os.PathLike) -> tuple[np.ndarray, str]:
    """A ``uint8`` view of the file through a private, copy-on-write memory map (nothing is read).

    A private map (``MAP_PRIVATE``) costs what a read-only one does, and lets the loaded
    model keep training: ``partial_fit`` writing into a fitted array copies only the pages
    it writes, into this process's memory, and the file never changes. A system that
    refuses a private writable map of the file (a write-sealed memfd on an old kernel)
    gets a read-only one, whose arrays refuse writes instead.
    """
    p = existing_file(path)
    where = f"'{p}'"
    with open(p, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise FormatError(f"{where}: the file is empty")
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except PermissionError:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mapped, dtype=np.uint8), where


def read_prefix(path: str | os.PathLike) -> tuple[Parsed, bytes | None]:
    """Header, metadata and index of a file, and its embedded public key if signed.

    Only those bytes are read: the data section is never touched.
    """
    p = existing_file(path)
    where = f"'{p}'"
    with open(p, "rb") as f:
        total = os.fstat(f.fileno()).st_size
        head = f.read(HEADER_SIZE)
        header = parse_header(head, total, where)
        prefix = head + f.read(header.data_offset - HEADER_SIZE)
        public_key = None
        if header.flags & FLAG_SIGNED:
            f.seek(total - FOOTER_SIZE - 32)
            public_key = f.read(32)
    return parse(header, prefix, total, where), public_key


# -- checks ----------------------------------------------------------------------------


def verify_signature(buffer: np.ndarray, total: int, verifying_key: object, where: str) -> bytes:
    """Ed25519 check of everything before the signature block, before trusting any header field.

    Returns the raw public key the signature verified against (the embedded one, which
    must equal ``verifying_key`` when one is given).
    """
    from aprender.format.apr._crypto import verify

    flags = int.from_bytes(bytes(buffer[6:8]), "little") if total >= 8 else 0
    if not flags & FLAG_SIGNED or total < HEADER_SIZE + SIGNATURE_BLOCK_SIZE + FOOTER_SIZE:
        raise SignatureInvalid(f"{where}: the file is not signed; there is no signature to verify")
    block_start = total - FOOTER_SIZE - SIGNATURE_BLOCK_SIZE
    block = bytes(buffer[block_start : total - FOOTER_SIZE])
    verify(memoryview(buffer[:block_start]), block, verifying_key, where)
    return block[64:]


def check(
    buffer: np.ndarray,
    total: int,
    where: str,
    *,
    crc: int | None,
    verify: bool = False,
    verifying_key: object = None,
    mapped: bool = False,
) -> Parsed:
    """Every check that precedes the data section, in the documented order.

    ``crc`` is the CRC32 of all but the footer (None: the footer is not checked,
    the memory-mapped path). ``verify`` (or a ``verifying_key``) demands a valid
    signature, checked before any header field is trusted. Any other file whose header
    says it is signed has its signature checked, once its structure has passed, against
    the public key embedded in it: a signed file never loads unverified.
    """
    check_magic(buffer[:4], total, where)
    demanded = verify or verifying_key is not None
    if demanded:
        verify_signature(buffer, total, verifying_key, where)
    header = parse_header(buffer[:HEADER_SIZE], total, where)
    if crc is not None:
        stored = int.from_bytes(bytes(buffer[total - FOOTER_SIZE : total]), "little")
        if stored != crc:
            raise ChecksumMismatch(stored, crc, f"{where} (footer CRC32 of bytes 0-{total - FOOTER_SIZE - 1})")
    parsed = parse(header, buffer, total, where)
    if header.flags & FLAG_SIGNED and not demanded:
        verify_signature(buffer, total, None, where)
    if mapped and (parsed.encrypted or parsed.compression is not None):
        kind = "encrypted" if parsed.encrypted else "compressed"
        raise ValueError(f"{where}: mmap=True needs an uncompressed, unencrypted file and this one is {kind}; "
                         "load it without mmap")
    return parsed


def parse(header: Header, prefix: Any, total: int, where: str) -> Parsed:
    """Parse metadata and index from ``prefix`` (at least the first data_offset bytes)."""
    meta_end = HEADER_SIZE + header.metadata_size
    raw = bytes(prefix[HEADER_SIZE:meta_end])
    meta = parse_json(raw, f"{where}: metadata (bytes {HEADER_SIZE}-{meta_end - 1})")
    if not isinstance(meta, dict):
        raise FormatError(f"{where}: the metadata must be a JSON object")
    if any(bytes(prefix[meta_end : header.tensor_index_offset])):
        raise FormatError(f"{where}: metadata padding (bytes {meta_end}-{header.tensor_index_offset - 1}) "
                          "must be zero")
    entries, data_size = parse_index(bytes(prefix[header.tensor_index_offset : header.data_offset]), header, where)
    parsed = Parsed(header, meta, entries, data_size, total, where)
    _check_meta(parsed)
    _check_sizes(parsed)
    return parsed


def _check_meta(p: Parsed) -> None:
    flags, meta, where = p.header.flags, p.meta, p.where
    compression = meta.get("compression")
    if (compression is None) != (p.compression is None) or (
        compression is not None
        and (not isinstance(compression, dict) or compression.get("algorithm") != p.compression)
    ):
        raise FormatError(f"{where}: header flags and 'compression' metadata disagree")
    if p.encrypted != ("encryption" in meta):
        raise FormatError(f"{where}: header flags and 'encryption' metadata disagree")
    if p.encrypted:
        from aprender.format.apr._crypto import check_params

        check_params(meta["encryption"], where)
    quantization = meta.get("quantization")
    if bool(flags & FLAG_QUANTIZED) != (quantization is not None):
        raise FormatError(f"{where}: header flags and 'quantization' metadata disagree")
    blocks = {e.name: e.dtype.name for e in p.entries if e.dtype.block}
    if quantization is None:
        if blocks:
            raise FormatError(f"{where}: tensor '{next(iter(blocks))}' holds GGML blocks but the file has no "
                              "'quantization' metadata")
        return
    qtype = quantization.get("type") if isinstance(quantization, dict) else None
    if not isinstance(qtype, str) or qtype not in QUANTIZED_CODES or not isinstance(quantization.get("tensors"), dict):
        raise FormatError(f"{where}: 'quantization' metadata needs a known 'type' and a 'tensors' object")
    if set(blocks) != set(quantization["tensors"]) or any(t != qtype for t in blocks.values()):
        raise FormatError(f"{where}: the {qtype} tensors of the index and of the 'quantization' metadata differ")


def _check_sizes(p: Parsed) -> None:
    stored = p.stored.stop - p.stored.start
    plain = stored
    if p.encrypted:
        from aprender.format.apr._crypto import plaintext_size

        plain = plaintext_size(p.meta["encryption"], stored, p.where)
    if p.compression is None and plain != p.data_size:
        state = "is truncated" if plain < p.data_size else "has extra bytes"
        raise FormatError(f"{p.where}: the data section {state}: the index describes {p.data_size} bytes, "
                          f"the file holds {plain} (bytes {p.stored.start}-{p.stored.stop - 1})")


# -- the data --------------------------------------------------------------------------


def _data(p: Parsed, buffer: np.ndarray, keys: Keys) -> np.ndarray:
    data = buffer[p.stored]
    if p.encrypted:
        from aprender.format.apr._crypto import decrypt, derive_key, plaintext_size

        params = p.meta["encryption"]
        size = plaintext_size(params, data.shape[0], p.where)
        if p.compression is not None:  # refused before the key derivation and decryption it would waste
            check_expansion(size, p.compression, p.data_size, p.where, keys.max_decompressed_ratio)
        key = derive_key(params, keys.password, keys.secret_key, p.where)
        plain = np.empty(size, dtype=np.uint8)
        decrypt(key, params, memoryview(data), bytes(buffer[: p.header.data_offset]), memoryview(plain), p.where)
        data = plain
    if p.compression is not None:
        data = decompress(memoryview(data), p.compression, p.data_size, p.where, keys.max_decompressed_ratio)
    return data


def state_of(p: Parsed, buffer: np.ndarray, keys: Keys) -> ModelState:
    """The stored ModelState; tensors are views into one buffer (read-only if ``buffer`` is)."""
    data = _data(p, buffer, keys)
    # ndarray(shape, dtype, buffer, offset) is one call per tensor where slice, view and reshape are three;
    # the index was checked to tile the data, so every tensor lies inside it.
    tensors = {e.name: np.ndarray(e.array_shape(), e.dtype.numpy, data, e.offset) for e in p.entries}
    meta = {k: v for k, v in p.meta.items() if k not in CONTAINER_KEYS}
    return ModelState(tensors=tensors, meta=meta)
