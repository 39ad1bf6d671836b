"""SafeTensors backend: layout, roundtrips, determinism, dtypes and foreign files."""

from __future__ import annotations

import json
import struct

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy as official
from sklearn import linear_model as sk_linear
from sklearn.exceptions import NotFittedError
from zoo import assert_identical_outputs, diabetes, iris

import aprender
from aprender.cluster import KMeans
from aprender.codec import ModelType
from aprender.exceptions import ModelTypeMismatch
from aprender.format import safetensors
from aprender.linear_model import LinearRegression, LogisticRegression


@pytest.fixture
def linear(tmp_path):
    X, y = diabetes()
    model = LinearRegression().fit(X, y)
    path = tmp_path / "model.safetensors"
    model.save_safetensors(path)
    return model, path


def _header(path) -> dict:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n])


# -- the seed's SafeTensors tests -------------------------------------------------


def test_file_is_created(linear) -> None:
    _, path = linear
    assert path.is_file() and path.stat().st_size > 8


def test_header_is_8_byte_little_endian_length(linear) -> None:
    _, path = linear
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert raw[8:9] == b"{"
    assert 8 + n <= len(raw)
    json.loads(raw[8 : 8 + n])  # exactly the header bytes parse as JSON


def test_json_metadata_structure(linear) -> None:
    model, path = linear
    header = _header(path)
    coef, intercept = header["coefficients"], header["intercept"]
    assert coef["dtype"] == "F64" and coef["shape"] == [model.coef_.shape[0]]
    assert intercept["dtype"] == "F64" and intercept["shape"] == [1]
    for entry in (coef, intercept):
        begin, end = entry["data_offsets"]
        assert end - begin == 8 * int(np.prod(entry["shape"]))
    assert list(header["__metadata__"]) == ["aprender"]
    meta = json.loads(header["__metadata__"]["aprender"])
    assert meta["model"]["class"] == "aprender.linear_model.LinearRegression"
    assert meta["model_type"] == ModelType.LINEAR_REGRESSION
    assert meta["model"]["params"]["fit_intercept"] is True
    assert set(meta["versions"]) == {"aprender", "numpy", "sklearn"}


def test_roundtrip_linear(linear) -> None:
    model, path = linear
    loaded = LinearRegression.load_safetensors(path)
    assert type(loaded) is LinearRegression
    assert np.array_equal(loaded.coef_, model.coef_)
    assert loaded.intercept_ == model.intercept_ and type(loaded.intercept_) is type(model.intercept_)
    X, _ = diabetes()
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_missing_file(tmp_path) -> None:
    missing = tmp_path / "nope.safetensors"
    with pytest.raises(FileNotFoundError, match=r"nope\.safetensors"):
        LinearRegression.load_safetensors(missing)


def test_file_of_three_bytes(tmp_path) -> None:
    path = tmp_path / "tiny.safetensors"
    path.write_bytes(b"abc")
    with pytest.raises(aprender.exceptions.FormatError, match="3 bytes is too short"):
        LinearRegression.load_safetensors(path)


def test_official_reader_sees_stable_tensor_names(linear) -> None:
    model, path = linear
    tensors = official.load_file(str(path))
    assert np.array_equal(tensors["coefficients"], model.coef_)
    assert np.array_equal(tensors["intercept"], [model.intercept_])


# -- every model of the zoo -------------------------------------------------------


@pytest.mark.lower_bound
def test_zoo_roundtrip_file(case, tmp_path) -> None:
    model, X = case.make()
    path = tmp_path / "m.safetensors"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert type(loaded) is type(model)
    assert_identical_outputs(model, loaded, X)


def test_zoo_roundtrip_bytes_and_determinism(case, tmp_path) -> None:
    model, X = case.make()
    first, second = safetensors.dumps(model), safetensors.dumps(model)
    assert first == second
    path = tmp_path / "m.safetensors"
    safetensors.save_file(model, path)
    assert path.read_bytes() == first
    assert_identical_outputs(model, safetensors.loads(first), X)


def test_in_memory_and_streamed_saves_write_the_same_bytes(tmp_path, monkeypatch) -> None:
    model = LogisticRegression(max_iter=1000).fit(*iris())
    safetensors.save_file(model, tmp_path / "small.safetensors")  # under the threshold: in memory
    monkeypatch.setattr(safetensors, "_IN_MEMORY_BYTES", -1)
    safetensors.save_file(model, tmp_path / "streamed.safetensors")
    assert (tmp_path / "small.safetensors").read_bytes() == (tmp_path / "streamed.safetensors").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.safetensors", "streamed.safetensors"]


def test_refit_model_saves_identical_bytes() -> None:
    X, y = iris()
    a = LogisticRegression(max_iter=1000).fit(X, y)
    b = LogisticRegression(max_iter=1000).fit(X, y)
    assert safetensors.dumps(a) == safetensors.dumps(b)


# -- class checks -------------------------------------------------------------------


def test_wrong_class_is_a_model_type_mismatch(tmp_path) -> None:
    X, _ = iris()
    path = tmp_path / "km.safetensors"
    KMeans(n_clusters=2, n_init=1, random_state=0).fit(X).save_safetensors(path)
    with pytest.raises(ModelTypeMismatch, match="file contains KMeans, expected LinearRegression"):
        LinearRegression.load_safetensors(path)
    with pytest.raises(ModelTypeMismatch, match="expected LOGISTIC_REGRESSION"):
        aprender.load(path, ModelType.LOGISTIC_REGRESSION)
    assert isinstance(aprender.load(path, ModelType.KMEANS), KMeans)


