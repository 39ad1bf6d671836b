"""Reading GGUF files safely with the official ``gguf.GGUFReader``.

``GGUFReader`` trusts the counts and lengths in a file: a truncated file gives short
slices that surface later as assorted numpy errors, and a claimed array length of
2**60 makes it loop (nearly) forever. :class:`BoundedReader` only adds a bounds check
to the reader's one low-level accessor, so every read past the end of the file stops
parsing at once with a :class:`~aprender.exceptions.FormatError` and every loop is
bounded by the file size; anything else the reader raises becomes a FormatError too.
"""

from __future__ import annotations

import itertools
import os
import warnings
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFEndian, GGUFReader, GGUFValueType
from gguf.gguf_reader import READER_SUPPORTED_VERSIONS

from aprender.codec import ModelState, parse_json
from aprender.codec._nodes import preview
from aprender.exceptions import FormatError, LoadBudgetExceeded, UnsupportedVersion
from aprender.format.gguf import _layout as layout

__all__ = ["RULES", "BoundedReader", "check_extent", "check_tensor_ranges", "open_any", "open_reader", "parse_state",
           "read_fields", "read_tensors"]

#: Tensor types aprender reads (it writes no others).
READ_TYPES = frozenset(
    [
        GGMLQuantizationType.F64, GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.BF16,
        GGMLQuantizationType.I64, GGMLQuantizationType.I32, GGMLQuantizationType.I16, GGMLQuantizationType.I8,
        GGMLQuantizationType.Q8_0, GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q4_1,
    ]
)
_QUANTIZED = {
    GGMLQuantizationType.Q8_0: "q8_0",
    GGMLQuantizationType.Q4_0: "q4_0",
    GGMLQuantizationType.Q4_1: "q4_1",
}

#: Top-level metadata entries stored under their own keys, never as ``aprender.meta.*``.
_OWN_KEYS = frozenset(["schema", "model_type", "model", "versions", "user", "quantization"])


class _PastEnd(FormatError):
    pass


#: Bytes of file each GGUF array item beyond :data:`ARRAY_ITEM_ALLOWANCE` must take, on average.
ARRAY_BYTES_PER_ITEM = 8
#: GGUF array items any file may hold whatever its size (a large tokenizer's, in a small file).
ARRAY_ITEM_ALLOWANCE = 2**18


class _TooManyItems(FormatError):
    pass


class BoundedReader(GGUFReader):
    """``gguf.GGUFReader`` whose reads never run past the end of the file.

    The reader parses key-value arrays one item at a time, each item a numpy view
    (about 150 bytes and several microseconds: 600,000 one-byte items took 10 s and
    90 MB): the items of all arrays together, nested ones included, are capped at one
    per :data:`ARRAY_BYTES_PER_ITEM` bytes of file plus :data:`ARRAY_ITEM_ALLOWANCE`,
    counted from each array's length before its items are read. aprender writes no
    arrays; a llama.cpp model's tokenizer (~500,000 items in gigabytes) is well inside.
    """

    _items = 0

    def _get(self, offset: int, dtype: Any, count: int = 1, override_order: Any = None) -> np.ndarray:
        offset, count = int(offset), int(count)
        end = offset + np.dtype(dtype).itemsize * count
        if offset < 0 or count < 0 or end > len(self.data):
            raise _PastEnd(f"needs bytes {offset}-{end} but the file has {len(self.data)} bytes (truncated?)")
        return super()._get(offset, dtype, count, override_order)

    def _get_field_parts(self, orig_offs: int, raw_type: int) -> Any:
        if raw_type == GGUFValueType.ARRAY:
            self._items += int(self._get(int(orig_offs) + 4, np.uint64)[0])
            limit = len(self.data) // ARRAY_BYTES_PER_ITEM + ARRAY_ITEM_ALLOWANCE
            if self._items > limit:
                raise _TooManyItems(f"its key-value arrays hold more than {limit:,} items in {len(self.data):,} "
                                    f"bytes (at most one per {ARRAY_BYTES_PER_ITEM} bytes beyond "
                                    f"{ARRAY_ITEM_ALLOWANCE:,}): too costly to parse")
        return super()._get_field_parts(orig_offs, raw_type)


