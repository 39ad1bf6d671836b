"""Converters never silently wrong: each model scikit-learn's example gallery exported wrong or crashed on.

Issue 38 ran the gallery through ``aprender.save(est, "m.onnx")`` (skl2onnx 1.20, ONNX
Runtime 1.32). One case per model here: small data, real ONNX Runtime; each either
exports with parity, asserted on the rows ONNX Runtime runs, or is refused with an
aprender error whose message gives the reason. docs/onnx.md has the same table.
"""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from scipy.special import erf
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.cluster import KMeans
from sklearn.datasets import load_iris, make_classification, make_multilabel_classification
from sklearn.decomposition import KernelPCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
)
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.linear_model import LinearRegression, LogisticRegression, RidgeClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, PowerTransformer, StandardScaler, TargetEncoder
from sklearn.svm import SVC, SVR, LinearSVC, NuSVC, NuSVR
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from aprender.exceptions import ExportParityError, ExportPrecisionWarning, UnsupportedExportError
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._erf import erf_nodes
from aprender.format.onnx._verify import svm_decision_atol


@pytest.fixture(scope="module")
def iris() -> tuple[np.ndarray, np.ndarray]:
    return load_iris(return_X_y=True)


def _run(onx, X) -> dict[str, np.ndarray]:
    """Every output of the graph on ``X``, by name, as ONNX Runtime computes it."""
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, input_feed(onx, X)), strict=True))


def _parity(onx) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


def _rounded(onx, X: np.ndarray) -> np.ndarray:
    """The rows as the graph sees them (a float32 input rounds them): what the estimator is compared on."""
    return X.astype(np.float32).astype(np.float64) if onx.graph.input[0].type.tensor_type.elem_type == 1 else X


@pytest.mark.parametrize("base", [LinearSVC(), SVC()], ids=["linear-svc", "svc"])
@pytest.mark.parametrize("wrap", ["alone", "binary", "pipeline", "search", "string labels"])
def test_one_vs_rest_over_svms_exports_its_decision_function(iris, wrap, base) -> None:
    # skl2onnx read one column of each LinearSVC's [-d, d] and normalised the scores: 11.2 off
    X, y = iris
    y = {"binary": (y > 0).astype(int), "string labels": np.array(["a", "b", "c"])[y]}.get(wrap, y)
    ovr = OneVsRestClassifier(clone(base))
    model = {"pipeline": lambda: make_pipeline(StandardScaler(), ovr),
             "search": lambda: GridSearchCV(ovr, {"estimator__C": [0.5, 1.0]}, cv=2)}.get(wrap, lambda: ovr)()
    model.fit(X, y)
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    scores = model.decision_function(seen)
    if scores.ndim == 1:
        np.testing.assert_array_equal(got["probabilities"][:, 0], -got["probabilities"][:, 1])
        scores = np.column_stack([-scores, scores])
    np.testing.assert_allclose(got["probabilities"], scores, rtol=1e-4, atol=1e-5)
    assert _parity(onx)["outputs"]["label"]["differing_rows"] == 0


def _noisy_sine() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)
    X = np.sort(5 * rng.rand(40, 1), axis=0)
    y = np.sin(X).ravel()
    y[::5] += 3 * (0.5 - rng.rand(8))
    return X, y


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("model", [SVR(kernel="rbf", C=100, gamma=0.1),
                                   SVR(kernel="poly", C=100, degree=3, coef0=1),
                                   SVR(kernel="sigmoid", gamma=0.1), SVR(kernel="linear"),
                                   NuSVR(kernel="poly", degree=4)],
                         ids=["rbf", "poly", "sigmoid", "linear", "nu-poly"])
def test_svr_computes_in_double_and_matches(model, dtype) -> None:
    # skl2onnx's float32-only SVMRegressor: the degree-3 kernel with C=100 was 0.5 off, float64 had no kernel
    X, y = _noisy_sine()
    model = clone(model).fit(X, y)
    onx = to_onnx(model, X, dtype=dtype)
    assert "SVMRegressor" not in {node.op_type for node in onx.graph.node}
    got = _run(onx, X)["variable"].ravel()
    expected = model.predict(_rounded(onx, X))
    if dtype is np.float32:  # only the input and the output are rounded (one float32 rounding apart at most)
        np.testing.assert_allclose(got, expected, rtol=np.finfo(np.float32).eps, atol=0)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-10)


