"""Truncated, corrupted, crafted and hostile GGUF files fail with aprender errors."""

from __future__ import annotations

import functools
import json
import struct
import time
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from zoo import diabetes

import aprender
from aprender.exceptions import AprenderError, FormatError, LoadBudgetExceeded, UnsupportedVersion, UntrustedTypeError
from aprender.format import gguf
from aprender.linear_model import LinearRegression

_NATIVE = {GGMLQuantizationType[t] for t in ("F64", "F32", "F16", "I64", "I32", "I16", "I8")}


@functools.cache
def _model() -> LinearRegression:
    X, y = diabetes()
    return LinearRegression().fit(X, y)


@functools.cache
def _valid(quantize: str | None = None) -> bytes:
    return gguf.dumps(_model(), quantize=quantize, metadata={"name": "lr"})


def _data_offset(data: bytes, tmp_path: Path) -> int:
    path = tmp_path / "valid.gguf"
    path.write_bytes(data)
    return GGUFReader(path).data_offset


def _error(data: bytes, tmp_path: Path, name: str = "hostile.gguf") -> AprenderError:
    """Every entry point fails the same way: bytes, file, and the format-agnostic loader."""
    path = tmp_path / name
    path.write_bytes(data)
    errors = []
    for attempt in (lambda: gguf.loads(data), lambda: gguf.load_file(path), lambda: aprender.load(path),
                    lambda: gguf.inspect_file(path) and gguf.validate_file(path), lambda: aprender.validate(path)):
        with pytest.raises(AprenderError) as info:
            attempt()
        errors.append(info.value)
    assert len({type(e) for e in errors}) == 1, errors
    return errors[1]


# -- truncation and corruption -------------------------------------------------------


def test_truncation_at_any_length_is_a_format_error(tmp_path) -> None:
    data = _valid("q8_0")
    header = _data_offset(data, tmp_path)
    path = tmp_path / "cut.gguf"
    reasons = set()
    for n in [*range(0, header + 8), *range(header + 8, len(data), 5)]:
        path.write_bytes(data[:n])
        with pytest.raises(FormatError) as info:
            gguf.load_file(path)
        message = str(info.value)
        reason = next(r for r in ("not a GGUF file", "(truncated?)", "(truncated or trailing data)") if r in message)
        reasons.add(reason)
    assert reasons == {"not a GGUF file", "(truncated?)", "(truncated or trailing data)"}
    assert "(truncated?)" in str(_error(data[: header - 3], tmp_path))


def test_trailing_bytes_are_rejected(tmp_path) -> None:
    error = _error(_valid() + b"\0" * 32, tmp_path)
    assert isinstance(error, FormatError) and "trailing data" in str(error)


@pytest.mark.filterwarnings("ignore::aprender.exceptions.VersionSkewWarning")  # flipped version strings
def test_byte_flips_in_header_and_key_values_never_escape(tmp_path) -> None:
    data = _valid("q4_0")
    header = _data_offset(data, tmp_path)
    path = tmp_path / "flip.gguf"
    rejected = 0
    for i in range(header):
        flipped = bytearray(data)
        flipped[i] ^= (0xFF, 0x01, 0x80)[i % 3]
        path.write_bytes(flipped)
        try:
            model = gguf.load_file(path)
        except AprenderError:
            rejected += 1
        else:  # a flip in an informational value (general.name, a version string) is harmless
            assert isinstance(model, LinearRegression)
    assert rejected > header * 0.6


def test_byte_flips_in_tensor_data_change_exactly_what_the_model_reads(tmp_path) -> None:
    """GGUF has no checksum: a flipped data byte loads, and changes the predictions iff predict reads it."""
    data = _valid("q8_0")
    header = _data_offset(data, tmp_path)
    tensors = {t.name: t for t in GGUFReader(tmp_path / "valid.gguf").tensors}
    X = diabetes()[0][:3]
    coefficients, intercept = tensors["coefficients"], tensors["intercept"]
    # One Q8_0 block: a float16 scale, then 32 quants of which the 10 features use the first 10
    # (data_offset counts from the start of the file).
    read = {*range(coefficients.data_offset, coefficients.data_offset + 2 + X.shape[1]),
            *range(intercept.data_offset, intercept.data_offset + intercept.n_bytes)}
    expected = gguf.loads(data).predict(X)
    path = tmp_path / "flip.gguf"
    changed = set()
    for i in range(header, len(data)):
        flipped = bytearray(data)
        flipped[i] ^= 0xFF
        path.write_bytes(flipped)
        if not np.array_equal(gguf.load_file(path).predict(X), expected):
            changed.add(i)
    assert changed == read


