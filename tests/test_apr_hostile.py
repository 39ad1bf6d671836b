"""Corrupted, truncated, tampered and hostile .apr files: each raises a specific AprenderError."""

from __future__ import annotations

import functools
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from apr_bytes import layout_of, refresh_crcs
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from zoo import iris

import aprender
from aprender.codec import to_state
from aprender.exceptions import (
    AprenderError,
    ChecksumMismatch,
    DecryptionFailed,
    FormatError,
    KeyRequired,
    SignatureInvalid,
    UnsupportedVersion,
)
from aprender.format import apr
from aprender.format.apr import _crypto as crypto
from aprender.format.apr._layout import Flags, Header, IndexEntry, align, pack_index
from aprender.linear_model import LinearRegression
from aprender.preprocessing import StandardScaler

SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
RECIPIENT = X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    # Costs are read back from each file; test_apr.py checks the real defaults.
    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)


@functools.cache
def scaler() -> StandardScaler:
    return StandardScaler().fit(iris()[0][:, :2])


def small(**options: Any) -> bytes:
    """A small .apr file (about 900 bytes)."""
    return apr.dumps(scaler(), **options)


def set_field(data: bytes, fmt: str, offset: int, value: int) -> bytes:
    """Overwrite one header field and refresh the CRCs."""
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return refresh_crcs(out)


def craft(meta: Any, entries: list[IndexEntry], stored: bytes, flags: int = 0, count: int | None = None) -> bytes:
    """A file with valid CRCs built from arbitrary pieces."""
    meta_bytes = json.dumps(meta).encode()
    index = pack_index(entries)
    index_offset = 64 + align(len(meta_bytes))
    header = Header(Flags(flags), len(entries) if count is None else count, len(meta_bytes), index_offset,
                    index_offset + len(index))
    body = header.pack() + meta_bytes + bytes(align(len(meta_bytes)) - len(meta_bytes)) + index + stored
    return body + zlib.crc32(body).to_bytes(4, "little")


def load_error(data: bytes, **keys: Any) -> AprenderError:
    with pytest.raises(AprenderError) as info:
        apr.loads(data, **keys)
    return info.value


# -- every byte, every length ------------------------------------------------------------


def expected_error(position: int, size: int) -> tuple[type, str]:
    if position < 4:
        return FormatError, "not an .apr file"
    if position < 6:
        return UnsupportedVersion, "unsupported format version"
    if position < 64:
        return ChecksumMismatch, "header \\(bytes 0-63\\)"
    return ChecksumMismatch, f"footer CRC32 of bytes 0-{size - 5}"


def _check_flip(load: Any, position: int, size: int) -> str | None:
    kind, message = expected_error(position, size)
    try:
        load()
    except kind as exc:
        import re

        return None if re.search(message, str(exc)) else f"byte {position}: {exc}"
    except Exception as exc:  # any other outcome is the failure being collected
        return f"byte {position}: {type(exc).__name__}: {exc}"
    return f"byte {position}: not detected"


def test_every_single_byte_flip_is_detected_in_bytes() -> None:
    data = small()
    failures = []
    for position in range(len(data)):
        for mask in (0x01, 0xFF):
            flipped = bytearray(data)
            flipped[position] ^= mask
            failures.append(_check_flip(lambda b=bytes(flipped): apr.loads(b), position, len(data)))
    assert [f for f in failures if f] == []


def test_every_single_byte_flip_is_detected_in_files(tmp_path: Path) -> None:
    data = small()
    path = tmp_path / "flipped.apr"
    failures = []
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x04
        path.write_bytes(flipped)
        failures.append(_check_flip(lambda: apr.load_file(path), position, len(data)))
    assert [f for f in failures if f] == []


@pytest.mark.parametrize("option", ["plain", "lz4", "zstd", "signed", "recipient"])
def test_truncation_at_every_length_in_bytes(option: str) -> None:
    options = {"plain": {}, "lz4": {"compression": "lz4"}, "zstd": {"compression": "zstd"},
               "signed": {"signing_key": SIGNING_KEY}, "recipient": {"recipient_public_key": RECIPIENT.public_key()}}
    data = small(**options[option])
    for n in range(len(data)):
        with pytest.raises(FormatError):
            apr.loads(data[:n], secret_key=RECIPIENT)
    for n in range(len(data)) if option == "signed" else ():
        with pytest.raises((SignatureInvalid, FormatError)):
            apr.loads(data[:n], verifying_key=SIGNING_KEY.public_key())