def test_gaussian_process_classifier_exports_in_double_without_contrib_ops(iris) -> None:
    X, y = iris  # skl2onnx wrote com.microsoft:Solve, which ONNX Runtime could not load
    model = GaussianProcessClassifier().fit(X[:100], y[:100])
    onx = to_onnx(model, X[:100])
    assert {op.domain for op in onx.opset_import} <= {"", "ai.onnx.ml"}
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    assert "Erf" not in {node.op_type for node in onx.graph.node}  # ONNX Runtime's Erf is float32 only
    got = _run(onx, X[:100])
    np.testing.assert_array_equal(got["label"].ravel(), model.predict(X[:100]))  # skl2onnx's labels are [N, 1]
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(X[:100]), rtol=1e-9, atol=1e-10)
    # its erf terms have coefficients ~1e3 that cancel: float32 cannot hold them
    with pytest.raises(ExportParityError, match=r"probabilities: \d+ of \d+ rows differ"):
        to_onnx(model, X[:100], dtype=np.float32)


def test_double_erf_matches_scipy_over_its_three_pieces() -> None:
    x = np.concatenate([np.linspace(-12, 12, 20001), [1.0, -1.0, 8.0, -8.0, 1e-300, np.inf, -np.inf, np.nan]])
    nodes, constants = erf_nodes("x", "y")
    vector = [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.DOUBLE, [None]) for n in ("x", "y")]
    graph = onnx.helper.make_graph(nodes, "erf", vector[:1], vector[1:], constants)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 21)])
    onnx.checker.check_model(model, full_check=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], erf(x), rtol=1e-15, atol=4e-16)


def test_multiclass_gaussian_process_classifier_is_refused(iris) -> None:
    X, y = iris
    with pytest.raises(UnsupportedExportError, match="Only binary classification"):
        to_onnx(GaussianProcessClassifier().fit(X[::3], y[::3]), X[::3])


@pytest.mark.parametrize("model", [DecisionTreeClassifier(random_state=0), ExtraTreesClassifier(10, random_state=0),
                                   RandomForestClassifier(10, random_state=0), ExtraTreesRegressor(10, random_state=0)],
                         ids=["tree", "extra-trees", "forest", "extra-trees-regressor"])
def test_trees_send_missing_values_where_scikit_learn_does(model) -> None:
    # skl2onnx wrote no missing-value routing: every NaN went right (ExtraTrees 0.15 off in the gallery)
    X, y = make_classification(n_samples=100, n_features=5, n_informative=3, n_classes=3, random_state=0)
    X[np.random.RandomState(0).rand(*X.shape) < 0.1] = np.nan
    model = clone(model).fit(X, y)
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    if "label" in got:
        np.testing.assert_array_equal(got["label"], model.predict(seen))
        np.testing.assert_allclose(got["probabilities"], model.predict_proba(seen), atol=1e-6)
    else:
        np.testing.assert_allclose(got["variable"].ravel(), model.predict(seen), rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def three_classes() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=100, n_features=5, n_informative=3, n_classes=3, random_state=0)


@pytest.mark.parametrize("base", [LogisticRegression(), LinearSVC(), GaussianNB()], ids=["logistic", "svc", "nb"])
def test_sigmoid_calibration_exports_with_parity(three_classes, base) -> None:
    X, y = three_classes
    model = CalibratedClassifierCV(base, method="sigmoid", cv=3).fit(X, y)
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(seen), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("method", "reason"), [("isotonic", "isotonic calibrators gives other probabilities"),
                                                ("temperature", "converts method='sigmoid' and 'isotonic' only")])
def test_other_calibrations_are_refused_with_the_reason(three_classes, method, reason) -> None:
    X, y = three_classes  # isotonic: up to 0.25 off; temperature: skl2onnx failed with an AttributeError
    model = CalibratedClassifierCV(LogisticRegression(), method=method, cv=3).fit(X, y)
    with pytest.raises(UnsupportedExportError, match=reason):
        to_onnx(model, X)


def test_hgb_poisson_gets_its_inverse_link() -> None:
    rng = np.random.RandomState(0)  # skl2onnx returned the raw score: 2.14 off in the gallery
    X = rng.rand(80, 3)
    model = HistGradientBoostingRegressor(loss="poisson", max_iter=20).fit(X, rng.poisson(np.exp(X @ [1, 2, -1])))
    onx = to_onnx(model, X)
    np.testing.assert_allclose(_run(onx, X)["variable"].ravel(), model.predict(_rounded(onx, X)), rtol=1e-5)


