"""GGML block quantization of a ModelState: exact blocks, error bounds, what gets quantized."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf import quants as ggml_quants
from zoo import iris, outputs

from aprender.cluster import KMeans
from aprender.codec import from_state, to_state
from aprender.codec._registry import entry_for_key
from aprender.exceptions import FormatError
from aprender.format.quantize import (
    BLOCK_SIZE,
    QTYPES,
    TYPE_SIZES,
    block_shape,
    dequantize,
    ggml_type,
    is_quantized,
    quantizable_tensors,
    quantize,
)
from aprender.linear_model import LinearRegression
from aprender.preprocessing import StandardScaler

GGML = {"q8_0": GGMLQuantizationType.Q8_0, "q4_0": GGMLQuantizationType.Q4_0, "q4_1": GGMLQuantizationType.Q4_1}


def _wide(n_features: int, n_targets: int = 3, seed: int = 0) -> LinearRegression:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_features + 20, n_features))
    return LinearRegression().fit(X, rng.normal(size=(n_features + 20, n_targets)))


@pytest.mark.parametrize("qtype", QTYPES)
@pytest.mark.parametrize("width", [64, 45])
def test_blocks_are_byte_equal_to_gguf_quants(qtype: str, width: int) -> None:
    coef = _wide(width).coef_
    blocks = quantize(to_state(_wide(width)), qtype).tensors["coefficients"]
    padded = np.pad(coef.astype(np.float32), [(0, 0), (0, -width % BLOCK_SIZE)], mode="edge")
    reference = ggml_quants.quantize(padded, GGML[qtype])
    assert blocks.dtype == np.uint8 and blocks.shape == block_shape(coef.shape, qtype)
    assert blocks.tobytes() == reference.tobytes()
    assert ggml_type(qtype) is GGML[qtype]


def test_block_sizes_are_ggml_standard() -> None:
    assert TYPE_SIZES == {"q8_0": 34, "q4_0": 18, "q4_1": 20}
    assert block_shape((2, 33), "q8_0") == (2, 68)
    assert block_shape((32,), "Q4_1") == (20,)


def _blockwise(values: np.ndarray) -> np.ndarray:
    pad = -values.shape[-1] % BLOCK_SIZE
    return np.pad(values, [(0, 0), (0, pad)], mode="edge").reshape(-1, BLOCK_SIZE)


@pytest.mark.parametrize(
    ("qtype", "step"),
    [
        ("q8_0", lambda b: np.abs(b).max(axis=1) / 127),
        ("q4_0", lambda b: np.abs(b).max(axis=1) / 8),
        ("q4_1", lambda b: (b.max(axis=1) - b.min(axis=1)) / 15),
    ],
)
def test_dequantized_error_within_one_step_per_block(qtype, step) -> None:
    model = _wide(200, n_targets=4, seed=1)
    restored = dequantize(quantize(to_state(model), qtype)).tensors["coefficients"]
    assert restored.dtype == np.float32 and restored.shape == model.coef_.shape
    err = _blockwise(np.abs(restored - model.coef_))
    bound = step(_blockwise(model.coef_))
    assert (err.max(axis=1) <= bound * 1.001 + 1e-12).all()
    if qtype == "q8_0":  # most values are far better than one step
        assert np.median(err / bound[:, None]) < 0.3


def test_zero_block_dequantizes_to_zero() -> None:
    model = _wide(64, seed=2)
    model.coef_[:, :32] = 0.0
    restored = dequantize(quantize(to_state(model), "q8_0")).tensors["coefficients"]
    assert (restored[:, :32] == 0).all()


def _declared(node, out: set[str]) -> set[str]:
    """Tensor names reachable from attributes that a Spec lists as quantizable."""
    if isinstance(node, list):
        for item in node:
            _declared(item, out)
    elif isinstance(node, dict):
        if node.get("__t__") == "estimator":
            spec = entry_for_key(node["class"]).spec
            for attr, value in node["attrs"].items():
                if attr in spec.quantizable:
                    out.update(_names(value))
        for value in node.values():
            _declared(value, out)
    return out


def _names(node) -> set[str]:
    if isinstance(node, dict) and node.get("__t__") == "tensor":
        return {node["name"]}
    values = node if isinstance(node, list) else node.values() if isinstance(node, dict) else []
    return set().union(*(_names(v) for v in values)) if values else set()


#: Structural arrays that must never be quantized, whatever a Spec says.
STRUCTURAL = {"threshold", "feature", "children_left", "children_right", "n_node_samples", "indices", "indptr"}


def test_only_declared_quantizable_tensors_change(case) -> None:
    model, X = case.make()
    state = to_state(model)
    names = quantizable_tensors(state)
    assert set(names) <= _declared(state.meta["model"], set())
    assert not {name.rsplit(".", 1)[-1] for name in names} & STRUCTURAL
    if not names:
        with pytest.warns(UserWarning, match="no quantizable tensors"):
            assert quantize(state, "q8_0") is state
        return
    for qtype in QTYPES:
        quantized = quantize(state, qtype)
        assert is_quantized(quantized) and not is_quantized(state)
        assert sorted(quantized.meta["quantization"]["tensors"]) == names
        for name, array in state.tensors.items():
            if name in names:
                assert array.dtype.kind == "f" and quantized.tensors[name].dtype == np.uint8
                assert quantized.tensors[name].shape == block_shape(array.shape, qtype)
            else:
                assert quantized.tensors[name] is array
        assert "quantization" not in state.meta  # the input state is left alone
        # The dequantized model works: same inference methods, shapes and dtypes.
        restored = dequantize(quantized)
        assert all(restored.tensors[name].dtype == np.float32 for name in names)
        loaded = from_state(restored)
        expected, actual = outputs(model, X), outputs(loaded, X)
        assert expected.keys() == actual.keys()
        for method, value in expected.items():
            a = np.asarray(value[0] if isinstance(value, tuple) else value)
            b = np.asarray(actual[method][0] if isinstance(actual[method], tuple) else actual[method])
            assert a.shape == b.shape and a.dtype == b.dtype, method


def test_linear_quantizes_coefficients_never_intercept() -> None:
    state = to_state(_wide(40))
    assert quantizable_tensors(state) == ["coefficients"]
    assert quantize(state, "q4_0").tensors["intercept"].dtype == np.float64


def test_kmeans_q8_0_keeps_float64_centers_and_labels() -> None:
    X, _ = iris()
    km = KMeans(n_clusters=3, n_init=2, random_state=0).fit(X)
    loaded = from_state(dequantize(quantize(to_state(km), "q8_0")))
    assert loaded.cluster_centers_.dtype == np.float64
    np.testing.assert_allclose(loaded.cluster_centers_, km.cluster_centers_, atol=km.cluster_centers_.max() / 127)
    assert (loaded.predict(X) == km.predict(X)).mean() > 0.98


@pytest.mark.parametrize(("cast", "expected"), [("float16", np.float64), ("float32", np.float64)])
def test_quantizing_a_downcast_state_restores_the_original_dtype(cast: str, expected: type) -> None:
    model = _wide(40)
    state = quantize(to_state(model, dtype=cast), "q8_0")
    assert state.meta["quantization"]["tensors"]["coefficients"]["dtype"] == cast
    assert from_state(dequantize(state)).coef_.dtype == expected


def test_float32_model_stays_float32() -> None:
    model = _wide(40)
    model.coef_ = model.coef_.astype(np.float32)
    loaded = from_state(dequantize(quantize(to_state(model), "q4_1")))
    assert loaded.coef_.dtype == np.float32
    model.coef_ = model.coef_.astype(np.float16)
    assert from_state(dequantize(quantize(to_state(model), "q4_1"))).coef_.dtype == np.float16


def test_fortran_ordered_weights_keep_their_order() -> None:
    model = _wide(40)
    model.coef_ = np.asfortranarray(model.coef_)
    loaded = from_state(dequantize(quantize(to_state(model), "q8_0")))
    assert loaded.coef_.flags.f_contiguous and loaded.coef_.shape == (3, 40)


def test_bad_arguments() -> None:
    state = to_state(_wide(40))
    with pytest.raises(ValueError, match="quantize must be one of q8_0, q4_0, q4_1; got 'q5_0'"):
        quantize(state, "q5_0")
    with pytest.raises(ValueError, match="already quantized"):
        quantize(quantize(state, "q8_0"), "q8_0")
    model = _wide(40)
    model.coef_[0, 3] = np.nan
    with pytest.raises(ValueError, match="tensor 'coefficients' has non-finite values"):
        quantize(to_state(model), "q8_0")


def test_scaler_has_nothing_to_quantize() -> None:
    state = to_state(StandardScaler().fit(iris()[0]))
    with pytest.warns(UserWarning, match="StandardScaler has no quantizable tensors"):
        assert not is_quantized(quantize(state, "q4_0"))


def _tampered(edit) -> Exception:
    state = quantize(to_state(_wide(40)), "q8_0")
    edit(state.tensors, state.meta["quantization"])
    with pytest.raises(FormatError) as info:
        dequantize(state)
    return info.value


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t, q: q.update(type="q2_k"), "unknown quantization type 'q2_k'"),
        (lambda t, q: q.update(tensors=[]), "'quantization' metadata must be an object"),
        (lambda t, q: q["tensors"]["coefficients"].update(shape=[3, 70]), "uint8 of shape [3, 102]"),
        (lambda t, q: q["tensors"]["coefficients"].update(shape=[3, 0]), "invalid dimension 0 in shape"),
        (lambda t, q: q["tensors"]["coefficients"].update(shape="x"), "must be a list of 1 to 32 dimensions, found x"),
        (lambda t, q: q["tensors"]["coefficients"].update(dtype="int64"), "invalid original dtype 'int64'"),
        (lambda t, q: q["tensors"].update(ghost={"shape": [1], "dtype": "float32"}), "'ghost' is missing"),
        (lambda t, q: t.update(coefficients=t["coefficients"].view(np.int8)), "found int8 of shape [3, 68]"),
        (lambda t, q: t.update(coefficients=t["coefficients"][:, :34]), "found uint8 of shape [3, 34]"),
        (lambda t, q: (t.update(ghost=np.zeros(34, np.uint8)),
                       q["tensors"].update(ghost={"shape": [32], "dtype": "float32"})), "'ghost' is not referenced"),
    ],
)
def test_dequantize_rejects_inconsistent_records(edit, message: str) -> None:
    assert message in str(_tampered(edit))
