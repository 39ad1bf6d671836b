"""An independent reader of aprender's .apr and GGUF files, written from docs/ alone.

It imports nothing from aprender and not the ``gguf`` package: only the standard
library, numpy, ml_dtypes (bfloat16) and the codecs the docs name (zstandard, lz4,
cryptography). Each step cites the page and section it follows. tests/test_docreader.py
checks that it reads every kind of file aprender writes exactly as aprender does, so a
change to the format that the docs do not describe fails the suite.

Both readers return ``(meta, tensors)``: the metadata tree as stored (docs/codec.md) and
the tensors by ModelState name, with quantized tensors dequantized to their true shape
and recorded dtype (docs/quantization.md).
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from typing import Any

import ml_dtypes
import numpy as np

# -- docs/quantization.md, "Block layouts" and "Bit-exact dequantization" ------------------

_BLOCK_BYTES = {"q8_0": 34, "q4_0": 18, "q4_1": 20}


def _dequantize_rows(raw: bytes, qtype: str, rows: int, padded: int) -> np.ndarray:
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows * padded // 32, _BLOCK_BYTES[qtype])
    d = blocks[:, :2].copy().view("<f2").astype(np.float32)
    if qtype == "q8_0":
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
        values = d * q
    else:
        packed = blocks[:, 2:] if qtype == "q4_0" else blocks[:, 4:]
        q = np.concatenate([packed & 0x0F, packed >> 4], axis=1).astype(np.float32)  # low nibbles: values 0-15
        if qtype == "q4_0":
            values = d * (q - np.float32(8))
        else:
            m = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
            values = d * q + m
    return values.astype(np.float32).reshape(rows, padded)


def _dequantize(raw: bytes, qtype: str, record: dict[str, Any]) -> np.ndarray:
    shape, dtype = tuple(record["shape"]), record["dtype"]
    n = shape[-1]
    rows = math.prod(shape[:-1])
    padded = 32 * math.ceil(n / 32)
    values = _dequantize_rows(raw, qtype, rows, padded)[:, :n].reshape(shape)
    return values.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype))


# -- docs/apr-format.md ----------------------------------------------------------------------

#: "dtype codes"
_APR_DTYPES = {0: np.float32, 1: np.float16, 2: ml_dtypes.bfloat16, 3: np.float64, 4: np.int32, 5: np.int64,
               6: np.int8, 7: np.uint8, 10: np.int16, 11: np.uint16, 12: np.uint32, 13: np.uint64, 14: np.bool_}
_APR_BLOCKS = {16: "q8_0", 17: "q4_0", 18: "q4_1"}
#: "Flags (bytes 6-7)"
_LZ4, _ZSTD, _ENCRYPTED, _SIGNED = 0x1, 0x2, 0x4, 0x8


def _apr_key(params: dict[str, Any], password: str | None) -> bytes:
    """"Encryption", the key table (password files only)."""
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

    kdf = Argon2id(salt=bytes.fromhex(params["salt"]), length=32, iterations=params["iterations"],
                   lanes=params["lanes"], memory_cost=params["memory_cost"])
    return kdf.derive(password.encode("utf-8"))


def _apr_decrypt(stored: bytes, params: dict[str, Any], aad: bytes, password: str) -> bytes:
    """"Encryption": STREAM segments of segment_size plaintext bytes, each + a 16-byte tag."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aes, size = AESGCM(_apr_key(params, password)), params["segment_size"]
    prefix = bytes.fromhex(params["nonce_prefix"])
    count = max(1, math.ceil(len(stored) / (size + 16)))
    out = []
    for i in range(count):
        segment = stored[i * (size + 16) : (i + 1) * (size + 16)]
        nonce = prefix + i.to_bytes(4, "big") + (b"\x01" if i == count - 1 else b"\x00")
        out.append(aes.decrypt(nonce, segment, aad))
    return b"".join(out)