#: Bytes of file each key-value and tensor-info record beyond :data:`RECORD_ALLOWANCE` must take, on average.
RECORD_BYTES = 256
#: Key-value and tensor-info records any file may hold whatever its size.
RECORD_ALLOWANCE = 4096

#: The rules a GGUF file meets before anything is built from it, beyond what ``GGUFReader`` checks itself;
#: ``tests/test_container_lies.py`` crafts a file breaking each one. Name -> what it requires and why.
RULES = {
    "record count": (
        f"the header's key-value count plus tensor count at most one per {RECORD_BYTES} bytes of file beyond "
        f"{RECORD_ALLOWANCE:,}, read from bytes 8-23 before the reader parses anything (it builds a record of "
        "numpy views for each, whatever its size)"),
    "array items": (
        f"the items of all key-value arrays at most one per {ARRAY_BYTES_PER_ITEM} bytes of file beyond "
        f"{ARRAY_ITEM_ALLOWANCE:,}, counted from each array's stated length before its items are read"),
    "aligned tensors": (
        "every tensor's data starts at a multiple of the file's alignment past the data section, as the GGUF "
        "specification requires and llama.cpp checks"),
    "disjoint tensors": (
        "no two tensors share a byte (empty ones may share an offset), so the tensors a load copies sum to at most "
        "the file"),
    "tensor types": "an aprender model's tensors have the types aprender writes (F64/F32/F16/BF16/I64/I32/I16/I8, "
                    "Q8_0/Q4_0/Q4_1)",
    "extent": "an aprender model file ends where its last tensor (padded to the alignment) ends",
    "byte order": (
        "an aprender model file is little-endian, as aprender writes it: a big-endian file's tensors reached the "
        "model in that byte order (a KMeans loaded and its predict raised numpy's ValueError; other classes were "
        "refused for a dtype they do have)"),
}


def _check_preamble(path: str | os.PathLike, where: str) -> None:
    with open(path, "rb") as f:
        total = os.fstat(f.fileno()).st_size
        head = f.read(24)
    if len(head) < 8 or head[:4] != b"GGUF":
        raise FormatError(f"{where}: not a GGUF file (needs the magic 'GGUF' and a version in bytes 0-7, "
                          f"found {head.hex() or 'an empty file'})")
    little, big = int.from_bytes(head[4:8], "little"), int.from_bytes(head[4:8], "big")
    if little not in READER_SUPPORTED_VERSIONS and big not in READER_SUPPORTED_VERSIONS:
        supported = ", ".join(f"GGUF v{v}" for v in READER_SUPPORTED_VERSIONS)
        raise UnsupportedVersion(f"GGUF v{little}", supported, where)
    if len(head) == 24:  # a shorter file is the reader's to call truncated
        # The reader's own byte-order test: a version whose low half is zero was written the other way round.
        swapped = little & 0xFFFF == 0
        tensors, kvs = (int.from_bytes(head[a : a + 8], "big" if swapped else "little") for a in (8, 16))
        limit = total // RECORD_BYTES + RECORD_ALLOWANCE
        if tensors + kvs > limit:
            raise LoadBudgetExceeded(
                f"{where}: the header states {tensors:,} tensors and {kvs:,} key-values (bytes 8-23), more than "
                f"{limit:,} records in {total:,} bytes (at most one per {RECORD_BYTES} bytes beyond "
                f"{RECORD_ALLOWANCE:,}): too costly to parse")