# -- the fixed header ----------------------------------------------------------------


def test_empty_and_foreign_files(tmp_path) -> None:
    path = tmp_path / "x.gguf"
    for data in (b"", b"GGU", b"GGML" + bytes(20), b"\0" * 64):
        path.write_bytes(data)
        with pytest.raises(FormatError, match="not a GGUF file"):
            gguf.load_file(path)


@pytest.mark.parametrize("version", [1, 4, 0x10000])
def test_unsupported_version(version: int, tmp_path) -> None:
    data = _valid()
    error = _error(data[:4] + struct.pack("<I", version) + data[8:], tmp_path)
    assert isinstance(error, UnsupportedVersion) and f"GGUF v{version}" in str(error)


@pytest.mark.parametrize("offset", [8, 16])
def test_huge_counts_fail_fast(offset: int, tmp_path) -> None:
    data = _valid()
    for count in (2**63, 2**40, 10_000):
        start = time.perf_counter()
        error = _error(data[:offset] + struct.pack("<Q", count) + data[offset + 8 :], tmp_path)
        assert isinstance(error, FormatError) and time.perf_counter() - start < 60


# -- crafted files (written with gguf's own writer) ----------------------------------


def _parts(data: bytes, tmp_path: Path) -> tuple[dict, dict]:
    path = tmp_path / "parts.gguf"
    path.write_bytes(data)
    reader = GGUFReader(path)
    kv = {}
    for key, field in reader.fields.items():
        if not key.startswith("GGUF."):
            sub = field.types[-1] if field.types[0] == GGUFValueType.ARRAY else None
            kv[key] = (field.contents(), field.types[0], sub)
    tensors = {t.name: (np.array(t.data), t.tensor_type) for t in reader.tensors}
    return kv, tensors


