"""The mutations of tools/fuzz.py: blind byte edits, and structure-aware edits of the metadata
tree, the SafeTensors header, the .apr tensor index and the GGUF tensor table, each written
back as a well-formed file (every length, offset and CRC32 recomputed) so that only the
deeper validation can catch it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: Values a structure-aware edit puts in place of a field.
INTERESTING: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 2, 7, 31, 32, 33, 64, 255, 256, 65535, 2**31 - 1, 2**31, 2**32, 2**53, 2**62,
    2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30, 0.5, -0.0, 1e308, -1e308, "", "x",
    "float64", "int64", "<U3", "|O", "F", "C", "numpy", "int", "nan", "inf", "-inf", "tensor", "estimator", "scalar",
    "MT19937", "PCG64", "q8_0", "sklearn.linear_model.LogisticRegression", "aprender.linear_model.Ridge",
    "x" * 300, [], {}, [0], [1, 1], [0, 2**62], [1] * 40, [[]], {"__t__": "tensor"}, {"__t__": "nope"},
    {"__t__": "estimator", "class": "aprender.cluster.KMeans", "params": {}, "attrs": {}},
)



# -- blind mutations -----------------------------------------------------------------


def blind(data: bytes, rng: random.Random, donor: bytes) -> bytes:
    """Bit flips, byte overwrites, truncation, insertion, deletion, duplication or a splice."""
    out = bytearray(data)
    n = len(out)
    if n == 0:
        return bytes(rng.randbytes(rng.randint(1, 64)))
    roll = rng.randrange(8)
    if roll == 0:
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(n)
            out[i] ^= 1 << rng.randrange(8)
    elif roll == 1:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(n)
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
            out[i : i + width] = bytes([value]) * min(width, n - i)
    elif roll == 2:
        del out[rng.randrange(n) :]
    elif roll == 3:
        i = rng.randrange(n + 1)
        out[i:i] = rng.randbytes(rng.randint(1, 64))
    elif roll == 4:
        i = rng.randrange(n)
        del out[i : i + rng.randint(1, 256)]
    elif roll == 5:
        i = rng.randrange(n)
        chunk = out[i : i + rng.randint(1, 512)]
        j = rng.randrange(n + 1)
        out[j:j] = chunk
    elif roll == 6:
        cut = rng.randrange(n)
        other = rng.randrange(len(donor) + 1) if donor else 0
        out = out[:cut] + donor[other:]
    else:  # an interesting 4- or 8-byte integer anywhere
        i = rng.randrange(n)
        value = rng.choice((0, 1, 2**31, 2**32 - 1, 2**62, 2**63, 2**64 - 1, n, n + 1))
        out[i : i + 8] = (value % 2**64).to_bytes(8, "little")[: min(8, n - i)]
    return bytes(out)


# -- the metadata tree ------------------------------------------------------------------


def _slots(node: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) pair of a JSON tree."""
    if depth > 80:
        return
    if isinstance(node, dict):
        for key in list(node):
            yield node, key
            yield from _slots(node[key], depth + 1)
    elif isinstance(node, list):
        for i in range(len(node)):
            yield node, i
            yield from _slots(node[i], depth + 1)


def mutate_tree(tree: Any, rng: random.Random, n_edits: int = 1) -> Any:
    """Edit a JSON tree: replace, delete, add, swap, retag, rename or copy values."""
    tree = copy.deepcopy(tree)
    for _ in range(n_edits):
        slots = list(_slots(tree))
        if not slots:
            return rng.choice(INTERESTING)
        holder, key = rng.choice(slots)
        value = holder[key]
        roll = rng.randrange(10)
        if roll <= 2:
            holder[key] = copy.deepcopy(rng.choice(INTERESTING))
        elif roll == 3:  # delete a field / element
            del holder[key]
        elif roll == 4 and isinstance(holder, dict):  # an unknown field
            holder[rng.choice(("extra", "__t__", "v", "name", "class", "dtype", "shape"))] = rng.choice(INTERESTING)
        elif roll == 5:  # swap with a sibling (intercept_ <-> classes_, expert arrays, ...)
            siblings = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
            other = rng.choice(siblings)
            holder[key], holder[other] = holder[other], holder[key]
        elif roll == 6:  # copy another subtree here
            other_holder, other_key = rng.choice(slots)
            holder[key] = copy.deepcopy(other_holder[other_key])
        elif roll == 7 and isinstance(value, int) and not isinstance(value, bool):
            holder[key] = value + rng.choice((-1, 1, -value - 1, 2**32, 2**63, -(2**63)))
        elif roll == 8 and isinstance(value, str):
            holder[key] = rng.choice((value + "x", value[:-1], value.upper(), value * 2, "__" + value))
        elif roll == 9 and isinstance(value, (list, dict)):  # wrap or unwrap
            holder[key] = rng.choice(([value], {"__t__": "tuple", "v": value} if isinstance(value, list) else value,
                                      {"__t__": "dict", "items": [[1, value]]}))
        else:
            holder[key] = copy.deepcopy(rng.choice(INTERESTING))
    return tree