def check_tensor_ranges(reader: BoundedReader, where: str) -> None:
    """Every tensor starts on the alignment and no two share a byte (``RULES``: aligned, disjoint tensors)."""
    align = int(reader.alignment)
    spans = []
    for tensor in reader.tensors:
        start, size = int(tensor.data_offset), int(tensor.n_bytes)
        if (start - reader.data_offset) % align:
            raise FormatError(f"{where}: tensor '{tensor.name[:80]}' starts at byte {start}, not on the file's "
                              f"{align}-byte alignment")
        if size:  # empty tensors hold no byte: any number may share an offset
            spans.append((start, start + size, tensor.name))
    spans.sort()
    for (_, end, first), (start, _, second) in itertools.pairwise(spans):
        if start < end:
            raise FormatError(f"{where}: tensors '{first[:80]}' and '{second[:80]}' overlap at bytes "
                              f"{start}-{end - 1}: each tensor must have bytes of its own")


def open_reader(path: str | os.PathLike, where: str) -> BoundedReader:
    """Parse the header, key-values and tensor table of a GGUF file aprender reads, or raise FormatError."""
    reader = open_any(path, where)
    check_extent(reader, where)
    return reader


def open_any(path: str | os.PathLike, where: str) -> BoundedReader:
    """Parse any GGUF file (every tensor type; data past the tensors allowed), or raise FormatError."""
    _check_preamble(path, where)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            reader = BoundedReader(path)
    except _PastEnd as exc:
        raise FormatError(f"{where}: {exc}") from None
    except _TooManyItems as exc:
        raise LoadBudgetExceeded(f"{where}: {exc}") from None
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise FormatError(f"{where}: not a valid GGUF file: {type(exc).__name__}: {str(exc)[:200]}") from None
    check_tensor_ranges(reader, where)
    return reader


def check_extent(reader: BoundedReader, where: str) -> None:
    """An aprender model file's rules (``RULES``: byte order, tensor types, extent): little-endian, tensors
    of the types aprender writes, and the file ends exactly where its last (padded) tensor ends."""
    if reader.endianess != GGUFEndian.LITTLE:
        raise FormatError(f"{where}: a big-endian GGUF file (bytes 4-7); aprender's model files are little-endian "
                          "(read its tensors with aprender.format.gguf.load_tensors)")
    align = int(reader.alignment)
    end = reader.data_offset
    for tensor in reader.tensors:
        if tensor.tensor_type not in READ_TYPES:
            raise FormatError(f"{where}: tensor '{tensor.name[:80]}' has type {tensor.tensor_type.name}, "
                              "which aprender does not read")
        stop = tensor.data_offset + int(tensor.n_bytes)
        end = max(end, stop + (-stop % align))
    if end != len(reader.data):
        raise FormatError(f"{where}: the tensor table ends the file at byte {end}, but it has "
                          f"{len(reader.data)} bytes (truncated or trailing data)")


def _value(reader: BoundedReader, key: str, gtype: GGUFValueType, where: str, *, required: bool = True) -> Any:
    field = reader.get_field(key)
    if field is None:
        if required:
            raise FormatError(f"{where}: no '{key}' key: not a model file written by aprender")
        return None
    if field.types != [gtype]:
        raise FormatError(f"{where}: key '{key}' must be a {gtype.name}, found {[t.name for t in field.types]}")
    try:
        return field.contents()
    except UnicodeDecodeError:
        raise FormatError(f"{where}: key '{key}' is not valid UTF-8") from None


def _json(reader: BoundedReader, key: str, where: str, *, required: bool = True) -> Any:
    text = _value(reader, key, GGUFValueType.STRING, where, required=required)
    return None if text is None else parse_json(text, f"{where}: key '{key}'")


