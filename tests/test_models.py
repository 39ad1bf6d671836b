"""PCA, naive Bayes, KNN, SVM, MLP and MiniBatchKMeans: exact roundtrips and stored layout."""

from __future__ import annotations

import copy
import json
import struct
import warnings

import numpy as np
import pytest
import safetensors.numpy as official
from cases_models import CASES, digits, wine
from sklearn import cluster as sk_cluster
from sklearn import decomposition as sk_decomposition
from sklearn import naive_bayes as sk_naive_bayes
from sklearn import neighbors as sk_neighbors
from sklearn import neural_network as sk_neural_network
from sklearn import svm as sk_svm
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from zoo import assert_identical_outputs, diabetes, iris

import aprender
from aprender.cluster import MiniBatchKMeans
from aprender.codec import ModelType, from_state, to_state
from aprender.decomposition import PCA
from aprender.format import safetensors
from aprender.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
from aprender.neighbors import KNeighborsClassifier, KNeighborsRegressor
from aprender.neural_network import MLPClassifier, MLPRegressor
from aprender.svm import SVC, SVR, LinearSVC

#: Also run under the oldest supported scikit-learn (.ci/run, docs/compatibility.md).
pytestmark = pytest.mark.lower_bound

ROUNDTRIPS = {
    "safetensors-bytes": lambda m: safetensors.loads(safetensors.dumps(m)),
    "state": lambda m: from_state(to_state(m)),
}


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*args)


def _header(raw: bytes) -> dict:
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n])


# -- every case, every inference method, bit for bit ----------------------------------


@pytest.mark.parametrize("roundtrip", sorted(ROUNDTRIPS))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_roundtrip_is_bit_identical(case, roundtrip) -> None:
    model, X = case.make()
    loaded = ROUNDTRIPS[roundtrip](model)
    assert type(loaded) is type(model)
    assert loaded.get_params() == model.get_params()
    assert_identical_outputs(model, loaded, X)


def test_extra_inference_methods_are_bit_identical() -> None:
    X, _ = wine()
    pca = PCA(n_components=4).fit(X)
    loaded = safetensors.loads(safetensors.dumps(pca))
    for method in ("inverse_transform", "get_covariance", "get_precision"):
        args = (pca.transform(X),) if method == "inverse_transform" else ()
        assert np.array_equal(getattr(pca, method)(*args), getattr(loaded, method)(*args)), method
    assert pca.score(X) == loaded.score(X)

    nb = GaussianNB().fit(*wine())
    loaded = safetensors.loads(safetensors.dumps(nb))
    assert np.array_equal(nb.predict_joint_log_proba(X), loaded.predict_joint_log_proba(X))

    X, y = iris()
    knn = KNeighborsClassifier(n_neighbors=4, algorithm="ball_tree").fit(X, y)
    loaded = safetensors.loads(safetensors.dumps(knn))
    assert np.array_equal(knn.kneighbors(X, 2, return_distance=False), loaded.kneighbors(X, 2, return_distance=False))
    assert (knn.kneighbors_graph(X, mode="distance") != loaded.kneighbors_graph(X, mode="distance")).nnz == 0

    svc = SVC(kernel="linear").fit(X, y)
    loaded = safetensors.loads(safetensors.dumps(svc))
    assert np.array_equal(svc.coef_, loaded.coef_) and np.array_equal(svc.n_support_, loaded.n_support_)