@pytest.mark.parametrize("mmap", [False, True])
def test_truncated_files_are_rejected(mmap: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apr._load, "MMAP_MIN_BYTES", 0)  # the mapped path, even for this small file
    data = small()
    path = tmp_path / "cut.apr"
    for n in range(len(data)):
        path.write_bytes(data[:n])
        with pytest.raises(FormatError):
            apr.load_file(path, mmap=mmap)
    path.write_bytes(data[:-1])
    with pytest.raises(FormatError, match="data section is truncated" if mmap else "checksum mismatch"):
        apr.load_file(path, mmap=mmap)


def test_empty_missing_and_foreign_files(tmp_path: Path) -> None:
    path = tmp_path / "x.apr"
    with pytest.raises(FileNotFoundError, match=r"x\.apr"):
        apr.load_file(path)
    path.write_bytes(b"")
    for mmap in (False, True):
        with pytest.raises(FormatError, match="the file is empty"):
            apr.load_file(path, mmap=mmap)
    path.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(FormatError, match=r"not an \.apr file \(bytes 0-3 are 47475546"):
        apr.load_file(path)
    with pytest.raises(FormatError, match=r"not an \.apr file"):
        apr.inspect_file(path)


# -- header fields -----------------------------------------------------------------------


def test_unsupported_version_names_both_versions() -> None:
    data = bytearray(small())
    data[4] = 3
    err = load_error(bytes(data))
    assert isinstance(err, UnsupportedVersion) and (err.found, err.supported) == ("3.0", "2.0")


HEADER_CASES = {
    "metadata larger than the file": ("<I", 20, 0xFFFFFFFF, "metadata_size 4294967295 .* does not fit"),
    "metadata size of zero": ("<I", 20, 0, "metadata_size 0"),
    "metadata offset": ("<Q", 12, 128, "metadata_offset .* must be 64"),
    "index offset": ("<Q", 24, 1 << 40, "tensor_index_offset .* must be"),
    "data offset past the end": ("<Q", 32, 1 << 40, "data_offset .* lies past the end"),
    "unaligned data offset": ("<Q", 32, 1000, "not a 64-byte aligned offset"),
    "tensor count past the index": ("<I", 8, 0xFFFFFFFF, "after an index of 4294967295 tensors"),
    "one tensor too many": ("<I", 8, None, "the index ends before all|empty tensor name"),
    "unknown flag": ("<H", 6, 0x8000, "unknown header flags 0x8000"),
    "sharded": ("<H", 6, int(Flags.SHARDED), "sharded .apr files are not supported"),
    "two compressions": ("<H", 6, int(Flags.LZ4 | Flags.ZSTD), "both LZ4 and zstd"),
    "compression flag without metadata": ("<H", 6, int(Flags.LZ4), "flags and 'compression' metadata disagree"),
    "encryption flag without metadata": ("<H", 6, int(Flags.ENCRYPTED), "'encryption' metadata disagree"),
    "quantized flag without metadata": ("<H", 6, int(Flags.QUANTIZED), "'quantization' metadata disagree"),
    "reserved bytes": ("<I", 50, 7, "reserved header bytes 44-63 must be zero"),
}


@pytest.mark.parametrize("name", list(HEADER_CASES))
def test_hostile_header_fields(name: str, tmp_path: Path) -> None:
    fmt, offset, value, message = HEADER_CASES[name]
    data = small()
    if value is None:
        value = int.from_bytes(data[8:12], "little") + 1
    forged = set_field(data, fmt, offset, value)
    path = tmp_path / "forged.apr"
    path.write_bytes(forged)
    for load in (apr.loads, lambda _: apr.load_file(path), lambda _: apr.load_file(path, mmap=True),
                 lambda _: apr.inspect_file(path)):
        with pytest.raises(FormatError, match=message):
            load(forged)


# -- tensor index and metadata --------------------------------------------------------------


def _entries(data: bytes) -> tuple[bytes, int]:
    _, index_offset, data_offset = layout_of(data)
    return data[index_offset:data_offset], index_offset


def _patch_index(data: bytes, old: bytes, new: bytes) -> bytes:
    raw, base = _entries(data)
    at = raw.index(old)
    out = bytearray(data)
    out[base + at : base + at + len(new)] = new
    return refresh_crcs(out)