@pytest.mark.parametrize("model", [LinearDiscriminantAnalysis(), KNeighborsClassifier(15)], ids=["lda", "knn"])
def test_classifiers_the_gallery_found_off_export_with_parity(three_classes, model) -> None:
    X, y = three_classes  # gallery: LDA 0.0104, KNN 0.05 (the latter: rows whose k-th neighbours tie)
    model = clone(model).fit(X, y)
    onx = to_onnx(model, X)
    parity = _parity(onx)["outputs"]
    assert parity["label"]["differing_rows"] == 0 and parity["probabilities"]["differing_rows"] == 0
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(seen), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_kernel_pca_and_gaussian_process_regressor_export_with_parity(dtype) -> None:
    X = np.linspace(0, 10, 12)[:, None]  # gallery: KernelPCA 0.03, GaussianProcessRegressor 0.38
    rows = np.linspace(0, 10, 50)[:, None]
    for model in (KernelPCA(n_components=2, kernel="rbf", gamma=0.5).fit(np.hstack([X, X ** 2 / 10])),
                  GaussianProcessRegressor(kernel=RBF()).fit(X, (X * np.sin(X)).ravel())):
        data = rows if isinstance(model, GaussianProcessRegressor) else np.hstack([rows, rows ** 2 / 10])
        onx = to_onnx(model, data, dtype=dtype)
        got = next(iter(_run(onx, data).values()))
        method = model.predict if isinstance(model, GaussianProcessRegressor) else model.transform
        tol = {"rtol": 1e-4, "atol": 1e-4} if dtype is np.float32 else {"rtol": 1e-9, "atol": 1e-9}
        expected = method(_rounded(onx, data)).reshape(len(data), -1)
        np.testing.assert_allclose(got.reshape(len(data), -1), expected, **tol)