def test_multioutput_knn_probabilities_are_bit_identical() -> None:
    X, y = iris()
    targets = np.c_[y, X[:, 0] > 5.8]
    knn = KNeighborsClassifier(n_neighbors=3).fit(X, targets)
    loaded = safetensors.loads(safetensors.dumps(knn))
    assert np.array_equal(knn.predict(X), loaded.predict(X))
    for a, b in zip(knn.predict_proba(X), loaded.predict_proba(X), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


# -- plain scikit-learn classes --------------------------------------------------------

PLAIN = [
    (sk_decomposition.PCA(n_components=2), PCA, False, ModelType.PCA),
    (sk_naive_bayes.BernoulliNB(), None, True, ModelType.NAIVE_BAYES),
    (sk_neighbors.KNeighborsRegressor(), KNeighborsRegressor, True, ModelType.KNN),
    (sk_svm.SVR(), None, True, ModelType.SVM),
    (sk_svm.LinearSVC(), LinearSVC, True, ModelType.SVM),
    (sk_neural_network.MLPRegressor(hidden_layer_sizes=(3,), max_iter=20, random_state=0), MLPRegressor, True,
     ModelType.NEURAL_SEQUENTIAL),
    (sk_cluster.MiniBatchKMeans(n_clusters=2, n_init=1, random_state=0), MiniBatchKMeans, False, ModelType.KMEANS),
]


@pytest.mark.parametrize(("model", "twin", "supervised", "model_type"), PLAIN, ids=lambda p: getattr(p, "__name__", ""))
def test_plain_sklearn_models_save_and_load(model, twin, supervised, model_type, tmp_path) -> None:
    X, y = iris()
    model = copy.deepcopy(model)
    _quiet(model.fit, X, y) if supervised else model.fit(X)
    path = tmp_path / "plain.safetensors"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert type(loaded) is type(model)
    assert to_state(model).model_type == model_type
    assert_identical_outputs(model, loaded, X)
    if twin is not None:  # the aprender class accepts its sklearn twin's file
        rebuilt = twin.load_safetensors(path)
        assert type(rebuilt) is twin
        assert_identical_outputs(model, rebuilt, X)


# -- PCA: memory order -----------------------------------------------------------------


def test_pca_components_come_back_fortran_ordered() -> None:
    X, _ = wine()
    pca = PCA(n_components=3).fit(X)
    assert pca.components_.flags.f_contiguous and not pca.components_.flags.c_contiguous
    raw = safetensors.dumps(pca)
    node = json.loads(_header(raw)["__metadata__"]["aprender"])["model"]["attrs"]["components_"]
    assert node == {"__t__": "tensor", "name": "components_", "order": "F"}
    loaded = safetensors.loads(raw)
    assert loaded.components_.flags.f_contiguous and not loaded.components_.flags.c_contiguous
    assert np.array_equal(loaded.transform(X), pca.transform(X))
    # The order matters on this data: a C-ordered copy changes transform in the last bits.
    c_ordered = copy.deepcopy(pca)
    c_ordered.components_ = np.ascontiguousarray(pca.components_)
    assert not np.array_equal(c_ordered.transform(X), pca.transform(X))


def test_pca_randomized_strided_components_come_back_column_major() -> None:
    X, _ = digits()
    pca = PCA(n_components=10, svd_solver="randomized", random_state=0).fit(X)
    # A row slice of an F-ordered matrix: neither C- nor F-contiguous, but column-major.
    assert not pca.components_.flags.c_contiguous and not pca.components_.flags.f_contiguous
    loaded = safetensors.loads(safetensors.dumps(pca))
    assert loaded.components_.flags.f_contiguous
    assert np.array_equal(loaded.transform(X), pca.transform(X))


# -- MLP: the NeuralSequential layout and training state ------------------------------


def test_mlp_layers_are_named_tensors() -> None:
    X, y = wine()
    mlp = _quiet(MLPClassifier(hidden_layer_sizes=(16, 8), max_iter=5, random_state=0).fit, X, y)
    raw = safetensors.dumps(mlp)
    header = _header(raw)
    expected = {"layers.0.weight": [13, 16], "layers.0.bias": [16], "layers.1.weight": [16, 8], "layers.1.bias": [8],
                "layers.2.weight": [8, 3], "layers.2.bias": [3]}
    assert {name: header[name]["shape"] for name in expected} == expected
    assert all(header[name]["dtype"] == "F64" for name in expected)
    assert not any(name.startswith(("coefs_", "intercepts_")) for name in header)
    tensors = official.load(raw)  # the official reader sees the same layers
    for i, (w, b) in enumerate(zip(mlp.coefs_, mlp.intercepts_, strict=True)):
        assert np.array_equal(tensors[f"layers.{i}.weight"], w) and np.array_equal(tensors[f"layers.{i}.bias"], b)
    meta = json.loads(header["__metadata__"]["aprender"])
    assert meta["model_type"] == ModelType.NEURAL_SEQUENTIAL == 0x20
    assert meta["model"]["attrs"]["_label_binarizer"]["__t__"] == "dict"  # rebuilt, not an allow-listed object


def test_mlp_forward_pass_from_tensors_alone() -> None:
    """docs/schema/models.md: h = act(h @ weight + bias), softmax on the last layer."""
    X, y = wine()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    mlp = _quiet(MLPClassifier(hidden_layer_sizes=(8,), max_iter=30, random_state=0).fit, X, y)
    tensors = official.load(safetensors.dumps(mlp))
    h = np.maximum(X @ tensors["layers.0.weight"] + tensors["layers.0.bias"], 0)
    logits = h @ tensors["layers.1.weight"] + tensors["layers.1.bias"]
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    assert np.allclose(proba, mlp.predict_proba(X), rtol=0, atol=1e-12)


@pytest.mark.parametrize("solver", ["adam", "sgd"])
def test_mlp_partial_fit_continues_exactly_after_loading(solver) -> None:
    X, y = wine()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    mlp = MLPClassifier(hidden_layer_sizes=(6,), solver=solver, random_state=0)
    for _ in range(3):
        mlp.partial_fit(X, y, classes=np.unique(y))
    loaded = safetensors.loads(safetensors.dumps(mlp))
    assert type(loaded._optimizer) is type(mlp._optimizer)
    for model in (mlp, loaded):
        for _ in range(3):
            model.partial_fit(X, y)
    for a, b in zip(mlp.coefs_ + mlp.intercepts_, loaded.coefs_ + loaded.intercepts_, strict=True):
        assert np.array_equal(a, b)
    assert mlp.loss_curve_ == loaded.loss_curve_


def test_mlp_early_stopping_keeps_best_coefs_shared() -> None:
    X, y = wine()
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    mlp = _quiet(MLPClassifier(hidden_layer_sizes=(5,), early_stopping=True, max_iter=15, random_state=0).fit, X, y)
    assert mlp._best_coefs is mlp.coefs_
    raw = safetensors.dumps(mlp)
    assert not any(name.startswith("_best_coefs") for name in _header(raw))  # stored once, as layers.{i}
    loaded = safetensors.loads(raw)
    assert loaded._best_coefs is loaded.coefs_ and loaded._best_intercepts is loaded.intercepts_
    assert loaded._label_binarizer.classes_ is loaded.classes_


def test_mlp_float32_stays_float32() -> None:
    X, y = diabetes()
    mlp = _quiet(MLPRegressor(hidden_layer_sizes=(4,), max_iter=5, random_state=0).fit,
                 X.astype(np.float32), y.astype(np.float32))
    header = _header(safetensors.dumps(mlp))
    assert header["layers.0.weight"]["dtype"] == "F32"


# -- KNN: the search tree is stored as its arrays, its data once ---------------------


@pytest.mark.parametrize("algorithm", ["kd_tree", "ball_tree"])
def test_knn_tree_is_stored_identically(algorithm) -> None:
    X, y = wine()
    knn = KNeighborsClassifier(algorithm=algorithm, leaf_size=5, p=1).fit(X, y)
    raw = safetensors.dumps(knn)
    tree_tensors = ["_tree.idx_array", "_tree.idx_end", "_tree.idx_start", "_tree.is_leaf", "_tree.node_bounds",
                    "_tree.radius"]
    assert sorted(_header(raw)) == ["__metadata__", "_fit_X", *tree_tensors, "_y", "classes_"]
    attrs = json.loads(_header(raw)["__metadata__"]["aprender"])["model"]["attrs"]
    assert dict(attrs["_tree"]["items"])["leaf_size"] == 5
    loaded = safetensors.loads(raw)
    assert type(loaded._tree) is type(knn._tree)
    for a, b in zip(knn._tree.get_arrays(), loaded._tree.get_arrays(), strict=True):
        assert np.array_equal(a, b)


def test_knn_tree_given_to_fit_keeps_its_leaf_size() -> None:
    X, y = iris()
    tree = sk_neighbors.KDTree(X, leaf_size=3)
    knn = KNeighborsClassifier(leaf_size=30).fit(tree, y)
    loaded = safetensors.loads(safetensors.dumps(knn))
    assert np.array_equal(loaded._tree.get_arrays()[2], tree.get_arrays()[2])
    assert_identical_outputs(knn, loaded, X)


def test_knn_tree_built_with_another_metric_is_refused() -> None:
    X, y = iris()
    tree = sk_neighbors.BallTree(X, metric="manhattan")
    knn = KNeighborsClassifier(algorithm="ball_tree", metric="euclidean").fit(tree, y)
    with pytest.raises(aprender.exceptions.UnsupportedTypeError, match="the tree's metric is not effective_metric_"):
        safetensors.dumps(knn)


# -- unfitted templates nested in a registered meta-estimator -------------------------


class _Holder(BaseEstimator):
    """A user meta-estimator holding unfitted templates of the classes above."""

    def __init__(self, estimators=None):
        self.estimators = estimators

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self


aprender.register_estimator(_Holder, key="tests.test_models.Holder")


def test_unfitted_nested_templates_roundtrip() -> None:
    templates = [KNeighborsClassifier(algorithm="kd_tree"), SVC(), MLPClassifier(), PCA()]
    holder = _Holder(templates).fit(iris()[0])
    loaded = safetensors.loads(safetensors.dumps(holder))
    assert [type(t) for t in loaded.estimators] == [type(t) for t in templates]
    assert [t.get_params() for t in loaded.estimators] == [t.get_params() for t in templates]


def test_pipeline_of_these_models_names_nested_layers() -> None:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = wine()
    pipe = _quiet(make_pipeline(StandardScaler(), PCA(n_components=5), MLPClassifier(max_iter=20, random_state=0)).fit,
                  X, y)
    raw = safetensors.dumps(pipe)
    names = set(_header(raw))
    assert {"steps.1.pca.components_", "steps.2.mlpclassifier.layers.0.weight",
            "steps.2.mlpclassifier.layers.1.bias"} <= names
    loaded = safetensors.loads(raw)
    assert_identical_outputs(pipe, loaded, X)


@pytest.mark.parametrize(("model", "other"), [
    (lambda: BernoulliNB().fit(*iris()), MultinomialNB),  # one validator, two classes: still distinct schemas
    (lambda: SVR().fit(*diabetes()), SVC),
    (lambda: KNeighborsRegressor().fit(*diabetes()), KNeighborsClassifier),
])
def test_loading_as_another_class_fails_fast(model, other, tmp_path) -> None:
    path = tmp_path / "m.safetensors"
    model().save_safetensors(path)
    with pytest.raises(aprender.exceptions.ModelTypeMismatch, match=f"expected {other.__name__}"):
        other.load_safetensors(path)