def read_apr(data: bytes, password: str | None = None) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read an .apr file's bytes (docs/apr-format.md)."""
    # "Header (bytes 0-63)"
    magic, major, minor, flags, count, meta_offset, meta_size, index_offset, data_offset, header_crc, reserved = (
        struct.unpack("<4sBBHIQIQQI20s", data[:64]))
    assert magic == b"APR\x00" and (major, minor) == (2, 0) and reserved == bytes(20) and meta_offset == 64
    assert header_crc == zlib.crc32(data[44:64], zlib.crc32(data[:40]))
    # "Footer (last 4 bytes)"
    assert int.from_bytes(data[-4:], "little") == zlib.crc32(data[:-4])
    tail = 4
    if flags & _SIGNED:  # "Signature block (SIGNED)": 96 bytes before the footer
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        block = data[-100:-4]
        Ed25519PublicKey.from_public_bytes(block[64:]).verify(block[:64], data[:-100])
        tail = 100
    # "Metadata": canonical JSON, zero padded
    meta = json.loads(data[64 : 64 + meta_size])
    # "Tensor index": sorted entries
    entries, pos = [], index_offset
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", data, pos)
        name = data[pos + 2 : pos + 2 + name_len].decode("utf-8")
        pos += 2 + name_len
        code, ndim = data[pos], data[pos + 1]
        shape = struct.unpack_from(f"<{ndim}Q", data, pos + 2)
        offset, size = struct.unpack_from("<QQ", data, pos + 2 + 8 * ndim)
        pos += 2 + 8 * ndim + 16
        entries.append((name, code, shape, offset, size))
    # "Data section": unpadded after compression/encryption, up to the signature block or footer
    section = data[data_offset : len(data) - tail]
    if flags & _ENCRYPTED:
        section = _apr_decrypt(section, meta["encryption"], data[:data_offset], password)
    if flags & _ZSTD:
        import zstandard

        section = zstandard.ZstdDecompressor().decompress(section)
    elif flags & _LZ4:
        import lz4.frame

        section = lz4.frame.decompress(section)
    tensors = {}
    for name, code, shape, offset, size in entries:
        raw = section[offset : offset + size]
        if code in _APR_BLOCKS:
            tensors[name] = _dequantize(raw, _APR_BLOCKS[code], meta["quantization"]["tensors"][name])
        else:
            tensors[name] = np.frombuffer(raw, dtype=_APR_DTYPES[code]).reshape(shape)
    # "read_state returns the metadata without compression and encryption"
    return {k: v for k, v in meta.items() if k not in ("compression", "encryption")}, tensors


# -- docs/gguf-format.md ---------------------------------------------------------------------

#: "Every type number aprender writes"
_GGML_DTYPES = {0: np.float32, 1: np.float16, 24: np.int8, 25: np.int16, 26: np.int32, 27: np.int64,
                28: np.float64, 30: ml_dtypes.bfloat16}
_GGML_BLOCKS = {8: "q8_0", 2: "q4_0", 3: "q4_1"}
_UINT32, _STRING = 4, 8


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<Q", data, pos)
    return data[pos + 8 : pos + 8 + n].decode("utf-8"), pos + 8 + n


def read_gguf(data: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read an aprender GGUF file's bytes (docs/gguf-format.md)."""
    # "Layout": header
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
    assert magic == b"GGUF" and version == 3
    pos, kv = 24, {}
    for _ in range(n_kv):
        key, pos = _string(data, pos)
        (kind,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if kind == _UINT32:
            (kv[key],) = struct.unpack_from("<I", data, pos)
            pos += 4
        else:
            assert kind == _STRING, (key, kind)
            kv[key], pos = _string(data, pos)
    infos = []
    for _ in range(n_tensors):
        name, pos = _string(data, pos)
        (n_dims,) = struct.unpack_from("<I", data, pos)
        ne = struct.unpack_from(f"<{n_dims}Q", data, pos + 4)
        kind, offset = struct.unpack_from("<IQ", data, pos + 4 + 8 * n_dims)
        pos += 4 + 8 * n_dims + 12
        infos.append((name, tuple(reversed(ne)), kind, offset))  # ne is innermost axis first
    start = -(-pos // 32) * 32  # "padding: zeros up to the alignment (32 bytes)"
    # "Key-values": rebuild the metadata tree
    meta: dict[str, Any] = {
        "schema": kv["aprender.schema"], "model_type": kv["aprender.model_type"],
        "model": {"__t__": "estimator", "class": kv["aprender.class"], "params": json.loads(kv["aprender.params"]),
                  "attrs": json.loads(kv["aprender.attrs"])},
        "versions": {k.split(".", 2)[2]: v for k, v in kv.items() if k.startswith("aprender.versions.")},
        "user": json.loads(kv["aprender.user"]),
    }
    if "aprender.quantization" in kv:
        meta["quantization"] = json.loads(kv["aprender.quantization"])
    meta.update({k.split(".", 2)[2]: json.loads(v) for k, v in kv.items() if k.startswith("aprender.meta.")})
    # "Tensor names, ranks and dtypes": undo the tensor map
    tensor_map = json.loads(kv.get("aprender.tensor_map", "{}"))
    tensors = {}
    for name, shape, kind, offset in infos:
        entry = tensor_map.get(name, {})
        true_name = entry.get("name", name)
        at = start + offset
        if kind in _GGML_BLOCKS:
            qtype = _GGML_BLOCKS[kind]
            size = math.prod(shape) // 32 * _BLOCK_BYTES[qtype]
            tensors[true_name] = _dequantize(data[at : at + size], qtype, meta["quantization"]["tensors"][true_name])
            continue
        dtype = np.dtype(_GGML_DTYPES[kind])
        array = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=at)
        if "dtype" in entry:  # same-width reinterpretation (uint / bool)
            array = array.view(np.dtype(entry["dtype"]))
        tensors[true_name] = array.reshape(entry.get("shape", shape))
    return meta, tensors