def test_out_of_range_tensor_offset(tmp_path: Path) -> None:
    data = small()
    name = b"var_"
    raw, _ = _entries(data)
    at = raw.index(name) + len(name) + 2 + 8  # dtype, ndim, one dim -> offset
    offset = int.from_bytes(raw[at : at + 8], "little")
    forged = _patch_index(data, raw[at - 10 - len(name) : at + 8],
                          raw[at - 10 - len(name) : at] + (1 << 50).to_bytes(8, "little"))
    path = tmp_path / "forged.apr"
    path.write_bytes(forged)
    for mmap in (False, True):
        with pytest.raises(FormatError, match=f"tensor 'var_' starts at data byte {1 << 50}, expected {offset}"):
            apr.load_file(path, mmap=mmap)


def test_index_entries_are_checked() -> None:
    data = small()
    raw, _ = _entries(data)
    at = raw.index(b"mean_") + len(b"mean_")
    dtype_code, ndim = raw[at], raw[at + 1]
    assert (dtype_code, ndim) == (3, 1)
    cases = {
        bytes([99]): "unknown dtype code 99",
        bytes([0]): r"tensor 'mean_' of shape \[2\] and dtype float32 cannot occupy 16 bytes",
        bytes([3, 40]): r"40 dimensions do not fit the index",
        bytes([3, 1, 5]): r"tensor 'mean_' of shape \[5\] .* cannot occupy 16 bytes",
    }
    for new, message in cases.items():
        forged = _patch_index(data, raw[at - 5 : at + len(new)], raw[at - 5 : at] + new)
        with pytest.raises(FormatError, match=message):
            apr.loads(forged)
    renamed = _patch_index(data, b"mean_", b"zean_")  # breaks the sorted order
    with pytest.raises(FormatError, match="breaks the strictly sorted order"):
        apr.loads(renamed)
    padded = bytearray(data)
    _, _, data_offset = layout_of(data)
    padded[data_offset - 1] = 1
    with pytest.raises(FormatError, match="must be zero padding"):
        apr.loads(refresh_crcs(padded))


def test_index_names_must_be_utf8() -> None:
    entries = [IndexEntry("a", 3, (1,), 0, 8)]
    meta = to_state(scaler()).meta
    data = bytearray(craft(meta, entries, bytes(64)))
    _, index_offset, _ = layout_of(bytes(data))
    data[index_offset + 2] = 0xFF
    with pytest.raises(FormatError, match="tensor name is not UTF-8"):
        apr.loads(refresh_crcs(data))


@pytest.mark.parametrize(("shape", "message"), [
    ((2**30, 2**30, 2**30), r"shape \[1073741824, 1073741824, 1073741824\] describes more than 2\*\*53 elements"),
    ((0, 2**62), r"invalid dimension 4611686018427387904"),
    ((0, 3), r"tensor 'a' of shape \[0, 3\] and dtype float64 cannot occupy 8 bytes"),
], ids=["product-past-2**53", "huge-dimension-beside-zero", "empty-is-a-valid-shape"])
def test_index_shapes_are_bounded(shape: tuple[int, ...], message: str) -> None:
    # The index states a shape; nothing is allocated before its element count is known to be bounded.
    meta = to_state(scaler()).meta
    data = craft(meta, [IndexEntry("a", 3, shape, 0, 8)], bytes(64))
    with pytest.raises(FormatError, match=f"tensor index entry 0 at byte \\d+: .*{message}"):
        apr.loads(data)


def test_metadata_is_checked() -> None:
    data = small()
    meta_size, _, _ = layout_of(data)
    broken = bytearray(data)
    broken[64] = ord("[")
    with pytest.raises(FormatError, match=r"metadata \(bytes 64-\d+\) is not valid JSON"):
        apr.loads(refresh_crcs(broken))
    padding = bytearray(data)
    padding[64 + meta_size] = ord(" ")
    with pytest.raises(FormatError, match=r"metadata padding .* must be zero"):
        apr.loads(refresh_crcs(padding))
    not_object = craft([1, 2], [], b"")
    with pytest.raises(FormatError, match="metadata must be a JSON object"):
        apr.loads(not_object)


def test_data_section_with_extra_bytes_is_rejected() -> None:
    data = small()
    forged = refresh_crcs(data[:-4] + bytes(64) + data[-4:])
    with pytest.raises(FormatError, match="the data section has extra bytes"):
        apr.loads(forged)


def test_codec_errors_surface_after_container_checks() -> None:
    meta = to_state(scaler()).meta
    data = craft({**meta, "model": {"class": "os.system"}}, [], b"")
    with pytest.raises(AprenderError, match="not on the allow-list"):
        apr.loads(data)