def read_fields(reader: BoundedReader, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The codec metadata and the tensor map stored in the key-values."""
    arch = _value(reader, "general.architecture", GGUFValueType.STRING, where)
    if arch != layout.ARCHITECTURE:
        raise FormatError(f"{where}: general.architecture is {arch[:40]!r}, not {layout.ARCHITECTURE!r}: "
                          "not a model file written by aprender")
    params, attrs = _json(reader, layout.KEY_PARAMS, where), _json(reader, layout.KEY_ATTRS, where)
    meta: dict[str, Any] = {}
    for name, key in (("schema", layout.KEY_SCHEMA), ("model_type", layout.KEY_MODEL_TYPE)):
        value = _value(reader, key, GGUFValueType.UINT32, where, required=False)
        if value is not None:
            meta[name] = value
    meta["model"] = {"__t__": "estimator", "class": _value(reader, layout.KEY_CLASS, GGUFValueType.STRING, where),
                     "params": params, "attrs": attrs}
    versions = {}
    for key in reader.fields:
        if key.startswith(layout.PREFIX_VERSIONS):
            versions[key[len(layout.PREFIX_VERSIONS) :]] = _value(reader, key, GGUFValueType.STRING, where)
        elif key.startswith(layout.PREFIX_EXTRA):
            name = key[len(layout.PREFIX_EXTRA) :]
            if name in _OWN_KEYS:
                raise FormatError(f"{where}: key '{key}' duplicates a dedicated aprender key")
            meta[name] = _json(reader, key, where)
    if versions:
        meta["versions"] = versions
    for name, key in (("user", layout.KEY_USER), ("quantization", layout.KEY_QUANTIZATION)):
        value = _json(reader, key, where, required=False)
        if value is not None:
            meta[name] = value
    tensor_map = _json(reader, layout.KEY_TENSOR_MAP, where, required=False)
    tensor_map = {} if tensor_map is None else tensor_map
    if not isinstance(tensor_map, dict):
        raise FormatError(f"{where}: key '{layout.KEY_TENSOR_MAP}' must be a JSON object")
    return meta, tensor_map


def quantized_type(meta: dict[str, Any]) -> str | None:
    """The quantization type the metadata declares, if any."""
    record = meta.get("quantization")
    return record.get("type") if isinstance(record, dict) else None


def read_tensors(reader: BoundedReader, meta: dict[str, Any], tensor_map: dict[str, Any],
                 where: str) -> dict[str, np.ndarray]:
    """Copy every tensor out of the memory map, restoring aprender names, shapes and dtypes."""
    qtype = quantized_type(meta)
    if "quantization" in meta and qtype not in _QUANTIZED.values():
        raise FormatError(f"{where}: unknown quantization type {preview(qtype, 40)}; "
                          f"supported: {', '.join(_QUANTIZED.values())}")
    tensors: dict[str, np.ndarray] = {}
    for tensor in reader.tensors:
        block = _QUANTIZED.get(tensor.tensor_type)
        if block is not None and block != qtype:
            declared = f"quantization {preview(qtype)}" if qtype else "no quantization"
            raise FormatError(f"{where}: tensor '{tensor.name[:80]}' is {block.upper()} but the metadata "
                              f"declares {declared}")
        name, array = layout.restore(tensor.name, np.array(tensor.data), tensor.tensor_type,
                                     tensor_map.get(tensor.name), where)
        if name in tensors:
            raise FormatError(f"{where}: two tensors map to the name '{name[:80]}'")
        tensors[name] = array  # a fresh C-ordered copy (views and reshapes of np.array)
    unused = sorted(set(tensor_map) - {t.name for t in reader.tensors})
    if unused:
        raise FormatError(f"{where}: aprender.tensor_map names a missing tensor '{unused[0][:80]}'")
    return tensors


def parse_state(path: str | os.PathLike, where: str) -> ModelState:
    """Parse and validate a GGUF file into a (possibly quantized) ModelState; messages name it ``where``.

    The backend's :func:`aprender.format.gguf.read_state` (a path) and ``state_from_bytes``
    (bytes, through a temporary file) both read with this.
    """
    reader = open_reader(path, where)
    meta, tensor_map = read_fields(reader, where)
    return ModelState(tensors=read_tensors(reader, meta, tensor_map, where), meta=meta)
