"""ONNX export: API, graph names and shapes, options, metadata, registration, pipelines, files.

Zoo-wide parity lives in tests/test_onnx_parity.py; this module checks the contract
of aprender.format.onnx and the two pipelines and the HistGradientBoosting regression
named in the issue.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
import skl2onnx
from sklearn import linear_model as sk_linear
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from zoo import diabetes, iris

import aprender
from aprender.codec import allow_list
from aprender.decomposition import PCA
from aprender.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from aprender.exceptions import FormatError, UnsupportedExportError
from aprender.format import onnx as apr_onnx
from aprender.format.onnx import input_feed, inspect_file, register_converter, to_onnx
from aprender.linear_model import LinearRegression, LogisticRegression, Ridge
from aprender.preprocessing import OneHotEncoder, StandardScaler


def run(onx: onnx.ModelProto, X) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, input_feed(onx, X)), strict=True))


def props(onx: onnx.ModelProto) -> dict[str, str]:
    return {p.key: p.value for p in onx.metadata_props}


def dims(info) -> list:
    return [d.dim_value if d.HasField("dim_value") else None for d in info.type.tensor_type.shape.dim]


@pytest.fixture(scope="module")
def classifier() -> LogisticRegression:
    X, y = iris()
    return LogisticRegression(max_iter=1000).fit(X, y)


# -- names, shapes, types ------------------------------------------------------------


def test_regressor_graph_input_and_output(tmp_path) -> None:
    X, y = diabetes()
    onx = LinearRegression().fit(X, y).to_onnx()
    (inp,) = onx.graph.input
    assert inp.name == "X" and dims(inp) == [None, 10]
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert [o.name for o in onx.graph.output] == ["variable"]


def test_classifier_outputs_label_and_plain_probability_tensor(classifier) -> None:
    onx = classifier.to_onnx()
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    probabilities = onx.graph.output[1].type
    assert probabilities.HasField("tensor_type"), "probabilities must be a tensor, not a ZipMap sequence"
    assert "ZipMap" not in {n.op_type for n in onx.graph.node}
    out = run(onx, iris()[0])
    assert out["probabilities"].shape == (150, 3)
    np.testing.assert_array_equal(out["label"], classifier.predict(iris()[0]))


def test_zipmap_can_be_asked_for(classifier) -> None:
    onx = to_onnx(classifier, options={"zipmap": True})
    assert "ZipMap" in {n.op_type for n in onx.graph.node}
    assert onx.graph.output[1].type.HasField("sequence_type")


@pytest.mark.parametrize("pipeline", [False, True])
def test_grid_search_classifier_gives_a_plain_probability_tensor(pipeline) -> None:
    from sklearn.model_selection import GridSearchCV

    X, y = iris()
    clf = sk_linear.LogisticRegression(max_iter=1000)
    estimator, grid = (Pipeline([("scale", StandardScaler()), ("clf", clf)]), {"clf__C": [0.1, 1.0]}) if pipeline \
        else (clf, {"C": [0.1, 1.0]})
    search = GridSearchCV(estimator, grid, cv=2).fit(X, y)
    onx = to_onnx(search)
    assert "ZipMap" not in {n.op_type for n in onx.graph.node}
    out = run(onx, X)
    np.testing.assert_array_equal(out["label"], search.predict(X))
    np.testing.assert_allclose(out["probabilities"], search.predict_proba(X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("search", ["RandomizedSearchCV", "HalvingGridSearchCV", "HalvingRandomSearchCV"])
def test_every_search_exports_as_its_best_estimator(search) -> None:
    from sklearn import model_selection
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401

    X, y = iris()
    make = getattr(model_selection, search)
    grid = {"C": [0.1, 1.0, 10.0]}
    model = make(sk_linear.LogisticRegression(max_iter=1000), grid, cv=2, random_state=0,
                 **({"n_iter": 2} if search == "RandomizedSearchCV" else {})).fit(X, y)
    onx = to_onnx(model)
    out = run(onx, X)
    np.testing.assert_array_equal(out["label"], model.predict(X))
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), rtol=1e-4, atol=1e-5)


def test_float64_uses_double_tensors_and_tighter_parity(classifier) -> None:
    X = iris()[0]
    onx = to_onnx(classifier, dtype=np.float64)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    assert onx.graph.output[1].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    np.testing.assert_allclose(run(onx, X)["probabilities"], classifier.predict_proba(X), rtol=1e-12, atol=1e-14)


def test_dtype_must_be_a_float_type(classifier) -> None:
    with pytest.raises(ValueError, match=r"float32 or numpy\.float64"):
        to_onnx(classifier, dtype=np.int64)


def test_target_opset_is_honoured(classifier) -> None:
    onx = to_onnx(classifier, target_opset=17)
    assert {op.domain: op.version for op in onx.opset_import}[""] == 17


def test_converter_options_pass_through(classifier) -> None:
    X = iris()[0]
    onx = to_onnx(classifier, options={"raw_scores": True}, dtype=np.float64)
    np.testing.assert_allclose(run(onx, X)["probabilities"], classifier.decision_function(X), rtol=1e-12)


def test_unknown_option_is_a_value_error(classifier) -> None:
    with pytest.raises(ValueError, match="Option 'no_such_option'"):
        to_onnx(classifier, options={"no_such_option": True})


def test_unfitted_model_raises_not_fitted() -> None:
    with pytest.raises(NotFittedError):
        to_onnx(LogisticRegression())


def test_model_without_n_features_needs_a_sample() -> None:
    from aprender.feature_extraction.text import CountVectorizer

    vec = CountVectorizer().fit(["a cat sat", "a dog ran"])
    with pytest.raises(ValueError, match="Pass X"):
        to_onnx(vec)
    assert to_onnx(vec, ["a cat"]).graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.STRING


def test_plain_sklearn_estimator_off_the_allow_list_exports() -> None:
    X, y = diabetes()
    model = sk_linear.SGDRegressor(random_state=0, max_iter=50, tol=None).fit(X, y)
    onx = to_onnx(model)
    assert props(onx)["aprender.class"] == "sklearn.linear_model.SGDRegressor"
    assert props(onx)["aprender.model_type"] == "CUSTOM"
    np.testing.assert_allclose(run(onx, X)["variable"].ravel(), model.predict(X), rtol=1e-4, atol=1e-4)


# -- metadata ------------------------------------------------------------------------


def test_metadata_props_carry_class_params_versions_and_user_metadata(classifier) -> None:
    onx = to_onnx(classifier, metadata={"name": "iris", "metrics": {"accuracy": 0.97}})
    meta = props(onx)
    assert meta["aprender.class"] == "aprender.linear_model.LogisticRegression"
    assert meta["aprender.model_type"] == "LOGISTIC_REGRESSION"
    params = json.loads(meta["aprender.params"])
    assert params["max_iter"] == 1000 and params["C"] == 1.0
    versions = json.loads(meta["aprender.versions"])
    assert versions["aprender"] == aprender.__version__
    assert versions["skl2onnx"] == skl2onnx.__version__ and versions["onnx"] == onnx.__version__
    assert {"numpy", "sklearn"} <= versions.keys()
    assert json.loads(meta["aprender.user"]) == {"name": "iris", "metrics": {"accuracy": 0.97}}
    assert "aprender.feature_names_in" not in meta  # fitted on an array
    assert onx.doc_string.startswith("LogisticRegression (aprender.linear_model.LogisticRegression)")


def test_nested_params_keep_classes_and_drop_fitted_attributes() -> None:
    X, y = iris()
    pipe = aprender.pipeline.Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())]).fit(X, y)
    text = props(to_onnx(pipe))["aprender.params"]
    assert "aprender.linear_model.LogisticRegression" in text
    assert '"attrs"' not in text and "coefficients" not in text


def test_feature_names_in_are_recorded() -> None:
    X, y = iris()
    frame = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    model = LogisticRegression(max_iter=1000).fit(frame, y)
    onx = to_onnx(model)
    assert json.loads(props(onx)["aprender.feature_names_in"]) == ["sl", "sw", "pl", "pw"]
    assert [i.name for i in onx.graph.input] == ["X"]  # numeric frame: one matrix input


def test_numeric_dataframe_of_mixed_dtypes_is_one_float_matrix() -> None:
    X, y = iris()
    frame = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"]).assign(
        big=X[:, 0] > 5.5, count=pd.array((X[:, 1] * 10).astype(int), dtype="Int64"))
    model = LogisticRegression(max_iter=2000).fit(frame.astype(float), y)
    onx = to_onnx(model, frame)
    (inp,) = onx.graph.input
    assert inp.name == "X" and inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT and dims(inp) == [None, 6]
    np.testing.assert_array_equal(run(onx, frame)["label"], model.predict(frame.astype(float)))


def _strict_json(text: str):
    """Parse JSON as any strict reader does: NaN and Infinity are not JSON."""
    def reject(token):
        raise ValueError(f"non-standard JSON constant {token}")
    return json.loads(text, parse_constant=reject)


def test_non_finite_hyperparameters_are_written_as_codec_float_nodes() -> None:
    from sklearn.impute import KNNImputer, SimpleImputer

    X = np.array([[0.0, 1.0], [np.nan, 2.0], [2.0, 3.0], [3.0, np.nan]])
    model = SimpleImputer().fit(X)  # on the allow-list: the codec writes the params
    onx = to_onnx(model)
    params = _strict_json(props(onx)["aprender.params"])
    assert params["missing_values"] == {"__t__": "float", "v": "nan"}
    np.testing.assert_allclose(run(onx, X)["variable"], model.transform(X), rtol=1e-5)
    # a class the codec refuses (a user metric function) goes the plain way, with the same nodes
    plain = KNNImputer(metric=lambda a, b, **kw: 0.0).fit(X)
    with pytest.raises(UnsupportedExportError, match="KNNImputer graph"):
        to_onnx(plain)  # the export's refusal, not "Out of range float values are not JSON compliant"
    plain_params = _strict_json(apr_onnx._meta.model_props(plain, None)["aprender.params"])
    assert plain_params["missing_values"] == {"__t__": "float", "v": "nan"}


def test_infinite_hyperparameter_does_not_hide_the_real_refusal() -> None:
    from sklearn.cluster import OPTICS
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer

    X = np.random.RandomState(0).normal(size=(12, 2))
    model = OPTICS(min_samples=3).fit(X)
    assert model.max_eps == np.inf
    with pytest.raises(UnsupportedExportError, match=r"no ONNX converter for sklearn\.cluster"):
        to_onnx(model)
    with pytest.raises(UnsupportedExportError, match=r"no ONNX converter for sklearn\.impute"):
        to_onnx(IterativeImputer(max_iter=2).fit(X))  # missing_values=nan, max_value=inf


def test_search_with_nan_error_score_exports() -> None:
    from sklearn.model_selection import GridSearchCV

    X, y = iris()
    search = GridSearchCV(sk_linear.LogisticRegression(max_iter=1000), {"C": [0.5, 1.0]}, cv=2,
                          error_score=np.nan).fit(X, y)
    onx = to_onnx(search)
    assert _strict_json(props(onx)["aprender.params"])["error_score"] == {"__t__": "float", "v": "nan"}
    np.testing.assert_array_equal(run(onx, X)["label"], search.predict(X))


def test_user_metadata_must_be_json(classifier) -> None:
    with pytest.raises(TypeError, match="JSON"):
        to_onnx(classifier, metadata={"bad": object()})


def test_same_model_exports_identical_bytes(classifier) -> None:
    assert apr_onnx.dumps(classifier) == apr_onnx.dumps(classifier)


# -- the two pipelines of the issue -----------------------------------------------------


def test_scaler_pca_logistic_pipeline_parity() -> None:
    X, y = iris()
    pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(n_components=3)),
                     ("clf", LogisticRegression(max_iter=1000))]).fit(X, y)
    for dtype, tol in ((np.float32, {"rtol": 1e-4, "atol": 1e-5}), (np.float64, {"rtol": 1e-10, "atol": 1e-12})):
        onx = to_onnx(pipe, dtype=dtype)
        onnx.checker.check_model(onx, full_check=True)
        out = run(onx, X)
        np.testing.assert_array_equal(out["label"], pipe.predict(X))  # linear: every row
        np.testing.assert_allclose(out["probabilities"], pipe.predict_proba(X), **tol)


def _frame() -> tuple[pd.DataFrame, np.ndarray]:
    X, y = iris()
    frame = pd.DataFrame(X, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    frame["size"] = np.array(["small", "medium", "large"])[np.digitize(X[:, 2], [2.5, 5.0])]
    frame["shape"] = np.where(X[:, 0] / X[:, 1] > 2.0, "long", "round")
    return frame, y


def test_column_transformer_pipeline_on_a_dataframe_parity() -> None:
    frame, y = _frame()
    prep = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["size", "shape"]),
                              ("num", StandardScaler(), ["sepal_length", "sepal_width", "petal_width"])])
    pipe = Pipeline([("prep", prep), ("clf", LogisticRegression(max_iter=1000))]).fit(frame, y)
    onx = to_onnx(pipe, frame)
    onnx.checker.check_model(onx, full_check=True)
    # one [None, 1] input per DataFrame column, typed by the column
    types = {i.name: (i.type.tensor_type.elem_type, dims(i)) for i in onx.graph.input}
    assert types["size"] == (onnx.TensorProto.STRING, [None, 1])
    assert types["sepal_length"] == (onnx.TensorProto.FLOAT, [None, 1])
    assert list(types) == list(frame.columns)
    out = run(onx, frame)
    np.testing.assert_array_equal(out["label"], pipe.predict(frame))
    np.testing.assert_allclose(out["probabilities"], pipe.predict_proba(frame), rtol=1e-4, atol=1e-5)
    unseen = frame.head(3).assign(size=["huge", "small", "tiny"])  # handle_unknown="ignore"
    np.testing.assert_allclose(run(onx, unseen)["probabilities"], pipe.predict_proba(unseen), rtol=1e-4, atol=1e-5)
    assert json.loads(props(onx)["aprender.feature_names_in"]) == list(frame.columns)


def test_input_feed_maps_dataframe_columns_and_checks_them() -> None:
    frame, y = _frame()
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["size"]), ("num", StandardScaler(), ["petal_width"])])
    onx = to_onnx(Pipeline([("prep", prep), ("clf", LogisticRegression())]).fit(frame, y), frame)
    feed = input_feed(onx, frame)
    assert feed["size"].dtype == object and feed["size"].shape == (150, 1)
    assert feed["petal_width"].dtype == np.float32
    with pytest.raises(KeyError, match="'size'"):
        input_feed(onx, frame.drop(columns="size"))


# -- HistGradientBoosting: the protobuf 7 trap --------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: (HistGradientBoostingClassifier(max_iter=15, random_state=0).fit(*iris()), iris()[0]),
    lambda: (HistGradientBoostingRegressor(max_iter=15, random_state=0).fit(*diabetes()), diabetes()[0]),
], ids=["classifier", "regressor"])
def test_hist_gradient_boosting_converts_and_matches(make) -> None:
    # skl2onnx 1.20 writes boolean "ints" attributes for these trees: protobuf 7 rejects them
    # ("Expected an int, got a boolean"), hence protobuf<7 in the onnx extra. This test
    # fails if that pin is lost. The tree paths of these inputs cross no float32-rounded
    # split (checked in test_onnx_parity.float32_split_flips), so all rows must match.
    model, X = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the protobuf 6 form of the same trap is hidden
        onx = to_onnx(model)
    onnx.checker.check_model(onx, full_check=True)
    out = run(onx, X)
    if "label" in out:
        np.testing.assert_array_equal(out["label"], model.predict(X))
        np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_allclose(out["variable"].ravel(), model.predict(X), rtol=1e-4, atol=1e-5)


def test_protobuf_boolean_error_is_explained(monkeypatch, classifier) -> None:
    def reject(*args, **kwargs):
        raise TypeError("Field onnx.AttributeProto.ints: Expected an int, got a boolean.")

    monkeypatch.setattr(skl2onnx, "to_onnx", reject)
    with pytest.raises(UnsupportedExportError, match="protobuf<7") as info:
        to_onnx(classifier)
    assert "LogisticRegression" in str(info.value)
    assert isinstance(info.value.__cause__, TypeError)


def test_trees_export_in_double_by_default() -> None:
    X, y = iris()
    model = HistGradientBoostingClassifier(max_iter=5).fit(X, y)
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == 11  # double thresholds compare the double input
    labels, _ = ort.InferenceSession(onx.SerializeToString(), **_SESSION).run(None, {"X": X})
    assert np.array_equal(labels, model.predict(X))
    assert to_onnx(model, dtype=np.float32).graph.input[0].type.tensor_type.elem_type == 1  # the compact graph


# -- what cannot be exported ----------------------------------------------------------------


def test_ngram_lm_is_unsupported_with_reason() -> None:
    from aprender.text import NgramLm

    lm = NgramLm(n=2).fit(["the cat sat", "the dog sat"])
    with pytest.raises(UnsupportedExportError, match=r"NgramLm cannot be exported.*n-gram language model"):
        lm.to_onnx()


def test_content_recommender_is_unsupported_but_its_vectorizer_exports() -> None:
    from aprender.recommend import ContentRecommender

    texts = ["italian pasta with cheese", "thai green curry", "japanese ramen soup", "cheese cake"]
    rec = ContentRecommender().fit(texts, item_ids=["a", "b", "c", "d"])
    with pytest.raises(UnsupportedExportError, match=r"ContentRecommender.*model\.vectorizer_ can be exported"):
        to_onnx(rec)
    queries = ["cheese pasta", "curry soup", "nothing here"]
    onx = to_onnx(rec.vectorizer_, queries, options={"locale": "C.UTF-8"})  # see test_onnx_parity.TEXT_OPTIONS
    np.testing.assert_allclose(run(onx, queries)["variable"], rec.vectorizer_.transform(queries).toarray(),
                               rtol=1e-4, atol=1e-5)


def test_parameter_gap_names_estimator_and_parameter() -> None:
    from aprender.svm import SVC

    X, y = iris()
    model = SVC(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(UnsupportedExportError, match="SVC cannot be exported to ONNX: kernel='precomputed'"):
        to_onnx(model)


@pytest.mark.parametrize("name", ["RadiusNeighborsClassifier", "RadiusNeighborsRegressor"])
def test_radius_neighbors_are_refused_not_broken_in_onnx_runtime(name) -> None:
    from sklearn import neighbors

    X, y = iris()
    model = getattr(neighbors, name)(radius=1.0).fit(X, y)
    with pytest.raises(UnsupportedExportError, match=f"{name} cannot be exported.*index is out of range"):
        to_onnx(model)


def _threshold_models() -> dict:
    from sklearn.metrics import f1_score, make_scorer
    from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV

    lr = sk_linear.LogisticRegression()
    return {
        "tuned": TunedThresholdClassifierCV(lr, scoring="balanced_accuracy"),
        "fixed": FixedThresholdClassifier(lr, threshold=0.2),
        "fixed-pos-label-first": FixedThresholdClassifier(lr, threshold=0.3, pos_label=0),
        "tuned-string-labels": TunedThresholdClassifierCV(lr, scoring=make_scorer(f1_score, pos_label="no")),
    }


@pytest.mark.parametrize("name", ["tuned", "fixed", "fixed-pos-label-first", "tuned-string-labels"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_threshold_classifiers_predict_with_their_threshold(name, dtype) -> None:
    rng = np.random.RandomState(0)
    X = rng.normal(size=(400, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0.8).astype(int)
    if name.endswith("string-labels"):
        y = np.where(y == 1, "yes", "no")
    model = _threshold_models()[name].fit(X, y)
    onx = to_onnx(model, dtype=dtype)
    out = run(onx, X)
    np.testing.assert_array_equal(out["label"], model.predict(X))
    if name != "tuned-string-labels":  # there the tuned threshold happens to agree with argmax
        assert (model.predict(X) != model.estimator_.predict(X)).sum() > 20  # argmax labels would fail
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), rtol=1e-5, atol=1e-6)


def test_threshold_on_decision_function_is_refused_with_the_reason() -> None:
    from sklearn.model_selection import TunedThresholdClassifierCV

    X, y = iris()
    model = TunedThresholdClassifierCV(sk_linear.LogisticRegression(), response_method="decision_function")
    model.fit(X, (y == 2).astype(int))
    with pytest.raises(UnsupportedExportError, match=r"TunedThresholdClassifierCV cannot be exported.*decision_fun"):
        to_onnx(model)
    # as a search's best estimator too (the search's parameters hold only the unfitted template)
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(model, {"cv": [2, 3]}, cv=2).fit(X, (y == 2).astype(int))
    with pytest.raises(UnsupportedExportError, match=r"TunedThresholdClassifierCV cannot be exported.*decision_fun"):
        to_onnx(search)


def test_isolation_forest_exports_with_the_ai_onnx_ml_opset_its_converter_supports() -> None:
    from sklearn.ensemble import IsolationForest

    X, _ = iris()
    model = IsolationForest(n_estimators=20, random_state=0).fit(X)
    onx = to_onnx(model)
    assert {op.domain: op.version for op in onx.opset_import}["ai.onnx.ml"] == 3
    out = run(onx, X)
    np.testing.assert_array_equal(out["label"].ravel(), model.predict(X))
    np.testing.assert_allclose(out["scores"].ravel(), model.decision_function(X), rtol=1e-5, atol=1e-5)


def test_gap_inside_a_pipeline_names_the_step() -> None:
    from aprender.neighbors import KNeighborsClassifier

    pipe = Pipeline([("scale", StandardScaler()), ("knn", KNeighborsClassifier(weights="distance"))]).fit(*iris())
    with pytest.raises(UnsupportedExportError, match=r"KNeighborsClassifier.*weights='distance'"):
        to_onnx(pipe)


class Shift(TransformerMixin, BaseEstimator):
    """A user transformer: X + offset."""

    def __init__(self, offset: float = 1.0):
        self.offset = offset

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def transform(self, X):
        return np.asarray(X) + self.offset


def test_estimator_without_converter_is_unsupported_and_named() -> None:
    with pytest.raises(UnsupportedExportError, match=r"no ONNX converter for .*Shift"):
        to_onnx(Shift().fit(iris()[0]))


def test_class_without_converter_is_refused_before_its_input_is_read() -> None:
    from sklearn.feature_extraction.image import PatchExtractor
    from sklearn.preprocessing import MultiLabelBinarizer

    labels = [[0, 1], [1, 2], [2]]
    with pytest.raises(UnsupportedExportError, match=r"no ONNX converter for sklearn\..*MultiLabelBinarizer"):
        to_onnx(MultiLabelBinarizer().fit(labels), labels)  # ragged rows: not an ONNX tensor
    images = np.zeros((2, 4, 4))
    with pytest.raises(UnsupportedExportError, match=r"no ONNX converter for sklearn\..*PatchExtractor"):
        to_onnx(PatchExtractor(patch_size=(2, 2)).fit(images), images)  # 3-d input


def test_skl2onnx_failure_is_wrapped_with_the_estimator_name() -> None:
    from aprender.preprocessing import OneHotEncoder as Encoder

    X = np.array([["a"], ["a"], ["a"], ["b"]], dtype=object)
    encoder = Encoder(min_frequency=2, handle_unknown="infrequent_if_exist").fit(X)
    with pytest.raises(UnsupportedExportError, match=r"cannot convert OneHotEncoder.*Infrequent") as info:
        to_onnx(encoder, X)
    assert isinstance(info.value.__cause__, NotImplementedError)


# -- registration with skl2onnx -------------------------------------------------------------


def test_every_aprender_subclass_is_registered_under_its_parents_alias() -> None:
    from skl2onnx._supported_operators import sklearn_operator_name_map as aliases

    to_onnx(Ridge().fit(*diabetes()))  # triggers the lazy registration
    checked = 0
    for entry in allow_list():
        cls = entry.cls
        base = next((b for b in cls.__mro__[1:] if b.__module__.startswith("sklearn.") and b in aliases), None)
        if cls.__module__.startswith("aprender.") and base is not None:
            assert aliases.get(cls) == aliases[base], f"{cls.__name__} is not registered like {base.__name__}"
            checked += 1
    assert checked >= 10


def test_classes_allow_listed_later_are_registered_on_next_export() -> None:
    class LateRidge(aprender.base.SerializableMixin, sk_linear.Ridge):
        pass

    aprender.register_estimator(LateRidge, key="tests.onnx.LateRidge")
    X, y = diabetes()
    model = LateRidge().fit(X, y)
    onx = model.to_onnx()
    assert props(onx)["aprender.class"] == "tests.onnx.LateRidge"
    np.testing.assert_allclose(run(onx, X)["variable"].ravel(), model.predict(X), rtol=1e-4, atol=1e-3)


def _shift_shape(operator) -> None:
    operator.outputs[0].type = operator.inputs[0].type.__class__(operator.inputs[0].type.shape)


def _shift_convert(scope, operator, container) -> None:
    from skl2onnx.algebra.onnx_ops import OnnxAdd
    from skl2onnx.common.data_types import guess_numpy_type

    dtype = guess_numpy_type(operator.inputs[0].type)
    node = OnnxAdd(operator.inputs[0], np.array([operator.raw_operator.offset], dtype=dtype),
                   op_version=container.target_opset, output_names=operator.outputs[:1])
    node.add_to(scope, container)


def test_register_converter_hook_exports_a_user_estimator() -> None:
    class Shifted(Shift):
        pass

    register_converter(Shifted, _shift_shape, _shift_convert)
    X = iris()[0]
    for dtype in (np.float32, np.float64):
        onx = to_onnx(Shifted(offset=2.5).fit(X), dtype=dtype)
        np.testing.assert_allclose(run(onx, X)["variable"], X + 2.5, rtol=1e-6)
    with pytest.raises(ValueError, match="already registered"):
        register_converter(Shifted, _shift_shape, _shift_convert)


def test_register_converter_refuses_an_alias_skl2onnx_already_has() -> None:
    class Clash(Shift):
        pass

    to_onnx(Ridge().fit(*diabetes()))  # skl2onnx is set up: the clash shows at once
    with pytest.raises(ValueError, match=r"Clash: skl2onnx already has a converter named 'SklearnLinearRegressor'"):
        register_converter(Clash, _shift_shape, _shift_convert, alias="SklearnLinearRegressor")
    with pytest.raises(UnsupportedExportError, match="no ONNX converter"):
        to_onnx(Clash().fit(iris()[0]))  # not half-registered
    register_converter(Clash, _shift_shape, _shift_convert)  # a fresh alias still works
    np.testing.assert_allclose(run(to_onnx(Clash().fit(iris()[0])), iris()[0])["variable"], iris()[0] + 1.0,
                               rtol=1e-6)


def test_register_converter_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="needs a class"):
        register_converter(Shift(), _shift_shape, _shift_convert)
    with pytest.raises(TypeError, match="converter must be callable"):
        register_converter(type("Other", (Shift,), {}), _shift_shape, "not callable")


# -- files: save, load (refused), inspect ----------------------------------------------------


def test_save_via_mixin_and_aprender_save_give_the_same_runnable_file(tmp_path, classifier) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    classifier.save_onnx(a)
    aprender.save(classifier, b)
    assert a.read_bytes() == b.read_bytes()
    out = run(onnx.load(str(a)), iris()[0])
    np.testing.assert_array_equal(out["label"], classifier.predict(iris()[0]))
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*.tmp"))


def test_save_passes_options_through_aprender_save(tmp_path, classifier) -> None:
    path = tmp_path / "m.onnx"
    aprender.save(classifier, path, dtype=np.float64, metadata={"name": "m"})
    model = onnx.load(str(path))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    assert json.loads(props(model)["aprender.user"]) == {"name": "m"}


def test_failed_save_leaves_no_file(tmp_path) -> None:
    path = tmp_path / "m.onnx"
    with pytest.raises(NotFittedError):
        apr_onnx.save_file(LogisticRegression(), path)
    assert list(tmp_path.iterdir()) == []


def test_loading_an_onnx_file_says_export_only(tmp_path, classifier) -> None:
    path = tmp_path / "m.onnx"
    classifier.save_onnx(path)
    for load in (lambda: aprender.load(path), lambda: apr_onnx.load_file(path, LogisticRegression),
                 lambda: apr_onnx.loads(path.read_bytes())):
        with pytest.raises(UnsupportedExportError, match="export-only"):
            load()
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx"):
        apr_onnx.load_file(tmp_path / "missing.onnx")


def test_inspect_reports_opsets_io_metadata_and_initializers(tmp_path) -> None:
    X, y = diabetes()
    model = LinearRegression().fit(X, y)
    path = tmp_path / "lr.onnx"
    model.save_onnx(path, dtype=np.float64, metadata={"name": "diabetes"})  # double: MatMul with initializers
    info = inspect_file(path)
    assert info.format == "onnx" and info.file_size == path.stat().st_size
    assert info.class_key == "aprender.linear_model.LinearRegression"
    assert info.model_type is aprender.ModelType.LINEAR_REGRESSION
    assert info.metadata["user"] == {"name": "diabetes"} and info.metadata["params"]["fit_intercept"] is True
    assert info.extra["inputs"] == [{"name": "X", "dtype": "float64", "shape": [None, 10]}]
    assert info.extra["outputs"][0]["name"] == "variable"
    assert info.extra["opset"]["ai.onnx"] >= 13
    assert info.extra["producer"].startswith("skl2onnx")
    coef = next(t for t in info.tensors if t.shape == (10, 1))
    assert coef.dtype == "float64" and coef.nbytes == 80
    assert info.format_version == str(onnx.load(str(path)).ir_version)


def test_inspect_reads_onnx_files_other_tools_wrote(tmp_path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((3, 2), dtype=np.float64), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["n", 2])], [weight])
    path = tmp_path / "foreign.onnx"
    onnx.save(helper.make_model(graph), str(path))
    info = inspect_file(path)
    assert info.class_key is None and info.model_type is None and info.metadata == {}
    assert info.extra["inputs"] == [{"name": "x", "dtype": "float64", "shape": ["n", 3]}]
    assert [(t.name, t.dtype, t.shape, t.nbytes) for t in info.tensors] == [("w", "float64", (3, 2), 48)]


@pytest.mark.parametrize("content", [b"", b"\x08", b"not a protobuf at all \xff\xff\xff", b"\x08\x07" + b"\xff" * 20],
                         ids=["empty", "header-only", "garbage", "truncated-field"])
def test_inspect_rejects_files_that_are_not_onnx_models(tmp_path, content) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(FormatError, match=r"bad\.onnx"):
        inspect_file(path)


def test_inspect_rejects_a_truncated_model(tmp_path, classifier) -> None:
    path = tmp_path / "cut.onnx"
    path.write_bytes(apr_onnx.dumps(classifier)[:-40])
    with pytest.raises(FormatError, match=r"cut\.onnx"):
        inspect_file(path)


def test_aprender_inspect_and_validate_dispatch_to_onnx(tmp_path, classifier) -> None:
    path = tmp_path / "m.onnx"
    classifier.save_onnx(path)
    assert aprender.inspect(path).format == "onnx"
    aprender.validate(path)


def test_validate_rejects_a_graph_that_fails_the_checker(tmp_path, classifier) -> None:
    broken = apr_onnx.to_onnx(classifier)
    broken.graph.node[0].input[0] = "no_such_tensor"
    path = tmp_path / "broken.onnx"
    path.write_bytes(broken.SerializeToString())
    with pytest.raises(FormatError, match=r"broken\.onnx.*onnx\.checker"):
        apr_onnx.validate_file(path)


def test_inspect_missing_file(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.onnx"):
        inspect_file(tmp_path / "nope.onnx")


# -- what ONNX would compute otherwise, found at export --------------------------------------

_SESSION = {"providers": ["CPUExecutionProvider"]}


def test_column_names_with_dots_and_spaces_feed_as_they_are() -> None:
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"income.k": rng.normal(size=80), "home city": rng.choice(["Lyon", "Nice"], 80),
                          "age (years)": rng.normal(40, 9, 80)})
    target = rng.randint(0, 2, 80)
    columns = ColumnTransformer([("n", StandardScaler(), ["income.k", "age (years)"]),
                                 ("c", OneHotEncoder(), ["home city"])])
    model = Pipeline([("columns", columns), ("clf", LogisticRegression())]).fit(frame, target)
    onx = to_onnx(model, frame.head())
    assert [i.name for i in onx.graph.input] == ["income.k", "home city", "age (years)"]
    labels, proba = ort.InferenceSession(onx.SerializeToString(), **_SESSION).run(None, input_feed(onx, frame))
    assert np.array_equal(labels, model.predict(frame))
    np.testing.assert_allclose(proba, model.predict_proba(frame), atol=1e-6)


def test_text_in_any_script_is_tokenized_as_scikit_learn_does() -> None:
    from aprender.feature_extraction.text import TfidfVectorizer

    texts = ["great value, works well", "très bien, je recommande", "broken on arrival", "terrible support",
             "großartig und schnell", "tr est bon", "gro artig", "日本語 テキスト 素晴らしい", "ПРИВЕТ мир",
             "naïve café résumé", "Ελληνικά κείμενα", "x1 _a b2"] * 3
    labels = [1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1] * 3
    model = Pipeline([("tfidf", TfidfVectorizer()), ("clf", LogisticRegression())]).fit(texts, labels)
    onx = to_onnx(model, np.array(texts[:2]), options={"tfidf__locale": "C.UTF-8"})
    queries = np.array(["très bien", "großartig", "日本語 テキスト", "привет МИР", "TRÈS BIEN", "ελληνικά",
                        "naïve", "tr gro", "great value"])
    _, proba = ort.InferenceSession(onx.SerializeToString(), **_SESSION).run(None, input_feed(onx, queries))
    np.testing.assert_allclose(proba, model.predict_proba(queries), atol=1e-6)  # ASCII tokens: off by 0.12-0.35


def test_a_token_pattern_that_rewrites_otherwise_in_re2_is_refused() -> None:
    from aprender.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(token_pattern=r"(?u)\b\w+\b").fit(["très bien", "ok"])
    with pytest.raises(UnsupportedExportError, match=r"RE2, where \\w, \\b, \\d and \\s match ASCII only"):
        to_onnx(vectorizer, np.array(["très bien"]))
    ascii_words = CountVectorizer(token_pattern=r"[a-zA-Z0-9_]+").fit(["tres bien", "ok"])
    onx = to_onnx(ascii_words, np.array(["ok"]), options={"locale": "C.UTF-8"})  # ASCII on both sides: exported
    (counts,) = ort.InferenceSession(onx.SerializeToString(), **_SESSION).run(None, input_feed(onx, ["très bien"]))
    assert np.array_equal(counts, ascii_words.transform(["très bien"]).toarray())


def test_a_float_transform_before_trees_warns_and_the_cast_fix_is_exact() -> None:
    from skl2onnx.sklapi import CastTransformer

    from aprender.ensemble import RandomForestClassifier
    from aprender.exceptions import ExportPrecisionWarning

    rng = np.random.RandomState(0)
    X = np.round(rng.normal(40, 12, (1500, 6)), 1)  # ages, rounded: many rows near each threshold
    y = (X[:, 0] + rng.normal(0, 5, 1500) > 40).astype(int)
    forest = RandomForestClassifier(n_estimators=30, random_state=0)
    with pytest.warns(ExportPrecisionWarning, match="dtype=None"):
        to_onnx(Pipeline([("scale", StandardScaler()), ("trees", forest)]).fit(X[:1000], y[:1000]), dtype=np.float32)
    exact = Pipeline([("scale", StandardScaler()), ("cast", CastTransformer()), ("trees", forest)]).fit(X[:1000],
                                                                                                      y[:1000])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportPrecisionWarning)
        onx = to_onnx(exact, dtype=np.float64)
    labels, proba = ort.InferenceSession(onx.SerializeToString(), **_SESSION).run(None, input_feed(onx, X[1000:]))
    assert np.array_equal(labels, exact.predict(X[1000:]))
    np.testing.assert_allclose(proba, exact.predict_proba(X[1000:]), atol=1e-6)
    with warnings.catch_warnings():  # trees alone: nothing computed before them
        warnings.simplefilter("error", ExportPrecisionWarning)
        to_onnx(forest)


def test_the_same_export_gives_the_same_bytes_under_any_hash_seed(tmp_path) -> None:
    """skl2onnx gathers a graph's opset domains in a set; export orders them, so the bytes follow the model only."""
    import hashlib
    import os
    import subprocess
    import sys

    code = ("import sys, hashlib, numpy as np, aprender\n"
            "from aprender.pipeline import make_pipeline\n"
            "from aprender.preprocessing import StandardScaler\n"
            "from aprender.tree import DecisionTreeClassifier\n"
            "X = np.random.default_rng(0).random((60, 3)); y = (X[:, 0] > 0.5).astype(int)\n"
            "m = make_pipeline(StandardScaler(), DecisionTreeClassifier(max_depth=3, random_state=0)).fit(X, y)\n"
            "aprender.save(m, sys.argv[1], X=X[:5])\n")
    digests = set()
    for seed in ("0", "1", "2", "3"):
        path = tmp_path / f"m{seed}.onnx"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=env, capture_output=True)
        digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
    assert len(digests) == 1
