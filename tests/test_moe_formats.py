"""A mixture of experts is one bundled file in every format: SafeTensors, .apr, GGUF, ONNX.

Experts' tensors live under ``experts.{i}.``, the gate's under ``gating.``; loading
checks that the expert count, the gate's shape and ``top_k`` agree (FormatError
otherwise); every non-quantized roundtrip predicts bit-identically.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from state_edit import find, hostile
from zoo import assert_identical_outputs

import aprender
from aprender.codec import ModelType, to_state
from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor, SoftmaxGating
from aprender.exceptions import (
    KeyRequired,
    ModelTypeMismatch,
    SignatureInvalid,
    UnsupportedExportError,
    UnsupportedTypeError,
)
from aprender.format import gguf
from aprender.format.apr import _crypto as crypto
from aprender.format.onnx import input_feed
from aprender.format.quantize import quantizable_tensors
from aprender.format.safetensors import load_tensors
from aprender.linear_model import LinearRegression, Ridge
from aprender.preprocessing import StandardScaler

SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _regimes(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.c_[rng.uniform(-4, 4, n), rng.uniform(-1, 1, n)]
    y = np.abs(X[:, 0]) * 2 + X[:, 1] + rng.normal(0, 0.1, n)
    return X, y


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return _regimes()


@pytest.fixture(scope="module")
def regressor(data) -> MixtureOfExpertsRegressor:
    X, y = data
    experts = [LinearRegression(), Ridge(alpha=0.5), LinearRegression()]
    return MixtureOfExpertsRegressor(experts, top_k=2, tol=1e-2, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def classifier() -> tuple[MixtureOfExpertsClassifier, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    return MixtureOfExpertsClassifier(n_experts=3, top_k=2, tol=1e-2, random_state=0).fit(X, labels), X


@pytest.fixture
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    # The cost is recorded in the file and read back, so a cheaper cost runs the same code.
    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)


def _assert_same(a, b, X) -> None:
    assert_identical_outputs(a, b, X)
    for method in ("routing_weights", "expert_usage"):
        assert np.array_equal(getattr(a, method)(X), getattr(b, method)(X))
    assert a.load_balance_loss(X) == b.load_balance_loss(X)


# -- SafeTensors ------------------------------------------------------------------------


def test_one_safetensors_file_with_expert_and_gate_prefixes(regressor, data, tmp_path) -> None:
    X, _ = data
    path = tmp_path / "moe.safetensors"
    regressor.save_safetensors(path)
    tensors = load_tensors(path)
    assert {"experts.0.coefficients", "experts.1.coefficients", "experts.2.coefficients",
            "experts.0.intercept", "gating.weights", "gating.bias", "noise_variance_"} <= set(tensors)
    assert all(name.startswith(("experts.0.", "experts.1.", "experts.2.", "gating.")) or name == "noise_variance_"
               for name in tensors)
    assert tensors["gating.weights"].shape == (2, 3) and tensors["gating.bias"].shape == (3,)
    np.testing.assert_array_equal(tensors["experts.1.coefficients"], regressor.experts_[1].coef_)
    loaded = MixtureOfExpertsRegressor.load_safetensors(path)
    assert type(loaded.experts_[1]) is Ridge and type(loaded.gating_) is SoftmaxGating
    _assert_same(regressor, loaded, X)
    assert loaded.loss_curve_ == regressor.loss_curve_ and loaded.n_iter_ == regressor.n_iter_
    again = tmp_path / "again.safetensors"
    regressor.save_safetensors(again)
    assert again.read_bytes() == path.read_bytes()


def test_classifier_with_string_labels_roundtrips(classifier, tmp_path) -> None:
    clf, X = classifier
    path = tmp_path / "clf.safetensors"
    aprender.save(clf, path)
    assert {"experts.0.classes_", "experts.2.coefficients", "gating.weights"} <= set(load_tensors(path))
    loaded = aprender.load(path, MixtureOfExpertsClassifier)
    _assert_same(clf, loaded, X)
    assert loaded.classes_.tolist() == ["setosa", "versicolor", "virginica"]


def test_loading_checks_the_kind_of_model(regressor, tmp_path) -> None:
    path = tmp_path / "moe.safetensors"
    aprender.save(regressor, path)
    assert type(aprender.load(path, ModelType.MIXTURE_OF_EXPERTS)) is MixtureOfExpertsRegressor
    with pytest.raises(ModelTypeMismatch, match="expected MixtureOfExpertsClassifier"):
        aprender.load(path, MixtureOfExpertsClassifier)


def test_mixture_inside_a_pipeline_roundtrips(data, tmp_path) -> None:
    X, y = data
    pipe = make_pipeline(StandardScaler(), MixtureOfExpertsRegressor(n_experts=2, tol=1e-2, random_state=0)).fit(X, y)
    path = tmp_path / "pipe.safetensors"
    aprender.save(pipe, path)
    assert "steps.1.mixtureofexpertsregressor.experts.1.coefficients" in load_tensors(path)
    assert np.array_equal(aprender.load(path).predict(X), pipe.predict(X))


def test_fitted_hyperparameter_experts_collide_with_the_fitted_ones(data) -> None:
    # The experts hyperparameter is stored too; pre-fitted estimators there would need the
    # same tensor names as the fitted experts_, which the codec refuses by name.
    X, y = data
    prefitted = [LinearRegression().fit(X, y), LinearRegression().fit(X, y)]
    moe = MixtureOfExpertsRegressor(prefitted, tol=1e-2, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedTypeError, match=r"experts\.0\.coefficients"):
        to_state(moe)


# -- .apr -------------------------------------------------------------------------------


def test_apr_records_type_0x0040(regressor, data, tmp_path) -> None:
    X, _ = data
    path = tmp_path / "moe.apr"
    regressor.save_apr(path)
    info = aprender.inspect(path)
    assert info.model_type == ModelType.MIXTURE_OF_EXPERTS == 0x0040
    assert info.class_key == "aprender.ensemble.MixtureOfExpertsRegressor"
    assert {t.name for t in info.tensors} == set(to_state(regressor).tensors)
    _assert_same(regressor, MixtureOfExpertsRegressor.load_apr(path), X)


def test_apr_signed_and_encrypted(classifier, tmp_path, cheap_argon2) -> None:
    clf, X = classifier
    path = tmp_path / "clf.apr"
    clf.save_apr(path, signing_key=SIGNING_KEY, password="experts", compression="zstd")
    info = aprender.inspect(path)
    assert info.signed and info.encrypted and info.model_type == ModelType.MIXTURE_OF_EXPERTS
    loaded = MixtureOfExpertsClassifier.load_apr(path, password="experts", verifying_key=SIGNING_KEY.public_key())
    _assert_same(clf, loaded, X)
    with pytest.raises(KeyRequired):
        MixtureOfExpertsClassifier.load_apr(path)
    other = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33))).public_key()
    with pytest.raises(SignatureInvalid):
        MixtureOfExpertsClassifier.load_apr(path, password="experts", verifying_key=other)


# -- GGUF ------------------------------------------------------------------------------


def test_gguf_roundtrip_is_bit_identical(regressor, data, tmp_path) -> None:
    X, _ = data
    path = tmp_path / "moe.gguf"
    regressor.save_gguf(path)
    _assert_same(regressor, MixtureOfExpertsRegressor.load_gguf(path), X)


def test_gating_and_expert_weights_are_quantizable(regressor, data, tmp_path) -> None:
    X, _ = data
    assert quantizable_tensors(to_state(regressor)) == [
        "experts.0.coefficients", "experts.1.coefficients", "experts.2.coefficients", "gating.weights",
    ]
    path = tmp_path / "q8.gguf"
    regressor.save_gguf(path, quantize="q8_0")
    info = gguf.inspect_file(path)
    assert {t.name for t in info.tensors if t.quantization} == set(quantizable_tensors(to_state(regressor)))
    loaded = MixtureOfExpertsRegressor.load_gguf(path)
    np.testing.assert_allclose(loaded.predict(X), regressor.predict(X), rtol=0.02, atol=0.05)


# -- ONNX ------------------------------------------------------------------------------


def _run(onx, X) -> list[np.ndarray]:
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, input_feed(onx, X))


def test_onnx_gate_is_matmul_add_softmax_topk(regressor, data) -> None:
    X, _ = data
    onx = regressor.to_onnx()
    ops = [node.op_type for node in onx.graph.node]
    for op in ("MatMul", "Add", "Softmax", "TopK", "ReduceSum", "ScatterElements"):
        assert op in ops
    assert ops.count("LinearRegressor") == 3  # every expert's own graph is embedded
    (out,) = _run(onx, X)
    assert out.shape == (len(X), 1)
    np.testing.assert_allclose(out.ravel(), regressor.predict(X), rtol=1e-4, atol=1e-4)


def test_onnx_float64_matches_closely(regressor, data) -> None:
    X, _ = data
    (out,) = _run(regressor.to_onnx(dtype=np.float64), X)
    np.testing.assert_allclose(out.ravel(), regressor.predict(X), rtol=1e-10, atol=1e-12)


def test_onnx_classifier_outputs_labels_and_probabilities(classifier, tmp_path) -> None:
    clf, X = classifier
    path = tmp_path / "clf.onnx"
    clf.save_onnx(path)
    onx = clf.to_onnx()
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    label, proba = _run(onx, X)
    assert label.tolist() == clf.predict(X).tolist()
    np.testing.assert_allclose(proba, clf.predict_proba(X), rtol=1e-4, atol=1e-5)
    assert path.read_bytes() == onx.SerializeToString()


def test_onnx_top_k_equal_to_all_experts(data) -> None:
    X, y = data
    moe = MixtureOfExpertsRegressor(n_experts=3, top_k=3, tol=1e-2, random_state=0).fit(X, y)
    (out,) = _run(moe.to_onnx(), X)
    np.testing.assert_allclose(out.ravel(), moe.predict(X), rtol=1e-4, atol=1e-4)


def test_onnx_refuses_capacity_with_the_reason(data) -> None:
    X, y = data
    moe = MixtureOfExpertsRegressor(n_experts=2, capacity_factor=1.25, tol=1e-2, random_state=0).fit(X, y)
    with pytest.raises(UnsupportedExportError, match=r"capacity_factor=1.25 cannot be exported.*other rows"):
        moe.to_onnx()


# -- validation on load ------------------------------------------------------------------


def _mixture(meta: dict) -> dict:
    return meta["model"]


def test_top_k_beyond_the_experts_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        _mixture(meta)["params"]["top_k"] = 4
    assert "top_k=4 must lie in [1, 3] for 3 experts" in str(hostile(regressor, edit, tmp_path))


def test_missing_expert_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        _mixture(meta)["attrs"]["experts_"].pop()
        for name in [n for n in tensors if n.startswith("experts.2.")]:
            del tensors[name]
    assert "lists 3 estimators, 2 are fitted" in str(hostile(regressor, edit, tmp_path))


def test_n_experts_disagreeing_with_the_experts_is_a_format_error(data, tmp_path) -> None:
    X, y = data
    moe = MixtureOfExpertsRegressor(n_experts=2, tol=1e-2, random_state=0).fit(X, y)

    def edit(meta, tensors):
        _mixture(meta)["params"]["n_experts"] = 5
    assert "n_experts=5 but 2 experts are fitted" in str(hostile(moe, edit, tmp_path))


def test_gate_shape_disagreeing_with_the_experts_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        # a self-consistent two-expert gate in a three-expert mixture
        tensors["gating.weights"] = np.ascontiguousarray(tensors["gating.weights"][:, :2])
        tensors["gating.bias"] = np.ascontiguousarray(tensors["gating.bias"][:2])
        tensors["gating.classes_"] = np.ascontiguousarray(tensors["gating.classes_"][:2])
    assert "gate weights have shape (2, 2); 2 features and 3 experts need (2, 3)" in str(
        hostile(regressor, edit, tmp_path))


def test_gate_weights_disagreeing_with_its_classes_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        tensors["gating.weights"] = np.zeros((2, 4))
    assert "'weights_' has shape (2, 4); axis 1 must be 3" in str(hostile(regressor, edit, tmp_path))


def test_gate_of_another_kind_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        gate = find(meta, "SoftmaxGating")
        gate["class"] = "aprender.linear_model.LinearRegression"
        gate["params"] = {}
        gate["attrs"] = {"n_features_in_": 2, "coef_": gate["attrs"]["weights_"], "intercept_": gate["attrs"]["bias_"]}
        tensors["gating.weights"] = np.ascontiguousarray(tensors["gating.weights"].T)  # LinearRegression's layout
        del tensors["gating.classes_"]
    assert "'gating_' must be a fitted SoftmaxGating, found LinearRegression" in str(hostile(regressor, edit, tmp_path))


def test_unfitted_expert_is_a_format_error(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        _mixture(meta)["attrs"]["experts_"][1]["attrs"] = {}
        for name in [n for n in tensors if n.startswith("experts.1.")]:
            del tensors[name]
    assert "expert Ridge is not fitted" in str(hostile(regressor, edit, tmp_path))


def test_expert_classes_outside_the_mixture_classes_are_a_format_error(classifier, tmp_path) -> None:
    clf, _ = classifier

    def edit(meta, tensors):
        tensors["experts.1.classes_"] = np.array([0, 1, 7])
    assert "classes_ must be increasing class indices in [0, 3)" in str(hostile(clf, edit, tmp_path))


def test_noise_variance_per_expert_is_checked(regressor, tmp_path) -> None:
    def edit(meta, tensors):
        tensors["noise_variance_"] = np.ones(2)
    assert "'noise_variance_' has shape (2,); axis 0 must be 3" in str(hostile(regressor, edit, tmp_path))
