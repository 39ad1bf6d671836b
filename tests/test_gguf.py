"""GGUF backend: zoo roundtrips, key-values, name/rank/dtype mapping, quantized files, tools."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFEndian, GGUFReader, GGUFWriter
from gguf import quants as ggml_quants
from sklearn.base import BaseEstimator
from zoo import assert_identical_outputs, diabetes, iris, outputs

import aprender
from aprender.codec import ModelType, from_state, register_estimator, to_state
from aprender.exceptions import ModelTypeMismatch
from aprender.format import gguf
from aprender.format.quantize import QTYPES, dequantize, quantizable_tensors, quantize
from aprender.linear_model import LinearRegression, LogisticRegression, Ridge

LONG = "a_very_long_fitted_attribute_name_that_is_well_beyond_ggml_sixty_three_bytes_"


class Odd(BaseEstimator):
    """Every awkward tensor shape and dtype the codec can produce."""

    def fit(self, X=None, y=None):
        self.cube_ = np.arange(2 * 3 * 2 * 2 * 3, dtype=np.float64).reshape(2, 3, 2, 2, 3) / 7
        self.point_ = np.array(7.5)
        self.mask_ = np.array([True, False, True])
        self.u8_ = np.array([0, 200, 255], dtype=np.uint8)
        self.u16_ = np.array([1, 65535], dtype=np.uint16)
        self.u32_ = np.array([[2**32 - 1], [5]], dtype=np.uint32)
        self.u64_ = np.array([2**64 - 1], dtype=np.uint64)
        self.i16_ = np.array([-3, 4], dtype=np.int16)
        self.empty_ = np.zeros((0, 3))
        setattr(self, LONG, np.linspace(-1, 1, 40))
        return self

    def predict(self, X):
        return np.asarray(X, dtype=float) @ getattr(self, LONG)[: np.shape(X)[1]] + self.cube_.sum()


register_estimator(Odd, key="tests.gguf.Odd", quantizable=("cube_", LONG, "point_"))


def _assert_same_state(a, b) -> None:
    assert a.meta == b.meta
    assert sorted(a.tensors) == sorted(b.tensors)
    for name, array in a.tensors.items():
        other = b.tensors[name]
        assert (array.dtype, array.shape) == (other.dtype, other.shape), name
        assert array.tobytes() == other.tobytes(), name


# -- roundtrips ------------------------------------------------------------------


@functools.cache
def _logreg() -> LogisticRegression:
    X, y = iris()
    return LogisticRegression(max_iter=500, C=0.5).fit(X, y)


def test_zoo_roundtrip_is_bit_identical_and_deterministic(case, tmp_path) -> None:
    model, X = case.make()
    path = tmp_path / "model.gguf"
    gguf.save_file(model, path, metadata={"name": "m"})
    assert_identical_outputs(model, gguf.load_file(path), X)
    _assert_same_state(gguf.read_state(path), to_state(model, metadata={"name": "m"}))
    data = gguf.dumps(model, metadata={"name": "m"})
    assert data == path.read_bytes()  # same model, same bytes
    assert_identical_outputs(model, gguf.loads(data), X)


def test_zoo_quantized_files_load_and_predict(case, tmp_path) -> None:
    model, X = case.make()
    path = tmp_path / "q.gguf"
    state = to_state(model)
    # Without quantizable tensors every qtype stores the same unquantized file: try one.
    for qtype in QTYPES if quantizable_tensors(state) else QTYPES[:1]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # models without quantizable tensors
            gguf.save_file(model, path, quantize=qtype)
        loaded = gguf.load_file(path, type(model))
        assert type(loaded) is type(model)
        expected, actual = outputs(model, X), outputs(loaded, X)
        assert expected.keys() == actual.keys()
        if quantizable_tensors(state):
            _assert_same_state(gguf.read_state(path), quantize(state, qtype))
            info = gguf.inspect_file(path)
            assert info.quantization == qtype
            assert {t.name for t in info.tensors if t.quantization} == set(quantizable_tensors(state))
        else:
            assert_identical_outputs(model, loaded, X)


def test_awkward_tensors_roundtrip_exactly(tmp_path) -> None:
    odd = Odd().fit()
    path = tmp_path / "odd.gguf"
    gguf.save_file(odd, path)
    _assert_same_state(gguf.read_state(path), to_state(odd))
    loaded = gguf.load_file(path, Odd)
    for name in ("cube_", "mask_", "u8_", "u16_", "u32_", "u64_", "i16_", "empty_", LONG):
        a, b = getattr(odd, name), getattr(loaded, name)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), name


def test_zero_dimensional_tensor_keeps_its_shape(tmp_path) -> None:
    # The codec stores 0-d arrays with shape [1] today; a state that holds one keeps it.
    state = to_state(Odd().fit())
    state.tensors["point_"] = np.array(7.5)
    path = tmp_path / "p.gguf"
    gguf.write_state(state, path)
    assert gguf.read_state(path).tensors["point_"].shape == ()
    assert [t.shape.tolist() for t in GGUFReader(path).tensors if t.name == "point_"] == [[1]]


def test_ggml_limits_hold_and_mapping_is_recorded(tmp_path) -> None:
    path = tmp_path / "odd.gguf"
    gguf.save_file(Odd().fit(), path)
    reader = GGUFReader(path)
    names = {t.name: t for t in reader.tensors}
    assert all(len(name.encode()) <= 63 and len(t.shape) <= 4 for name, t in names.items())
    tensor_map = json.loads(reader.get_field("aprender.tensor_map").contents())
    long_name = next(n for n in names if n.startswith("~"))
    assert long_name.endswith(LONG[-20:]) and tensor_map[long_name] == {"name": LONG}
    assert tensor_map["cube_"] == {"shape": [2, 3, 2, 2, 3]}
    assert names["cube_"].shape.tolist() == [3, 2, 2, 6]  # ne order: the two leading axes merged
    assert tensor_map["mask_"] == {"dtype": "bool"} and names["mask_"].tensor_type == GGMLQuantizationType.I8
    assert tensor_map["u32_"] == {"dtype": "uint32"} and names["u32_"].tensor_type == GGMLQuantizationType.I32
    assert tensor_map["u64_"] == {"dtype": "uint64"} and names["u64_"].tensor_type == GGMLQuantizationType.I64
    assert "i16_" not in tensor_map and names["i16_"].tensor_type == GGMLQuantizationType.I16


def test_inspect_reports_true_names_dtypes_and_shapes(tmp_path) -> None:
    odd = Odd().fit()
    path = tmp_path / "odd.gguf"
    gguf.save_file(odd, path, quantize="q8_0")
    info = gguf.inspect_file(path)
    rows = {t.name: t for t in info.tensors}
    state = to_state(odd)
    assert set(rows) == set(state.tensors)
    for name, array in state.tensors.items():
        quantized = name in {"cube_", LONG}  # point_ is 0-d: scalars are never quantized
        assert rows[name].dtype == ("q8_0" if quantized else array.dtype.name), name
        assert rows[name].shape == array.shape and rows[name].quantization == ("q8_0" if quantized else None)
    assert rows["cube_"].nbytes == 2 * 3 * 2 * 2 * 34 and rows["u64_"].nbytes == 8
    assert info.extra["tensor_map"]["cube_"] == {"shape": [2, 3, 2, 2, 34]}
    assert sum(t.nbytes for t in info.tensors) < path.stat().st_size


def test_awkward_tensors_quantized(tmp_path) -> None:
    odd = Odd().fit()
    path = tmp_path / "odd-q.gguf"
    gguf.save_file(odd, path, quantize="q4_1")
    state = to_state(odd)
    assert quantizable_tensors(state) == sorted(["cube_", LONG])  # point_ is 0-d: never quantized
    _assert_same_state(gguf.read_state(path), quantize(state, "q4_1"))
    loaded = gguf.load_file(path)
    assert loaded.cube_.shape == (2, 3, 2, 2, 3) and loaded.cube_.dtype == np.float64
    np.testing.assert_allclose(loaded.cube_, odd.cube_, atol=odd.cube_.max() / 15)
    types = {t.name: t.tensor_type for t in GGUFReader(path).tensors}
    assert types["cube_"] == GGMLQuantizationType.Q4_1 and types["mask_"] == GGMLQuantizationType.I8


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_downcast_dtypes(dtype: str, tmp_path) -> None:
    X, y = diabetes()
    model = Ridge(alpha=0.5).fit(X, y)
    path = tmp_path / "r.gguf"
    gguf.save_file(model, path, dtype=dtype)
    stored = {t.name: t.tensor_type.name for t in GGUFReader(path).tensors}
    assert stored["coefficients"] == {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}[dtype]
    loaded = gguf.load_file(path)
    cast = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    assert loaded.coef_.dtype == np.float64
    assert np.array_equal(loaded.coef_, model.coef_.astype(cast).astype(np.float64))


def test_downcast_then_quantize(tmp_path) -> None:
    X, y = diabetes()
    model = Ridge().fit(X, y)
    path = tmp_path / "r.gguf"
    gguf.save_file(model, path, dtype="float16", quantize="q8_0")
    assert gguf.load_file(path).coef_.dtype == np.float64
    assert gguf.read_state(path).meta["quantization"]["tensors"]["coefficients"]["dtype"] == "float16"


# -- key-values and interoperability -----------------------------------------------


def _fields(path: Path) -> dict:
    reader = GGUFReader(path)
    return {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def test_key_values_follow_gguf_conventions(tmp_path) -> None:
    model = _logreg()
    path = tmp_path / "lr.gguf"
    meta = {"name": "iris-logreg", "description": "demo", "license": "MIT", "metrics": {"acc": 0.97}}
    gguf.save_file(model, path, metadata=meta)
    fields = _fields(path)
    assert fields["general.architecture"] == "aprender"
    assert fields["general.type"] == "model"
    assert fields["general.name"] == "iris-logreg"
    assert fields["general.description"] == "demo" and fields["general.license"] == "MIT"
    assert "general.file_type" not in fields  # unquantized
    state = to_state(model, metadata=meta)
    assert fields["aprender.class"] == "aprender.linear_model.LogisticRegression"
    assert fields["aprender.schema"] == 1 and fields["aprender.model_type"] == int(ModelType.LOGISTIC_REGRESSION)
    assert json.loads(fields["aprender.params"])["C"] == 0.5
    assert json.loads(fields["aprender.attrs"]) == state.meta["model"]["attrs"]
    assert json.loads(fields["aprender.user"]) == meta
    for lib, version in state.meta["versions"].items():
        assert fields[f"aprender.versions.{lib}"] == version


def test_quantized_file_declares_ggml_file_type(tmp_path) -> None:
    path = tmp_path / "lr.gguf"
    for qtype, code in (("q8_0", 7), ("q4_0", 2), ("q4_1", 3)):
        gguf.save_file(_logreg(), path, quantize=qtype)
        fields = _fields(path)
        assert fields["general.file_type"] == code and fields["general.quantization_version"] == 2
        assert fields["general.name"] == "LogisticRegression"
        assert json.loads(fields["aprender.quantization"])["type"] == qtype


@pytest.mark.parametrize("qtype", QTYPES)
def test_plain_gguf_reader_dequantizes_our_blocks(qtype: str, tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 96))
    model = LinearRegression().fit(X, X @ rng.normal(size=(96, 2)))
    path = tmp_path / "wide.gguf"
    gguf.save_file(model, path, quantize=qtype)
    tensor = next(t for t in GGUFReader(path).tensors if t.name == "coefficients")
    assert tensor.tensor_type.name == qtype.upper() and tensor.shape.tolist() == [96, 2]
    theirs = ggml_quants.dequantize(np.array(tensor.data), tensor.tensor_type)
    ours = dequantize(quantize(to_state(model), qtype)).tensors["coefficients"]
    assert np.array_equal(theirs, ours)
    assert np.array_equal(gguf.load_file(path).coef_, ours.astype(np.float64))


def _gguf_dump() -> str:
    beside = Path(sys.executable).with_name("gguf-dump")
    return str(beside) if beside.exists() else shutil.which("gguf-dump") or "gguf-dump"


def test_gguf_dump_lists_tensors_and_keys(tmp_path) -> None:
    path = tmp_path / "odd.gguf"
    gguf.save_file(Odd().fit(), path, quantize="q8_0", metadata={"name": "odd-model"})
    result = subprocess.run([_gguf_dump(), str(path)], capture_output=True, text=True, timeout=120, check=True)
    out = result.stdout
    for key in ("general.architecture = 'aprender'", "general.name = 'odd-model'", "aprender.class = 'tests.gguf.Odd'",
                "aprender.params", "aprender.attrs", "aprender.versions.numpy", "aprender.quantization",
                "aprender.tensor_map", "general.file_type = 7"):
        assert key in out, key
    rows = [[c.strip() for c in line.split("|")] for line in out.split("Dumping 10 tensor(s)")[1].splitlines()[1:]]
    types = {cols[-1]: cols[-2] for cols in rows if len(cols) == 4}
    assert types["cube_"] == "Q8_0" and types["mask_"] == "I8" and types["u64_"] == "I64"
    assert types["cube_"] == "Q8_0" and types["empty_"] == "F64" and types["point_"] == "F64"
    assert len(types) == len(to_state(Odd().fit()).tensors)


# -- front doors -------------------------------------------------------------------


def test_mixin_and_format_dispatch(tmp_path) -> None:
    X, _ = iris()
    model = _logreg()
    path = tmp_path / "m.gguf"
    model.save_gguf(path)
    assert_identical_outputs(model, LogisticRegression.load_gguf(path), X)
    with pytest.raises(ModelTypeMismatch, match="file contains LogisticRegression, expected Ridge"):
        Ridge.load_gguf(path)
    model.save_gguf(path, quantize="q4_0")
    assert (LogisticRegression.load_gguf(path).predict(X) == model.predict(X)).mean() > 0.9
    other = tmp_path / "n.gguf"
    aprender.save(model, other, quantize="q8_0", metadata={"name": "x"})
    assert type(aprender.load(other, ModelType.LOGISTIC_REGRESSION)) is LogisticRegression
    assert gguf.inspect_file(other).metadata["user"] == {"name": "x"}


def test_bad_quantize_option_fails_before_writing(tmp_path) -> None:
    path = tmp_path / "m.gguf"
    with pytest.raises(ValueError, match="quantize must be one of q8_0, q4_0, q4_1; got 'q3'"):
        _logreg().save_gguf(path, quantize="q3")
    assert not path.exists() and not list(tmp_path.iterdir())


def test_inspect_and_validate(tmp_path) -> None:
    X, y = diabetes()
    model = LinearRegression().fit(X, y)
    path = tmp_path / "lr.gguf"
    gguf.save_file(model, path, quantize="q8_0")
    report = gguf.validate_file(path)
    assert report == aprender.validate(path) and report.model and report.complete
    info = aprender.inspect(path)
    assert info == gguf.inspect_file(path)
    assert info.format == "gguf" and info.format_version == "3" and info.file_size == path.stat().st_size
    assert info.model_type is ModelType.LINEAR_REGRESSION and info.class_key.endswith("LinearRegression")
    rows = {t.name: t for t in info.tensors}
    assert rows["coefficients"].dtype == "q8_0" and rows["coefficients"].shape == (10,)
    assert rows["coefficients"].nbytes == 34 and rows["intercept"].dtype == "float64"
    assert info.extra["general"]["general.file_type"] == 7
    state = to_state(model)
    assert from_state(dequantize(quantize(state, "q8_0"))).predict(X).tolist() == gguf.load_file(path).predict(
        X).tolist()


def test_missing_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no such model file"):
        gguf.load_file(tmp_path / "absent.gguf")


# -- files other tools wrote -----------------------------------------------------------


def _write_foreign(path: Path, tensors: dict, *, endianess: GGUFEndian = GGUFEndian.LITTLE) -> Path:
    """A GGUF file written directly with gguf-py's writer: (array, raw type or None) per name."""
    writer = GGUFWriter(path, "llama", endianess=endianess)
    writer.add_name("tiny")
    writer.add_token_list(["a", "b", "c"])
    for name, (array, raw) in tensors.items():
        writer.add_tensor(name, array, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_load_tensors_of_a_foreign_file(tmp_path) -> None:
    rng = np.random.default_rng(0)
    values = {"f32": rng.normal(size=(4, 64)).astype(np.float32), "f16": rng.normal(size=64).astype(np.float16),
              "f64": rng.normal(size=(2, 3)), "i8": np.arange(-4, 4, dtype=np.int8)}
    bf16 = rng.normal(size=(2, 8)).astype(ml_dtypes.bfloat16)
    q8 = ggml_quants.quantize(rng.normal(size=(2, 64)).astype(np.float32), GGMLQuantizationType.Q8_0)
    # Q4_K, which aprender never writes: 144-byte super-blocks of 256 values with float16 scales
    q4k = rng.integers(0, 256, size=(3, 144), dtype=np.uint8)
    q4k[:, :4] = np.array([0.01, 0.001], dtype=np.float16).view(np.uint8)
    path = _write_foreign(tmp_path / "llama.gguf", {
        **{name: (array, None) for name, array in values.items()},
        "bf16": (bf16.view(np.uint8), GGMLQuantizationType.BF16),
        "blk.0.q8_0": (q8, GGMLQuantizationType.Q8_0), "blk.0.q4_k": (q4k, GGMLQuantizationType.Q4_K)})
    tensors = gguf.load_tensors(path)
    assert list(tensors) == [*values, "bf16", "blk.0.q8_0", "blk.0.q4_k"]
    for name, array in values.items():
        assert tensors[name].dtype == array.dtype and np.array_equal(tensors[name], array)
    assert tensors["bf16"].dtype == ml_dtypes.bfloat16 and np.array_equal(tensors["bf16"], bf16)
    for name, blocks, qtype in (("blk.0.q8_0", q8, "Q8_0"), ("blk.0.q4_k", q4k, "Q4_K")):
        expected = ggml_quants.dequantize(blocks, GGMLQuantizationType[qtype])
        assert tensors[name].dtype == np.float32 and tensors[name].shape == expected.shape
        assert np.array_equal(tensors[name], expected)
    assert tensors["blk.0.q4_k"].shape == (3, 256) and np.isfinite(tensors["blk.0.q4_k"]).all()
    assert all(a.flags.writeable and a.flags.c_contiguous for a in tensors.values())  # copies, not file views
    wide = gguf.load_tensors(path, as_float32=True)
    assert {name: a.dtype.name for name, a in wide.items()} == {
        "f32": "float32", "f16": "float32", "f64": "float64", "i8": "int8", "bf16": "float32",
        "blk.0.q8_0": "float32", "blk.0.q4_k": "float32"}
    assert np.array_equal(wide["bf16"], bf16.astype(np.float32))
    # and inspect describes it, without a model
    info = aprender.inspect(path)
    assert info == gguf.inspect_file(path) and info.extra["foreign"] and info.class_key is None
    assert info.metadata["general.architecture"] == "llama" and info.metadata["tokenizer.ggml.tokens"] == "<array of 3>"
    assert {t.name: (t.dtype, t.shape) for t in info.tensors} == {
        "f32": ("float32", (4, 64)), "f16": ("float16", (64,)), "f64": ("float64", (2, 3)), "i8": ("int8", (8,)),
        "bf16": ("bfloat16", (2, 8)), "blk.0.q8_0": ("q8_0", (2, 64)), "blk.0.q4_k": ("q4_k", (3, 256))}
    assert info.quantization is None  # two block types


def test_load_tensors_of_a_big_endian_file(tmp_path) -> None:
    values = {"w": np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), "ids": np.arange(5, dtype=np.int32)}
    path = _write_foreign(tmp_path / "be.gguf", {k: (v.copy(), None) for k, v in values.items()},
                          endianess=GGUFEndian.BIG)
    tensors = gguf.load_tensors(path)
    for name, array in values.items():
        assert tensors[name].dtype == array.dtype and tensors[name].dtype.isnative
        assert np.array_equal(tensors[name], array)


def test_load_tensors_of_an_aprender_file_gives_its_stored_tensors(tmp_path) -> None:
    path = tmp_path / "lr.gguf"
    model = _logreg()
    gguf.save_file(model, path)
    tensors = gguf.load_tensors(path)
    assert np.array_equal(tensors["coefficients"], model.coef_) and tensors["coefficients"].dtype == np.float64
    assert set(tensors) == set(gguf.read_state(path).tensors)