# -- compression -------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["zstd", "lz4"])
def test_compressed_claims_larger_than_the_data_can_hold(algorithm: str) -> None:
    from aprender.format.apr._compress import compress

    meta = {**to_state(scaler()).meta, "compression": {"algorithm": algorithm, "level": 0}}
    flag = Flags.ZSTD if algorithm == "zstd" else Flags.LZ4
    huge = 1 << 40  # a terabyte of float64 claimed by a file of a few hundred bytes
    data = craft(meta, [IndexEntry("mean_", 3, (huge,), 0, huge * 8)], compress(bytes(64), algorithm, 1), flag)
    with pytest.raises(FormatError, match=f"more than .* bytes of {algorithm} can hold"):
        apr.loads(data)


@pytest.mark.parametrize("algorithm", ["zstd", "lz4"])
def test_corrupt_compressed_data(algorithm: str) -> None:
    data = small(compression=algorithm)
    _, _, data_offset = layout_of(data)
    broken = bytearray(data)
    broken[data_offset] ^= 0xFF  # the frame's magic number
    with pytest.raises(FormatError, match=f"corrupt {algorithm} data section"):
        apr.loads(refresh_crcs(broken))
    cut = refresh_crcs(data[: data_offset + 12] + data[-4:])
    with pytest.raises(FormatError, match=f"{algorithm}"):
        apr.loads(cut)
    longer = refresh_crcs(data[:-4] + b"\x00" + data[-4:])
    with pytest.raises(FormatError, match=f"{algorithm}"):
        apr.loads(longer)


# -- signatures --------------------------------------------------------------------------


def test_every_change_to_a_signed_file_fails_verification(tmp_path: Path) -> None:
    data = small(signing_key=SIGNING_KEY)
    public = SIGNING_KEY.public_key()
    failures = []
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x20
        # a changed magic is no .apr file at all; the footer lies outside the signature
        expected = FormatError if position < 4 else ChecksumMismatch if position >= len(data) - 4 else SignatureInvalid
        try:
            apr.loads(bytes(flipped), verifying_key=public)
            failures.append(f"byte {position}: not detected")
        except AprenderError as exc:
            if type(exc) is not expected:
                failures.append(f"byte {position}: {type(exc).__name__}: {exc}")
    assert failures == []
    path = tmp_path / "signed.apr"
    tampered = bytearray(data)
    tampered[layout_of(data)[2]] ^= 0x01  # first data byte, CRCs recomputed: only the signature can tell
    path.write_bytes(refresh_crcs(tampered))
    # A signed file carries its signer's key: every load checks the signature against it, so
    # a tampered file with recomputed CRCs never loads, whichever way it is opened.
    loads = {
        "load_verified(key)": lambda: apr.load_verified(path, public),
        "load_verified()": lambda: apr.load_verified(path),
        "apr.load": lambda: apr.load_file(path),
        "apr.load(mmap=True)": lambda: apr.load_file(path, mmap=True),
        "aprender.load": lambda: aprender.load(path),
        "load_from_bytes": lambda: apr.loads(path.read_bytes()),
        "read_state": lambda: apr.read_state(path),
        "validate": lambda: aprender.validate(path),
    }
    for name, load in loads.items():
        with pytest.raises(SignatureInvalid, match="does not verify"):
            load()
            pytest.fail(f"{name} loaded a tampered signed file")


def test_re_signed_file_fails_against_the_real_key(tmp_path: Path) -> None:
    data = small(signing_key=SIGNING_KEY)
    forger = Ed25519PrivateKey.generate()
    body = data[: len(data) - 100]
    path = tmp_path / "forged.apr"
    path.write_bytes(refresh_crcs(body + crypto.sign(body, forger) + bytes(4)))
    with pytest.raises(SignatureInvalid, match="the file embeds a different public key"):
        apr.load_verified(path, SIGNING_KEY.public_key())
    apr.load_verified(path)  # the embedded key proves integrity only ...
    assert apr.inspect_file(path).embedded_public_key == crypto.public_key_bytes(forger.public_key())  # ... says so


def test_unsigned_file_and_wrong_key(tmp_path: Path) -> None:
    path = tmp_path / "plain.apr"
    path.write_bytes(small())
    with pytest.raises(SignatureInvalid, match="the file is not signed"):
        apr.load_verified(path)
    with pytest.raises(SignatureInvalid, match="not signed"):
        apr.load_file(path, verifying_key=SIGNING_KEY.public_key())
    path.write_bytes(small(signing_key=SIGNING_KEY))
    with pytest.raises(SignatureInvalid, match="does not verify"):
        apr.load_verified(path, Ed25519PrivateKey.generate().public_key())
    # the memory-mapped path verifies too (reading every page once)
    assert apr.load_file(path, mmap=True, verifying_key=SIGNING_KEY.public_key()).mean_[0] == scaler().mean_[0]
    with pytest.raises(SignatureInvalid, match="does not verify"):
        apr.load_file(path, mmap=True, verifying_key=Ed25519PrivateKey.generate().public_key())