def _craft(tmp_path: Path, edit, quantize: str | None = None) -> bytes:
    kv, tensors = _parts(_valid(quantize), tmp_path)
    edit(kv, tensors)
    path = tmp_path / "crafted.gguf"
    writer = GGUFWriter(path, kv.pop("general.architecture")[0])
    for key, (value, vtype, sub) in kv.items():
        writer.add_key_value(key, value, vtype, sub_type=sub)
    for name, (array, ttype) in tensors.items():
        writer.add_tensor(name, array, raw_dtype=None if ttype in _NATIVE else ttype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def _string(value: str) -> tuple:
    return (value, GGUFValueType.STRING, None)


def _set_json(kv: dict, key: str, edit) -> None:
    value = json.loads(kv[key][0])
    edit(value)
    kv[key] = _string(json.dumps(value))


def _map(kv: dict, text: str) -> None:
    kv["aprender.tensor_map"] = _string(text)


def test_crafting_helper_reproduces_a_loadable_file(tmp_path) -> None:
    data = _craft(tmp_path, lambda kv, t: None)
    assert gguf.loads(data).coef_.tolist() == _model().coef_.tolist()


def test_another_architecture_is_no_model_but_valid_raw_tensors(tmp_path) -> None:
    path = tmp_path / "llama.gguf"
    path.write_bytes(_craft(tmp_path, lambda kv, t: kv.update({"general.architecture": _string("llama")})))
    for load in (lambda: gguf.load_file(path), lambda: aprender.load(path)):
        with pytest.raises(FormatError, match=r"general\.architecture is 'llama', not 'aprender'"):
            load()
    report = aprender.validate(path)  # a well-formed GGUF of another architecture: its tensors all read
    assert not report.model and report.checks[-1] == "tensors read (no aprender model: raw tensors)"


CRAFTED = [
    ("no class", lambda kv, t: kv.pop("aprender.class"), "no 'aprender.class' key"),
    ("no attrs", lambda kv, t: kv.pop("aprender.attrs"), "no 'aprender.attrs' key"),
    ("schema as string", lambda kv, t: kv.update({"aprender.schema": _string("1")}),
     "key 'aprender.schema' must be a UINT32, found ['STRING']"),
    ("attrs not JSON", lambda kv, t: kv.update({"aprender.attrs": _string("{nope")}),
     "key 'aprender.attrs' is not valid JSON"),
    ("params NaN", lambda kv, t: kv.update({"aprender.params": _string('{"fit_intercept": NaN}')}),
     "key 'aprender.params' is not valid JSON"),
    ("meta shadows model", lambda kv, t: kv.update({"aprender.meta.model": _string("{}")}),
     "key 'aprender.meta.model' duplicates a dedicated aprender key"),
    ("missing tensor", lambda kv, t: t.pop("intercept"), "missing tensor 'intercept'"),
    ("unreferenced tensor", lambda kv, t: t.update(extra=(np.zeros(2), GGMLQuantizationType.F64)),
     "tensor 'extra' is not referenced"),
    ("unsupported type", lambda kv, t: t.update(coefficients=(np.zeros((1, 22), np.uint8), GGMLQuantizationType.Q5_0)),
     "has type Q5_0, which aprender does not read"),
    ("undeclared blocks", lambda kv, t: t.update(coefficients=(np.zeros((1, 34), np.uint8), GGMLQuantizationType.Q8_0)),
     "tensor 'coefficients' is Q8_0 but the metadata declares no quantization"),
    ("map to bad dtype", lambda kv, t: _map(kv, '{"coefficients":{"dtype":"uint32"}}'),
     "cannot be restored to dtype 'uint32' from float64"),
    ("map with bad shape", lambda kv, t: _map(kv, '{"coefficients":{"shape":[3,4]}}'),
     "mapped shape [3, 4] does not match stored shape [10]"),
    ("map with bad key", lambda kv, t: kv.update({"aprender.tensor_map": _string('{"coefficients":{"order":"F"}}')}),
     "invalid aprender.tensor_map entry"),
    ("map names a ghost", lambda kv, t: kv.update({"aprender.tensor_map": _string('{"ghost":{"name":"x"}}')}),
     "aprender.tensor_map names a missing tensor 'ghost'"),
    ("map collides", lambda kv, t: kv.update({"aprender.tensor_map": _string('{"coefficients":{"name":"intercept"}}')}),
     "two tensors map to the name 'intercept'"),
    ("map not an object", lambda kv, t: kv.update({"aprender.tensor_map": _string("[]")}),
     "key 'aprender.tensor_map' must be a JSON object"),
    ("negative alignment", lambda kv, t: kv.update({"general.alignment": (3, GGUFValueType.UINT32, None)}),
     "Invalid alignment"),
]


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in CRAFTED], ids=[c[0] for c in CRAFTED])
def test_crafted_files(edit, message: str, tmp_path) -> None:
    error = _error(_craft(tmp_path, edit), tmp_path)
    assert isinstance(error, FormatError) and message in str(error), str(error)


def test_bool_tensor_with_other_values(tmp_path) -> None:
    def edit(kv, t):
        kv["aprender.tensor_map"] = _string('{"flags":{"dtype":"bool"}}')
        t["flags"] = (np.array([0, 1, 2], np.int8), GGMLQuantizationType.I8)

    error = _error(_craft(tmp_path, edit), tmp_path)
    assert "tensor 'flags': bool tensor holds values other than 0 and 1" in str(error)


def test_untrusted_class(tmp_path) -> None:
    error = _error(_craft(tmp_path, lambda kv, t: kv.update({"aprender.class": _string("os.system")})), tmp_path)
    assert isinstance(error, UntrustedTypeError) and "'os.system'" in str(error)


QUANTIZED = [
    ("record type", lambda q: q.update(type="q5_0"), "unknown quantization type 'q5_0'"),
    ("record shape", lambda q: q["tensors"]["coefficients"].update(shape=[64]), "uint8 of shape [68]"),
    ("record shape type", lambda q: q["tensors"]["coefficients"].update(shape="x"), "dimensions, found x"),
    ("record dtype", lambda q: q["tensors"]["coefficients"].update(dtype="int8"), "invalid original dtype 'int8'"),
    ("record ghost", lambda q: q["tensors"].update(ghost={"shape": [1], "dtype": "float32"}), "'ghost' is missing"),
]


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in QUANTIZED], ids=[c[0] for c in QUANTIZED])
def test_crafted_quantization_records(edit, message: str, tmp_path) -> None:
    data = _craft(tmp_path, lambda kv, t: _set_json(kv, "aprender.quantization", edit), quantize="q8_0")
    error = _error(data, tmp_path)
    assert isinstance(error, FormatError) and message in str(error), str(error)