def test_kmeans_distances_are_verified_squared_in_float32_and_exact_in_float64(iris) -> None:
    X = iris[0] * 10  # gallery: 3.5e-4 off (skl2onnx computes |x|^2 - 2x.c + |c|^2 in float32)
    model = KMeans(3, n_init=1, random_state=0).fit(X)
    assert _parity(to_onnx(model, X))["outputs"]["scores"]["differing_rows"] == 0
    onx = to_onnx(model, X, dtype=np.float64)
    np.testing.assert_allclose(_run(onx, X)["scores"], model.transform(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("base", [LogisticRegression(), RandomForestClassifier(10, random_state=0),
                                  SVC(kernel="linear"), LinearSVC()], ids=["logistic", "forest", "svc", "linear-svc"])
def test_multilabel_one_vs_rest_exports_one_column_per_label(base) -> None:
    # gallery: 190 of 200 label rows wrong (decision values thresholded at 0.5 as if probabilities)
    X, Y = make_multilabel_classification(n_samples=60, n_features=6, n_classes=3, random_state=0)
    model = OneVsRestClassifier(clone(base)).fit(X, Y)
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    scores = model.predict_proba(seen) if hasattr(model, "predict_proba") else model.decision_function(seen)
    np.testing.assert_allclose(got["probabilities"], scores, rtol=1e-4, atol=1e-5)


def _overfit_polynomial() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)  # scikit-learn's underfitting/overfitting example, degree 15
    x = np.sort(rng.rand(30))
    return x[:, None], np.cos(1.5 * np.pi * x) + rng.randn(30) * 0.1


def test_polynomial_features_export_in_double_by_default_and_float32_is_refused() -> None:
    X, y = _overfit_polynomial()  # gallery: 583 off in float32
    model = make_pipeline(PolynomialFeatures(15, include_bias=False), LinearRegression()).fit(X, y)
    onx = to_onnx(model)  # no sample: the probe rows are synthesized, the dtype picked
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    np.testing.assert_allclose(_run(onx, X)["variable"].ravel(), model.predict(X), rtol=1e-9, atol=1e-9)
    with pytest.raises(ExportParityError, match=r"variable: \d+ of \d+ rows differ"):
        to_onnx(model, X, dtype=np.float32)


def test_a_model_needing_double_without_a_double_graph_falls_back_to_float32() -> None:
    rng = np.random.default_rng(2)  # skl2onnx's TargetEncoder takes float32 only: no double graph
    X = rng.integers(0, 5, (200, 1)).astype(float)  # codes: the trees split between their encodings
    y = X[:, 0] ** 2 + rng.normal(size=200)
    model = make_pipeline(TargetEncoder(), DecisionTreeRegressor(max_depth=3, random_state=0)).fit(X, y)
    with pytest.warns(ExportPrecisionWarning, match="TargetEncoder in float32 before its trees"):
        onx = to_onnx(model, X)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert _parity(onx)["verified"]
    assert "no double graph" in _parity(onx)["dtype"]["reason"]


@pytest.mark.parametrize("final", [DecisionTreeRegressor(max_depth=4, random_state=0), LinearRegression()],
                         ids=["tree", "linear"])
def test_polynomial_features_with_a_bias_column_have_a_double_graph(final) -> None:
    # skl2onnx made the bias column in float32 whatever the input: its double graph was invalid,
    # and the default fell back to float32 for any PolynomialFeatures over more than one column.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    model = make_pipeline(PolynomialFeatures(3), clone(final)).fit(X, X[:, 0] * X[:, 1] - X[:, 2] ** 3)
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    new = rng.normal(size=(2000, 3))
    np.testing.assert_allclose(_run(onx, new)["variable"].ravel(), model.predict(new), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("model", [GaussianProcessRegressor(kernel=RBF()), KernelPCA(2, kernel="rbf")],
                         ids=["gpr", "kpca"])
def test_gaussian_process_regressor_and_kernel_pca_export_in_double_by_default(model) -> None:
    X = np.linspace(0, 10, 12)[:, None]
    model = clone(model).fit(X, (X * np.sin(X)).ravel())
    onx = to_onnx(model, X)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    assert {p["differing_rows"] for p in _parity(onx)["outputs"].values()} == {0}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", ["poly-iris", "binary-poly", "ovo-4-classes", "break-ties", "nu", "string-labels"])
def test_svc_decision_values_and_labels_computed_in_double(iris, case, dtype) -> None:
    # skl2onnx's float32 SVMClassifier: 1 of 150 iris labels (poly kernel), 2 of 100 for a degree-5 binary kernel
    X, y = iris
    model, X, y = {
        "poly-iris": (SVC(kernel="poly", degree=3, gamma="auto"), X[:, :2], y),
        "binary-poly": (SVC(kernel="poly", degree=5, C=1), X[y > 0][:, :2], y[y > 0]),
        "ovo-4-classes": (SVC(decision_function_shape="ovo"), X, np.r_[y[:140], [3] * 10]),
        "break-ties": (SVC(break_ties=True), X, y),
        "nu": (NuSVC(kernel="sigmoid", gamma=0.01), X, y),
        "string-labels": (SVC(kernel="linear"), X, np.array(["a", "b", "c"])[y]),
    }[case]
    model.fit(X, y)
    onx = to_onnx(model, X, dtype=dtype)
    assert "SVMClassifier" not in {node.op_type for node in onx.graph.node}
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    scores = model.decision_function(seen)
    if scores.ndim == 1:  # two classes: [d, -d], skl2onnx's layout
        scores = np.column_stack([scores, -scores])
    # the sum of large terms that cancel runs in another order than libsvm's: 8 eps sum |alpha K| per row
    bound = svm_decision_atol(model, seen, float32=dtype is np.float32)[:, None]
    excess = np.abs(got["probabilities"] - scores) - (1e-6 if dtype is np.float32 else 1e-9) * np.abs(scores) - bound
    assert excess.max() <= 0


def test_binary_svc_inside_calibration_gets_the_raw_score_layout(iris) -> None:
    X, y = iris  # CalibratedClassifierCV asks for raw_scores: [-d, d], as skl2onnx lays it out
    model = CalibratedClassifierCV(SVC(), cv=3).fit(X, (y > 0).astype(int))
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(seen), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("model", [HistGradientBoostingRegressor(max_iter=10, categorical_features=[0]),
                                   HistGradientBoostingClassifier(max_iter=10, categorical_features=[True, False])],
                         ids=["regressor", "classifier"])
def test_hgb_with_categorical_splits_is_refused_with_the_reason(model) -> None:
    # skl2onnx compares category codes with a threshold: verification caught it only on rows that differ
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 5, 200), rng.normal(size=200)])
    y = ((X[:, 0] % 2 == 0) ^ (X[:, 1] > 0)).astype(int)
    model = clone(model).fit(X, y)
    with pytest.raises(UnsupportedExportError, match=r"categorical_features: .*membership in a set of categories"):
        to_onnx(model)
    with pytest.raises(UnsupportedExportError, match="categorical_features"):
        to_onnx(make_pipeline(StandardScaler(), clone(model).fit(X, y)))