# -- encryption --------------------------------------------------------------------------


def test_key_required_wrong_password_wrong_recipient(tmp_path: Path) -> None:
    path = tmp_path / "secret.apr"
    path.write_bytes(small(password="pw"))
    with pytest.raises(KeyRequired, match="file is encrypted; pass password=") as info:
        apr.load_file(path)
    assert isinstance(info.value, DecryptionFailed)
    with pytest.raises(DecryptionFailed, match="wrong password or key"):
        apr.load_encrypted(path, "not pw")
    with pytest.raises(KeyRequired, match="file is encrypted; pass password="):
        apr.load_as_recipient(path, RECIPIENT)
    path.write_bytes(small(recipient_public_key=RECIPIENT.public_key()))
    with pytest.raises(KeyRequired, match="file is encrypted; pass secret_key="):
        apr.load_encrypted(path, "pw")
    with pytest.raises(DecryptionFailed, match="wrong password or key"):
        apr.load_as_recipient(path, X25519PrivateKey.generate())
    assert np.array_equal(apr.load_as_recipient(path, RECIPIENT).mean_, scaler().mean_)


def _same_length_edit(data: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new) and data.count(old) == 1
    return refresh_crcs(data.replace(old, new))


@pytest.mark.parametrize("scheme", ["password", "recipient"])
def test_header_metadata_index_and_data_are_authenticated(scheme: str) -> None:
    keys = {"password": ({"password": "pw"}, {"password": "pw"}),
            "recipient": ({"recipient_public_key": RECIPIENT.public_key()}, {"secret_key": RECIPIENT})}
    save_kw, load_kw = keys[scheme]
    data = small(name="model-a", **save_kw)
    data_offset = layout_of(data)[2]
    forged = {
        "metadata": _same_length_edit(data, b'"model-a"', b'"model-b"'),
        # float64 -> int64: the same size, so only the authentication can tell
        "index": _same_length_edit(data, b"mean_\x03", b"mean_\x05"),
    }
    for position in range(data_offset, len(data) - 4):
        flipped = bytearray(data)
        flipped[position] ^= 0x01
        forged[f"data byte {position}"] = refresh_crcs(flipped)
    failures = []
    for what, file in forged.items():
        try:
            apr.loads(file, **load_kw)
            failures.append(f"{what}: not detected")
        except DecryptionFailed as exc:
            if "were modified" not in str(exc):
                failures.append(f"{what}: {exc}")
    assert failures == []


def test_segments_cannot_be_dropped_or_swapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crypto, "SEGMENT_SIZE", 4096)
    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    model.coef_ = np.random.default_rng(0).standard_normal(2000)  # 16 000 incompressible bytes
    model.n_features_in_ = 2000
    data = apr.dumps(model, recipient_public_key=RECIPIENT.public_key(), compression="lz4")
    _, _, data_offset = layout_of(data)
    sealed = 4096 + 16
    segments = [data[i : i + sealed] for i in range(data_offset, len(data) - 4, sealed)]
    assert len(segments) == 4
    assert np.array_equal(apr.loads(data, secret_key=RECIPIENT).coef_, model.coef_)
    head = data[:data_offset]
    dropped = refresh_crcs(head + b"".join(segments[:3]) + bytes(4))  # whole segments: a clean cut
    swapped = refresh_crcs(head + b"".join([segments[1], segments[0], *segments[2:]]) + bytes(4))
    for forged in (dropped, swapped):
        with pytest.raises(DecryptionFailed, match="were modified"):
            apr.loads(forged, secret_key=RECIPIENT)


ENCRYPTION_CASES = {
    "huge Argon2 memory": ({"memory_cost": 1 << 30}, "Argon2id memory_cost must be an int"),
    "unknown kdf": ({"kdf": "pbkdf2"}, "unknown key derivation 'pbkdf2'"),
    "short salt": ({"salt": "00"}, "encryption 'salt' must be 16 bytes of hex"),
    "other cipher": ({"cipher": "aes-128-cbc"}, "must name cipher 'aes-256-gcm'"),
    "odd segment size": ({"segment_size": 5000}, "segment_size must be a power of two"),
}