def test_plain_sklearn_model_roundtrips_and_loads_as_aprender_twin(tmp_path) -> None:
    X, y = diabetes()
    plain = sk_linear.LinearRegression().fit(X, y)
    path = tmp_path / "plain.safetensors"
    aprender.save(plain, path)
    again = aprender.load(path)
    assert type(again) is sk_linear.LinearRegression
    twin = LinearRegression.load_safetensors(path)
    assert type(twin) is LinearRegression
    assert np.array_equal(twin.predict(X), plain.predict(X))


def test_unfitted_model_raises_not_fitted(tmp_path) -> None:
    with pytest.raises(NotFittedError):
        LinearRegression().save_safetensors(tmp_path / "x.safetensors")
    assert not (tmp_path / "x.safetensors").exists()


def test_user_metadata_roundtrips(tmp_path) -> None:
    X, y = iris()
    path = tmp_path / "m.safetensors"
    user = {"name": "iris", "metrics": {"accuracy": 0.97}, "tags": ["a", "b"]}
    LogisticRegression(max_iter=1000).fit(X, y).save_safetensors(path, metadata=user)
    assert safetensors.read_state(path).user_metadata == user
    with pytest.raises(TypeError, match="JSON-serializable"):
        LogisticRegression(max_iter=1000).fit(X, y).save_safetensors(path, metadata={"bad": object()})


# -- dtype downcasting --------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "code", "rtol"), [("float32", "F32", 1e-6), ("float16", "F16", 2e-3), ("bfloat16", "BF16", 2e-2)]
)
def test_downcast_dtypes(tmp_path, dtype, code, rtol) -> None:
    X, y = iris()
    model = LogisticRegression(max_iter=1000).fit(X, y)
    path = tmp_path / f"{dtype}.safetensors"
    model.save_safetensors(path, dtype=dtype)
    header = _header(path)
    assert header["coefficients"]["dtype"] == code
    assert header["classes_"]["dtype"] == "I64"  # integers are never cast
    loaded = LogisticRegression.load_safetensors(path)
    assert loaded.coef_.dtype == np.float64
    np.testing.assert_allclose(loaded.coef_, model.coef_, rtol=rtol)
    assert (loaded.predict(X) == model.predict(X)).mean() > 0.97


def test_unknown_dtype_option_is_rejected(tmp_path) -> None:
    X, y = iris()
    with pytest.raises(ValueError, match="dtype must be one of"):
        LinearRegression().fit(X, y).save_safetensors(tmp_path / "x.safetensors", dtype="int8")


# -- foreign files ------------------------------------------------------------------


def test_load_tensors_reads_any_file(tmp_path) -> None:
    path = tmp_path / "foreign.safetensors"
    arrays = {
        "f64": np.arange(3, dtype=np.float64),
        "f32": np.arange(4, dtype=np.float32).reshape(2, 2),
        "f16": np.array([1.5, -2.0], dtype=np.float16),
        "i64": np.array([1, -2], dtype=np.int64),
        "i32": np.array([7], dtype=np.int32),
        "i8": np.array([-1, 1], dtype=np.int8),
        "u8": np.array([255], dtype=np.uint8),
        "bool": np.array([True, False]),
    }
    official.save_file(arrays, str(path))
    loaded = safetensors.load_tensors(path)
    assert loaded.keys() == arrays.keys()
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype and np.array_equal(loaded[name], array)
    widened = safetensors.load_tensors(path, as_float32=True)
    assert widened["f16"].dtype == np.float32 and np.array_equal(widened["f16"], [1.5, -2.0])
    assert widened["f64"].dtype == np.float64 and widened["i8"].dtype == np.int8


def test_load_tensors_widens_bf16(tmp_path) -> None:
    path = tmp_path / "bf16.safetensors"
    values = np.array([1.0, -0.5, 3.0], dtype=np.float32)
    bf16 = values.astype(ml_dtypes.bfloat16)
    from safetensors import TensorSpec, serialize_file

    serialize_file({"w": TensorSpec(dtype="bfloat16", shape=[3], data_ptr=bf16.ctypes.data, data_len=bf16.nbytes)},
                   str(path))
    assert safetensors.load_tensors(path)["w"].dtype == ml_dtypes.bfloat16
    widened = safetensors.load_tensors(path, as_float32=True)["w"]
    assert widened.dtype == np.float32 and np.array_equal(widened, values)


def test_foreign_file_is_not_a_model(tmp_path) -> None:
    path = tmp_path / "foreign.safetensors"
    official.save_file({"w": np.ones(2)}, str(path))
    with pytest.raises(aprender.exceptions.FormatError, match="not an aprender model file"):
        aprender.load(path)


def test_sibling_linear_models_are_not_interchangeable(tmp_path) -> None:
    from aprender.linear_model import Lasso, Ridge

    X, y = diabetes()
    path = tmp_path / "ridge.safetensors"
    Ridge().fit(X, y).save_safetensors(path)
    with pytest.raises(ModelTypeMismatch, match="file contains Ridge, expected Lasso"):
        Lasso.load_safetensors(path)