def test_the_gallery_harness_exports_a_neighbours_model_fitted_on_another(tmp_path) -> None:
    # locally_linear_embedding fits a NearestNeighbors on a fitted NearestNeighbors: the harness took
    # a 5-row sample of that object and crashed (IndexError); it now reads the rows the object holds
    import importlib.util
    from pathlib import Path

    from sklearn.neighbors import NearestNeighbors

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "gallery.py"
    spec = importlib.util.spec_from_file_location("gallery_harness", path)
    gallery = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery)
    X = np.random.default_rng(0).normal(size=(30, 3))
    inner = NearestNeighbors(n_neighbors=4).fit(X)
    outer = NearestNeighbors(n_neighbors=4).fit(inner)
    assert gallery._data(inner) is inner._fit_X and gallery._data(X) is X
    result = gallery._onnx(outer, gallery._data(inner), {}, tmp_path)
    assert result["result"] == "refused" and "radius and n_neighbors" in result["error"], result


def _power_rows(rng: np.random.Generator, n: int, method: str) -> np.ndarray:
    X = np.c_[rng.lognormal(size=n), rng.normal(size=n) * 3, rng.integers(0, 10, n)]
    return np.abs(X) + 0.1 if method == "box-cox" else X


@pytest.mark.parametrize("method", ["yeo-johnson", "box-cox"])
@pytest.mark.parametrize("standardize", [True, False])
def test_power_transformer_exports_in_double_as_scipy_computes(method, standardize) -> None:
    # skl2onnx's double graph mixes float32 constants into double Muls: ONNX Runtime refused it.
    rng = np.random.default_rng(0)
    model = PowerTransformer(method=method, standardize=standardize).fit(_power_rows(rng, 300, method))
    new = _power_rows(rng, 2000, method)
    onx = to_onnx(model, dtype=np.float64)
    assert np.abs(_run(onx, new)["variable"] - model.transform(new)).max() <= 1e-12
    single = to_onnx(model, dtype=np.float32)
    seen = new.astype(np.float32).astype(np.float64)
    assert np.abs(_run(single, new.astype(np.float32))["variable"] - model.transform(seen)).max() <= 1e-5


def test_a_power_transformer_before_xgboost_exports_in_double_by_default() -> None:
    # With no double graph the default fell back to float32, and new rows were up to 0.35 off.
    xgboost = pytest.importorskip("xgboost", reason="xgboost is not installed (the aprender[xgboost] extra)")
    rng = np.random.default_rng(1)
    X = _power_rows(rng, 300, "yeo-johnson")
    model = make_pipeline(PowerTransformer(), xgboost.XGBRegressor(n_estimators=20, n_jobs=1)).fit(X, X[:, 0] + X[:, 2])
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    new = _power_rows(rng, 3000, "yeo-johnson")
    expected = model.predict(new)
    scale = np.spacing(np.float32(np.abs(expected).max()))  # the trees sum their leaves in float32
    assert np.abs(_run(onx, new)["variable"].ravel() - expected).max() <= 4 * scale


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("final", [LinearSVC(), RidgeClassifier()], ids=["linearsvc", "ridge"])
def test_a_classifier_without_probabilities_has_a_double_graph(classes, final) -> None:
    # skl2onnx: "post_transform 'NONE' is not supported with double", so a model that asks for
    # double (here PolynomialFeatures; a KBinsDiscretizer gave 13 of 5,000 labels) fell back to float32.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 3))
    model = make_pipeline(PolynomialFeatures(2), clone(final)).fit(X, rng.integers(0, classes, 300))
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    new = rng.normal(size=(2000, 3))
    out = _run(onx, new)
    decision = model.decision_function(new)
    decision = np.c_[-decision, decision] if classes == 2 else decision  # skl2onnx's raw scores: [-d, d]
    assert np.array_equal(out["label"], model.predict(new))
    assert np.abs(out["probabilities"] - decision).max() <= 1e-12


def test_knn_imputer_is_refused_with_the_measured_reason() -> None:
    # Its probe rows passed while new rows with a missing value were imputed otherwise (up to 1.2e5 off).
    from sklearn.impute import KNNImputer

    X = np.random.default_rng(0).normal(size=(100, 3))
    X[::7, 1] = np.nan
    with pytest.raises(UnsupportedExportError, match="KNNImputer graph computes the nan-Euclidean distances"):
        to_onnx(make_pipeline(KNNImputer(), LinearRegression()).fit(X, np.arange(100.0)))