@pytest.mark.parametrize("name", list(ENCRYPTION_CASES))
def test_hostile_encryption_parameters(name: str) -> None:
    change, message = ENCRYPTION_CASES[name]
    data = small(password="pw")
    meta_size, _, data_offset = layout_of(data)
    meta = json.loads(data[64 : 64 + meta_size])
    meta["encryption"].update(change)
    forged = craft(meta, [], data[data_offset:-4], Flags.ENCRYPTED)
    with pytest.raises(FormatError, match=message):
        apr.loads(forged, password="pw")


def test_inspect_never_reads_the_data(tmp_path: Path) -> None:
    data = bytearray(small(password="pw"))
    data[-20] ^= 0xFF  # ciphertext damaged: inspect does not notice, validate does
    path = tmp_path / "damaged.apr"
    path.write_bytes(data)
    assert apr.inspect_file(path).encrypted
    with pytest.raises(ChecksumMismatch):
        apr.validate_file(path)


@pytest.mark.parametrize(("shape", "message"), [
    (b"[9,4]", "quantized tensor 'cluster_centers_' of shape [9, 4] does not fit its 102 bytes of q8_0 blocks"),
    (b"[3,0]", "quantized tensor 'cluster_centers_': invalid dimension 0 in shape"),
])
def test_inspect_checks_the_true_shape_of_quantized_tensors(shape: bytes, message: str, tmp_path: Path) -> None:
    from aprender.cluster import KMeans

    path = tmp_path / "km.apr"
    apr.save_file(KMeans(n_clusters=3, n_init=1, random_state=0).fit(iris()[0]), path, quantize="q8_0")
    path.write_bytes(_same_length_edit(path.read_bytes(), b'"shape":[3,4]', b'"shape":' + shape))
    with pytest.raises(FormatError, match="^" + re.escape(f"'{path}': {message}")):
        apr.inspect_file(path)
    with pytest.raises(FormatError):
        apr.load_file(path)


@pytest.fixture(params=["two halves (ISA-L combines CRCs)", "pipelined (zlib)"])
def chunked_read(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways a large file is read, on small chunks so a 40 KB file takes many."""
    import importlib

    read = importlib.import_module("aprender.format.apr._read")
    monkeypatch.setattr(read, "_CHUNK", 4096)
    if request.param.startswith("pipelined"):
        monkeypatch.setattr(read, "crc32_combine", None)
    elif read.crc32_combine is None:
        pytest.skip("isal (the fast extra) is not installed: no crc32_combine")


def _wide_model() -> LinearRegression:
    rng = np.random.default_rng(3)
    return LinearRegression().fit(rng.random((30, 5000)), rng.random(30))


@pytest.mark.usefixtures("chunked_read")
def test_a_large_file_read_in_chunks_loads_identically(tmp_path: Path) -> None:
    model = _wide_model()
    path = tmp_path / "m.apr"
    apr.save_file(model, path)
    assert path.stat().st_size > 10 * 4096
    loaded = apr.load_file(path)
    assert np.array_equal(loaded.coef_, model.coef_) and loaded.intercept_ == model.intercept_


@pytest.mark.usefixtures("chunked_read")
@pytest.mark.parametrize("where", [0.3, 0.7, -5])
def test_a_flipped_byte_in_either_half_of_a_chunked_read_fails_the_crc(tmp_path: Path, where: float) -> None:
    path = tmp_path / "m.apr"
    apr.save_file(_wide_model(), path)
    data = bytearray(path.read_bytes())
    i = int(len(data) * where) if where > 0 else len(data) + where
    data[i] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ChecksumMismatch, match=f"footer CRC32 of bytes 0-{len(data) - 5}"):
        apr.load_file(path)


@pytest.mark.usefixtures("chunked_read")
def test_a_large_file_that_shrinks_while_it_is_read_is_refused(tmp_path: Path, request) -> None:
    path = tmp_path / "m.apr"
    apr.save_file(_wide_model(), path)
    request.getfixturevalue("files_seem_longer")  # after the save, which stats too
    with pytest.raises(FormatError, match="changed size while being read"):
        apr.load_file(path)


@pytest.mark.parametrize("suffix", [".apr", ".safetensors"])
def test_a_directory_named_like_a_model_file_is_not_read(tmp_path: Path, suffix: str) -> None:
    folder = tmp_path / f"m{suffix}"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match=f"'{folder}' is a directory, not a model file"):
        aprender.load(folder)