def test_quantized_block_type_must_match_the_record(tmp_path) -> None:
    def edit(kv, t):
        t["coefficients"] = (np.zeros(18, np.uint8), GGMLQuantizationType.Q4_0)

    error = _error(_craft(tmp_path, edit, quantize="q8_0"), tmp_path)
    assert "tensor 'coefficients' is Q4_0 but the metadata declares quantization 'q8_0'" in str(error)


def test_array_length_bomb_fails_fast(tmp_path) -> None:
    data = _craft(tmp_path, lambda kv, t: kv.update({"x.bomb": ([1, 2, 3], GGUFValueType.ARRAY, GGUFValueType.UINT8)}))
    at = data.index(b"x.bomb") + len(b"x.bomb") + 4 + 4  # key, value type, item type, then the uint64 length
    assert struct.unpack("<Q", data[at : at + 8]) == (3,)
    start = time.perf_counter()
    # past the per-byte item cap: refused from the stated length, before any item is read
    error = _error(data[:at] + struct.pack("<Q", 2**62) + data[at + 8 :], tmp_path)
    assert isinstance(error, LoadBudgetExceeded) and "too costly to parse" in str(error)
    # inside the cap: the items run past the end of the file
    error = _error(data[:at] + struct.pack("<Q", 2**17) + data[at + 8 :], tmp_path)
    assert isinstance(error, FormatError) and "(truncated?)" in str(error)
    assert time.perf_counter() - start < 60


def test_invalid_utf8_key(tmp_path) -> None:
    data = _valid()
    at = data.index(b"aprender.class")
    error = _error(data[:at] + b"\xff" + data[at + 1 :], tmp_path)
    assert isinstance(error, FormatError)


# -- load_tensors: any GGUF file -----------------------------------------------------


def _foreign(path: Path, raw: GGMLQuantizationType | None = None) -> Path:
    writer = GGUFWriter(path, "llama")
    writer.add_token_list(["a", "b"])
    writer.add_tensor("w", np.arange(64, dtype=np.float32).reshape(2, 32))
    if raw is not None:  # a block type given as raw bytes: 292-byte Q8_K super-blocks of 256 values
        writer.add_tensor("k", np.zeros((1, 292), dtype=np.uint8), raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_load_tensors_of_truncated_foreign_files(tmp_path) -> None:
    full = _foreign(tmp_path / "full.gguf")
    data = full.read_bytes()
    tensor = GGUFReader(full).tensors[0]
    end = tensor.data_offset + int(tensor.n_bytes)  # the last byte any tensor needs; alignment padding follows
    path = tmp_path / "cut.gguf"
    for size in range(len(data)):
        path.write_bytes(data[:size])
        if size < end:
            with pytest.raises(FormatError, match=f"^'{path}': "):
                gguf.load_tensors(path)
        else:  # only padding is missing: every tensor is whole
            assert np.array_equal(gguf.load_tensors(path)["w"], np.arange(64, dtype=np.float32).reshape(2, 32))


def test_load_tensors_of_hostile_foreign_files(tmp_path) -> None:
    path = tmp_path / "x.gguf"
    for data in (b"", b"GGU", b"GGML" + bytes(20)):
        path.write_bytes(data)
        with pytest.raises(FormatError, match="not a GGUF file"):
            gguf.load_tensors(path)
    data = _foreign(tmp_path / "full.gguf").read_bytes()
    for offset in (8, 16):  # tensor count, key-value count
        path.write_bytes(data[:offset] + struct.pack("<Q", 2**62) + data[offset + 8 :])
        with pytest.raises(FormatError):
            gguf.load_tensors(path)
    # a type gguf.quants cannot decode
    path = _foreign(tmp_path / "q8k.gguf", GGMLQuantizationType.Q8_K)
    with pytest.raises(FormatError, match=r"tensor 'k' has type Q8_K, which gguf\.quants cannot dequantize"):
        gguf.load_tensors(path)
    # a block type whose rows are not whole blocks: 'w' retyped as Q8_0 (32-value blocks) of 2 x 33 values
    path = _foreign(tmp_path / "w.gguf")
    info = GGUFReader(path).tensors[0].field.offset  # name length (8 bytes), name "w", n_dims (4), dims, type
    raw = bytearray(path.read_bytes())
    struct.pack_into("<QQI", raw, info + 13, 33, 2, int(GGMLQuantizationType.Q8_0))
    path.write_bytes(raw)
    with pytest.raises(FormatError, match=f"^'{path}': not a valid GGUF file: ValueError"):
        gguf.load_tensors(path)