def _dumps(tree: Any) -> bytes:
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# -- SafeTensors ------------------------------------------------------------------------


def safetensors_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit the JSON header (a tensor entry) or the aprender metadata tree in it."""
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    meta = header.get("__metadata__", {})
    if "aprender" in meta and rng.random() < 0.6:
        meta["aprender"] = _dumps(mutate_tree(json.loads(meta["aprender"]), rng, rng.choice((1, 1, 1, 2, 3)))).decode()
    else:
        names = [k for k in header if k != "__metadata__"]
        if not names:
            return None
        entry = header[rng.choice(names)]
        header = mutate_tree(header, rng) if rng.random() < 0.2 else header
        fieldname = rng.choice(("dtype", "shape", "data_offsets"))
        if fieldname == "dtype":
            entry["dtype"] = rng.choice(("F64", "F32", "F16", "BF16", "I64", "I32", "I8", "U8", "BOOL", "F8_E4M3",
                                         "C64", "x", 1, None))
        elif fieldname == "shape" and isinstance(entry.get("shape"), list):
            entry["shape"] = rng.choice(([0, 2**62], [1] * 255, [2**32, 2**32], [], [-1], entry["shape"][::-1],
                                         [*entry["shape"], 1], entry["shape"][:-1]))
        elif isinstance(entry.get("data_offsets"), list):
            begin, end = entry["data_offsets"]
            entry["data_offsets"] = rng.choice(([begin, end + 8], [begin - 8, end], [end, begin], [0, 2**63],
                                                [begin, begin]))
    raw = _dumps(header)
    return struct.pack("<Q", len(raw)) + raw + body


# -- .apr -------------------------------------------------------------------------------

_APR_HEADER = struct.Struct("<4sBBHIQIQQI20s")


def _align(n: int) -> int:
    return -(-n // 64) * 64


def _apr_finish(out: bytearray) -> bytes:
    """Recompute the header CRC (bytes 0-39 and 44-63) and the footer CRC (everything before it)."""
    crc = zlib.crc32(bytes(out[44:64]), zlib.crc32(bytes(out[:40])))
    out[40:44] = crc.to_bytes(4, "little")
    out[-4:] = zlib.crc32(bytes(out[:-4])).to_bytes(4, "little")
    return bytes(out)


def apr_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit the metadata tree (relaying out the file) or a field of the tensor index; CRCs recomputed."""
    magic, major, minor, flags, count, meta_off, meta_size, index_off, data_off, _, reserved = \
        _APR_HEADER.unpack_from(data)
    roll = rng.random()
    if roll < 0.55:
        meta = json.loads(data[meta_off : meta_off + meta_size])
        raw = _dumps(mutate_tree(meta, rng, rng.choice((1, 1, 1, 2, 3))))
        region = raw + b"\0" * (_align(meta_off + len(raw)) - meta_off - len(raw))
        delta = len(region) - (index_off - meta_off)
        head = _APR_HEADER.pack(magic, major, minor, flags, count, meta_off, len(raw), index_off + delta,
                                data_off + delta, 0, reserved)
        return _apr_finish(bytearray(head + data[64:meta_off] + region + data[index_off:]))
    out = bytearray(data)
    if roll < 0.65:  # a header field
        i = rng.choice((6, 8, 12, 20, 24, 32))
        width = {6: 2, 8: 4, 20: 4}.get(i, 8)
        value = rng.choice((0, 1, 64, 2**31, 2**32 - 1, 2**62, 2**64 - 1, len(data), rng.randrange(len(data) + 1)))
        out[i : i + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
        return _apr_finish(out)
    # a field of one index entry: dtype code, ndim, a dimension, offset or size
    pos, entries = index_off, []
    for _ in range(count):
        if pos + 2 > data_off:
            return None
        (name_len,) = struct.unpack_from("<H", data, pos)
        ndim = data[pos + 3 + name_len]
        entries.append((pos, name_len, ndim))
        pos += 4 + name_len + 8 * ndim + 16
    if not entries:
        return None
    pos, name_len, ndim = rng.choice(entries)
    at = pos + 2 + name_len
    target = rng.randrange(3 + ndim)
    if target == 0:
        out[at] = rng.choice((0, 3, 5, 7, 9, 13, 14, 16, 17, 18, 99, 255))
    elif target == 1:
        out[at + 1] = rng.choice((0, 1, 2, 33, 255, max(ndim - 1, 0), ndim + 1))
    else:
        field_at = at + 2 + 8 * (target - 2) if target - 2 < ndim else at + 2 + 8 * ndim + 8 * rng.randrange(2)
        old = int.from_bytes(out[field_at : field_at + 8], "little")
        value = rng.choice((0, 1, old + 1, max(old - 1, 0), old * 2, 2**31, 2**32, 2**62, 2**63, 2**64 - 1, 64))
        out[field_at : field_at + 8] = (value % 2**64).to_bytes(8, "little")
    return _apr_finish(out)


# -- GGUF -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _GGUFLayout:
    """Where the parts a mutator edits sit in one GGUF seed file."""

    json_keys: tuple[tuple[int, int, str], ...]  # (start of the u64 length, end of the string, the JSON text)
    tensors: tuple[tuple[int, int], ...]  # (position of n_dims, n_dims) of each tensor info
    infos_end: int
    alignment: int
    data_offset: int


_GGUF_LAYOUTS: dict[bytes, _GGUFLayout] = {}


def _gguf_layout(data: bytes) -> _GGUFLayout:
    digest = hashlib.sha1(data).digest()
    if digest not in _GGUF_LAYOUTS:
        from gguf import GGUFReader

        with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
            f.write(data)
            f.flush()
            reader = GGUFReader(f.name)
            json_keys = []
            for fld in reader.fields.values():
                if fld.name.startswith("aprender.") and [t.name for t in fld.types] == ["STRING"]:
                    text = bytes(fld.parts[-1]).decode()
                    if text[:1] not in ("{", "["):  # versions and other plain strings are not JSON
                        continue
                    start = fld.offset + sum(p.nbytes for p in fld.parts[:-2])
                    json_keys.append((start, start + 8 + len(fld.parts[-1]), text))
            tensors = []
            for t in reader.tensors:
                pos = t.field.offset + 8 + len(t.name.encode())
                tensors.append((pos, int.from_bytes(data[pos : pos + 4], "little")))
            last = max((t.field for t in reader.tensors), key=lambda f: f.offset, default=None) or max(
                reader.fields.values(), key=lambda f: f.offset)
            _GGUF_LAYOUTS[digest] = _GGUFLayout(tuple(json_keys), tuple(tensors),
                                                last.offset + sum(p.nbytes for p in last.parts),
                                                int(reader.alignment), int(reader.data_offset))
    return _GGUF_LAYOUTS[digest]


def gguf_structured(data: bytes, rng: random.Random) -> bytes | None:
    """Edit an aprender JSON key (relaying out the file) or a field of the tensor table."""
    layout = _gguf_layout(data)
    if layout.json_keys and rng.random() < 0.6:
        start, end, text = rng.choice(layout.json_keys)
        new = _dumps(mutate_tree(json.loads(text), rng, rng.choice((1, 1, 2))))
        out = bytearray(data[:start] + struct.pack("<Q", len(new)) + new + data[end : layout.infos_end])
        out += b"\0" * (-len(out) % layout.alignment)
        return bytes(out) + data[layout.data_offset :]
    if not layout.tensors:
        return None
    # A tensor info: name (u64 length + bytes), n_dims (u32), dims (u64 each), type (u32), offset (u64).
    pos, n_dims = rng.choice(layout.tensors)
    out = bytearray(data)
    target = rng.randrange(3 + n_dims)
    value = rng.choice((0, 1, 2, 3, 5, 31, 32, 33, 2**31, 2**32, 2**62, 2**63, 2**64 - 1, rng.randrange(len(data))))
    if target == 0:
        out[pos : pos + 4] = (value % 2**32).to_bytes(4, "little")
    elif target == 1:
        at = pos + 4 + 8 * n_dims
        out[at : at + 4] = rng.choice((0, 1, 2, 8, 12, 13, 24, 26, 30, 99)).to_bytes(4, "little")
    else:
        at = pos + 4 + 8 * n_dims + 4 if target == 2 else pos + 4 + 8 * (target - 3)
        out[at : at + 8] = (value % 2**64).to_bytes(8, "little")
    return bytes(out)


STRUCTURED: dict[str, Callable[[bytes, random.Random], bytes | None]] = {
    "safetensors": safetensors_structured,
    "apr": apr_structured,
    "gguf": gguf_structured,
}


