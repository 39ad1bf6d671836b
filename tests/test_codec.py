"""The codec: estimator <-> ModelState, value handlers, allow-list, properties."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.base import BaseEstimator, RegressorMixin
from zoo import diabetes

import aprender
from aprender.base import SerializableMixin
from aprender.codec import ModelType, from_state, to_state
from aprender.exceptions import FormatError, UnsupportedTypeError
from aprender.format import safetensors
from aprender.linear_model import LinearRegression, Ridge
from aprender.preprocessing import StandardScaler


class Bag(SerializableMixin, RegressorMixin, BaseEstimator):
    """A user estimator whose fitted attributes exercise every value kind."""

    def __init__(self, option=None, scale=1.0):
        self.option = option
        self.scale = scale

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        self.payload_ = None
        return self

    def predict(self, X):
        return np.asarray(X).sum(axis=1) * self.scale


aprender.register_estimator(Bag, key="tests.Bag", model_type=ModelType.CUSTOM)


def _roundtrip(model):
    return safetensors.loads(safetensors.dumps(model))


def test_user_class_registration_and_duplicate_is_error() -> None:
    loaded = _roundtrip(Bag(scale=2.0).fit([[1.0, 2.0]]))
    assert type(loaded) is Bag and loaded.scale == 2.0
    assert np.array_equal(loaded.predict([[1.0, 2.0]]), [6.0])
    with pytest.raises(ValueError, match="already registered"):
        aprender.register_estimator(Bag)


@pytest.mark.parametrize(
    "payload",
    [
        {"a": (1, 2.5, "x"), 3: [None, True], (1, "k"): {"nested": [1, 2]}},
        [math.nan, math.inf, -math.inf, -0.0, 1e-310],
        (np.float32(1.5), np.int16(-3), np.uint64(2**64 - 1), np.bool_(True), np.float64("nan")),
        np.array(["alpha", "be", ""]),
        np.array([["a", 1], [None, 2.5]], dtype=object),
        np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        np.arange(24, dtype=np.int32).reshape(2, 3, 4)[:, ::2],
        np.array([], dtype=np.float64).reshape(0, 3),
        np.array(2.5),
        np.arange(6, dtype=">f8"),
        (np.float64, float, int, bool, str, np.int32),
        sp.csr_matrix(np.array([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]])),
        sp.csc_array(np.array([[0, 3], [4, 0]], dtype=np.int64)),
        np.random.RandomState(7),
    ],
    ids=["containers", "floats", "numpy-scalars", "strings", "objects", "fortran", "strided", "empty", "0-d",
         "big-endian", "types", "csr", "csc-array", "random-state"],
)
def test_values_roundtrip_exactly(payload) -> None:
    model = Bag(option=payload).fit([[1.0]])
    model.payload_ = payload
    loaded = _roundtrip(model)
    for got in (loaded.option, loaded.payload_):
        _assert_same(payload, got)


def _assert_same(expected, actual) -> None:
    assert type(actual) is type(expected), (type(expected), type(actual))
    if isinstance(expected, np.random.RandomState):
        (_, keys_a, *rest_a), (_, keys_b, *rest_b) = expected.get_state(), actual.get_state()
        assert np.array_equal(keys_a, keys_b) and rest_a == rest_b
    elif sp.issparse(expected):
        assert (expected != actual).nnz == 0 and expected.dtype == actual.dtype
    elif isinstance(expected, np.ndarray):
        assert expected.dtype.newbyteorder("=") == actual.dtype.newbyteorder("=") and expected.shape == actual.shape
        assert expected.flags.f_contiguous == actual.flags.f_contiguous or expected.ndim < 2
        if expected.dtype.kind == "O":
            assert expected.tolist() == actual.tolist()
        else:
            assert np.array_equal(expected, actual)
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual)
        for a, b in zip(expected, actual, strict=True):
            _assert_same(a, b)
    elif isinstance(expected, dict):
        assert list(expected) == list(actual)
        for key in expected:
            _assert_same(expected[key], actual[key])
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual)
    elif isinstance(expected, float):
        assert math.copysign(1, expected) == math.copysign(1, actual) and expected == actual
    else:
        assert expected == actual or (expected is actual)


@pytest.mark.parametrize(
    ("payload", "path", "type_name"),
    [
        (lambda x: x, "payload_", "function"),
        ({"ok": [1, {object()}]}, "payload_.ok.1.0", "builtins.object"),  # inside a set
        (np.array([1 + 2j]), "payload_", "complex128"),
        (sp.lil_matrix(np.eye(2)), "payload_", "lil_matrix"),
        (object(), "payload_", "builtins.object"),
    ],
)
def test_unknown_types_are_refused_with_their_path(payload, path, type_name) -> None:
    model = Bag().fit([[1.0]])
    model.payload_ = payload
    with pytest.raises(UnsupportedTypeError) as info:
        to_state(model)
    assert f"'{path}'" in str(info.value) and type_name in str(info.value)


def test_unregistered_estimator_is_refused() -> None:
    class Unlisted(Bag):
        pass

    with pytest.raises(UnsupportedTypeError, match="not registered"):
        to_state(Unlisted().fit([[1.0]]))


def test_nested_estimators_are_prefixed() -> None:
    model = Bag().fit([[1.0]])
    X, y = diabetes()
    model.payload_ = [("scaler", StandardScaler().fit(X)), ("ridge", Ridge().fit(X, y))]
    state = to_state(model)
    assert {"payload_.0.scaler.mean_", "payload_.1.ridge.coefficients"} <= set(state.tensors)
    loaded = from_state(state)
    assert np.array_equal(loaded.payload_[1][1].predict(X), model.payload_[1][1].predict(X))


def test_corrupt_sparse_indices_are_rejected() -> None:
    model = Bag().fit([[1.0]])
    model.payload_ = sp.csr_matrix(np.eye(3))
    state = to_state(model)
    state.tensors["payload_.indices"][:] = [0, 5, 2]
    with pytest.raises(FormatError, match=r"sparse indices must lie in \[0, 3\)"):
        from_state(state)
    state.tensors["payload_.indices"][:] = [0, 1, 2]
    state.tensors["payload_.indptr"][:] = [0, 2, 1, 3]
    with pytest.raises(FormatError, match="never decrease"):
        from_state(state)


@settings(max_examples=40, deadline=None)
@given(
    data=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=12),
                    elements=st.floats(-1e6, 1e6, allow_nan=False)),
    fit_intercept=st.booleans(),
)
def test_property_random_linear_models_roundtrip(data, fit_intercept) -> None:
    X, y = data[:, :-1], data[:, -1]
    model = LinearRegression(fit_intercept=fit_intercept).fit(X, y)
    loaded = safetensors.loads(safetensors.dumps(model))
    assert np.array_equal(loaded.predict(X), model.predict(X), equal_nan=True)
    assert type(loaded.intercept_) is type(model.intercept_)


def test_the_saving_machines_thread_count_is_never_stored() -> None:
    from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

    from aprender.cluster import KMeans

    X = np.array([[0.0], [0.1], [5.0], [5.1]])
    one, two = (KMeans(n_clusters=2, n_init=1, random_state=0).fit(X) for _ in range(2))
    one._n_threads, two._n_threads = 1, 7  # as fitted on a 1-core and a 7-core machine
    assert safetensors.dumps(one) == safetensors.dumps(two)
    assert to_state(one).meta["model"]["attrs"]["_n_threads"] == {"__t__": "n_threads"}
    assert safetensors.loads(safetensors.dumps(two))._n_threads == _openmp_effective_n_threads()


def test_an_n_threads_node_elsewhere_is_refused() -> None:
    from aprender.codec._decode import Decoder
    from aprender.exceptions import FormatError

    with pytest.raises(FormatError, match="may only stand for a '_n_threads' attribute"):
        Decoder({}).value({"__t__": "n_threads"}, "model.n_init", 1)


_JSON_EDGES = [
    b'{"a":[1,2,{"b":null}],"c":"\\u00e9\\ud83d\\ude00"}', b"-0", b"0.1", b"1e-400", b"5e-324",
    b"[1.7976931348623157e308]",
    b"123456789012345678", b"9223372036854775807", b"18446744073709551615", b"18446744073709551616",
    b"-9223372036854775809", b"[1e400]", b"NaN", b"-Infinity", b"01", b"1.e5", b"[1,]", b"", b"1 2",
    b'"a\tb"', b'"\\ud800"', '{"\ud800":1}'.encode("utf-8", "surrogatepass"), "\ufeff{}".encode(),
    "{}".encode("utf-16"), b'"\xff"', b"[" * 1030 + b"]" * 1030, b'{"a":1,"a":2}', b'  {"a" : 1 }\r\n',
]


@pytest.mark.parametrize("data", _JSON_EDGES, ids=range(len(_JSON_EDGES)))
def test_parse_json_gives_the_standard_librarys_values_and_verdicts(data: bytes, monkeypatch) -> None:
    """orjson (the fast extra) parses where it agrees with json; the rest, such as an integer
    past uint64 that orjson would make a float, goes to json: the same values, errors and messages."""
    from aprender.codec import _state

    pytest.importorskip("orjson")

    def parsed(text: str | bytes) -> tuple[str, str]:
        try:
            return "value", repr(_state.parse_json(text, "x"))
        except FormatError as exc:
            return "error", str(exc)

    texts = [data]
    with contextlib.suppress(UnicodeDecodeError):
        texts.append(data.decode("utf-8", "surrogatepass"))
    fast = [parsed(t) for t in texts]
    monkeypatch.setattr(_state, "_orjson", None)
    assert fast == [parsed(t) for t in texts]



@pytest.mark.parametrize("dtype", [np.float64, np.int8])
def test_large_fortran_matrices_are_copied_in_tiles_to_the_same_bytes(dtype, monkeypatch) -> None:
    # Above TILED_COPY_BYTES an F-ordered matrix is copied tile by tile: shapes that are not
    # multiples of the tile, both ways round, must give the bytes numpy's own copy gives.
    from aprender.codec import _encode

    monkeypatch.setattr(_encode, "TILED_COPY_BYTES", 0)
    rng = np.random.default_rng(3)
    for shape in [(3, 2), (257, 3), (5, 700), (300, 513)]:
        matrix = np.asfortranarray((rng.standard_normal(shape) * 50).astype(dtype))
        enc = _encode.Encoder()
        node = enc.tensor(matrix, "m")
        assert node["order"] == "F"
        assert enc.tensors["m"].flags.c_contiguous
        assert enc.tensors["m"].tobytes() == np.ascontiguousarray(matrix).tobytes()
    model = Bag(option=None).fit([[1.0]])
    model.payload_ = matrix
    _assert_same(matrix, _roundtrip(model).payload_)


def test_cached_parameter_names_are_what_get_params_returns() -> None:
    """The encoder reads the names of a class's parameters once; for every registered class whose
    get_params it trusts (scikit-learn's own, and its composites' with deep=False), they are the
    names get_params gives, in its order. A subclass overriding get_params is asked every time."""
    from sklearn_instances import instances

    from aprender.codec._encode import _param_names, _params_are_init_names
    from aprender.pipeline import Pipeline

    checked = set()
    for est in instances().values():
        if _params_are_init_names(type(est)):
            assert list(_param_names(est)) == list(est.get_params(deep=False)), type(est).__name__
            checked.add(type(est).__name__)
    assert {"Pipeline", "ColumnTransformer", "FeatureUnion", "StackingClassifier", "VotingRegressor"} <= checked

    class Tagged(Pipeline):
        def get_params(self, deep=True):
            return {**super().get_params(deep=deep), "tag": 1}

    assert _params_are_init_names(Pipeline)  # aprender's namesake inherits scikit-learn's get_params
    assert not _params_are_init_names(Tagged)
    assert "tag" in _param_names(Tagged([("scaler", StandardScaler())]))


@pytest.mark.parametrize("cls", ["DummyClassifier", "DummyRegressor"])
def test_dummy_estimators_are_their_own_model_type(cls, tmp_path) -> None:
    """A dummy reports DUMMY; a file from before that code (stating GRADIENT_BOOSTING) still loads."""
    from sklearn import dummy

    from aprender.codec import ModelState
    from aprender.exceptions import ModelTypeMismatch

    X, y = diabetes()
    model = getattr(dummy, cls)().fit(X[:40], (y[:40] > 140).astype(int))
    state = to_state(model)
    assert state.model_type is ModelType.DUMMY
    old = tmp_path / "old.safetensors"
    old.write_bytes(safetensors.state_to_bytes(ModelState(state.tensors, {**state.meta, "model_type": 0x0005})))
    assert aprender.inspect(old).model_type is ModelType.GRADIENT_BOOSTING  # what the file says
    loaded = aprender.load(old, ModelType.DUMMY)
    np.testing.assert_array_equal(loaded.predict(X[:5]), model.predict(X[:5]))
    with pytest.raises(ModelTypeMismatch, match="expected GRADIENT_BOOSTING"):
        aprender.load(old, ModelType.GRADIENT_BOOSTING)
