"""Verification with a caller's sample: the sample plus rows made around it (issue 38).

scikit-learn's gallery saved each model with ``X=`` its first five rows; verification on
those five passed while the graph was wrong on the full data (LDA, a weighted ElasticNet on
a precomputed Gram, KNN, KBinsDiscretizer). Each case here is a small reproduction: the
five rows alone let the wrong graph through, the rows made around them do not, and the
export now agrees with the estimator on every row of the data (or is refused).
"""

from __future__ import annotations

import functools
import json

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
import skl2onnx
from cli_run import invoke
from skl2onnx.common.data_types import FloatTensorType
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_wine, make_blobs, make_regression
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import ElasticNet, LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, OneHotEncoder, StandardScaler

import aprender
from aprender.exceptions import ExportParityError, UnsupportedExportError
from aprender.format.onnx import _sample_probe, input_feed, to_onnx
from aprender.format.onnx._dtype_choice import choose_dtype
from aprender.format.onnx._kbins import ceil32
from aprender.format.onnx._verify import knn_ties, verify

FLOAT, DOUBLE = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE


def _run(onx: onnx.ModelProto, X) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, input_feed(onx, X)), strict=True))


def _parity(onx: onnx.ModelProto) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


def _seen(onx: onnx.ModelProto, X: np.ndarray) -> np.ndarray:
    """The rows as the graph reads them (float32-rounded for a float32 input)."""
    return X.astype(np.float32).astype(np.float64) if onx.graph.input[0].type.tensor_type.elem_type == FLOAT else X


@pytest.fixture
def sample_alone(monkeypatch):
    """Verification on the caller's sample alone, as before issue 38."""
    monkeypatch.setattr(_sample_probe, "_around_matrix", lambda model, X: None)


def _skl2onnx_graph(model, n_features: int, converter, shape, options=None) -> onnx.ModelProto:
    """skl2onnx's own float32 graph of ``model``, without the converter aprender puts in its place."""
    return skl2onnx.convert_sklearn(
        model, initial_types=[("X", FloatTensorType([None, n_features]))], options=options,
        custom_conversion_functions={type(model): converter}, custom_shape_calculators={type(model): shape})


def _lda_data() -> tuple[np.ndarray, np.ndarray]:
    """plot_lda.py: one informative feature and noise features (here of varied scale); fit on the first 20 rows."""
    X, y = make_blobs(n_samples=220, n_features=1, centers=[[-2], [2]], random_state=0)
    noise = np.random.default_rng(0).standard_normal((220, 74)) * np.geomspace(0.1, 10, 74)
    return np.hstack([X, noise]), y


def test_lda_two_classes_skl2onnx_doubles_the_logit_the_made_rows_catch_it_and_the_export_is_exact() -> None:
    from skl2onnx.operator_converters.linear_classifier import convert_sklearn_linear_classifier
    from skl2onnx.shape_calculators.linear_classifier import calculate_linear_classifier_output_shapes

    X, y = _lda_data()
    model = LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto").fit(X[:20], y[:20])
    theirs = _skl2onnx_graph(model, 75, convert_sklearn_linear_classifier, calculate_linear_classifier_output_shapes,
                             {id(model): {"zipmap": False}})
    assert np.abs(_run(theirs, X)["probabilities"] - model.predict_proba(_seen(theirs, X))).max() > 1e-3
    # the gallery's five rows were training rows, whose probabilities are 0 or 1 to within 1e-8
    sample = X[:20][np.argsort(-np.abs(model.decision_function(X[:20])))[:5]]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sample_probe, "_around_matrix", lambda model, X: None)
        assert verify(theirs, model, sample)["verified"]
    with pytest.raises(ExportParityError, match=r"the sample's 5 rows and \d+ rows made around them"):
        verify(theirs, model, sample)
    onx = to_onnx(model, sample)  # aprender's converter halves both scores: softmax([-d, d] / 2) = expit(d)
    got = _run(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(X))
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(_seen(onx, X)), rtol=1e-4, atol=1e-5)


def _gram_elastic_net() -> tuple[ElasticNet, np.ndarray]:
    """The gallery's ElasticNet on a weighted precomputed Gram matrix, 2,000 rows."""
    X, y = make_regression(n_samples=2000, noise=0.5, random_state=0)
    weights = np.random.default_rng(0).lognormal(size=len(X))
    weights *= len(X) / weights.sum()
    centred = X - np.average(X, axis=0, weights=weights)
    scaled = centred * np.sqrt(weights)[:, None]
    return ElasticNet(alpha=0.01, precompute=scaled.T @ scaled).fit(centred, y, sample_weight=weights), centred


def test_elastic_net_on_a_weighted_gram_is_caught_in_float32_and_exported_in_double(sample_alone) -> None:
    model, X = _gram_elastic_net()
    onx = to_onnx(model, X[:5])  # before: five rows alone, and the float32 graph went out
    assert onx.graph.input[0].type.tensor_type.elem_type == FLOAT
    assert np.abs(_run(onx, X)["variable"].ravel() - model.predict(_seen(onx, X))).max() > 1e-4


def test_elastic_net_float32_is_refused_and_the_default_is_double_with_the_reason(tmp_path, capsys) -> None:
    model, X = _gram_elastic_net()
    with pytest.raises(ExportParityError, match=r"variable: \d+ of \d+ rows differ.*dtype=numpy.float64") as info:
        to_onnx(model, X[:5], dtype=np.float32)  # asked for float32: refused with the measured difference
    assert info.value.outputs["variable"]["max_abs"] > 1e-5
    path = tmp_path / "enet.onnx"
    aprender.save(model, path, X=X[:5])
    onx = onnx.load(str(path))
    assert onx.graph.input[0].type.tensor_type.elem_type == DOUBLE
    np.testing.assert_allclose(_run(onx, X)["variable"].ravel(), model.predict(X), rtol=1e-9, atol=1e-9)
    chosen = functools.partial(invoke, capsys)("inspect", path, "--json").json["metadata"]["parity"]["dtype"]
    assert chosen["chosen"] == "float64" and chosen["reason"].startswith("the float32 graph failed verification")
    assert chosen["float32_outputs"]["variable"]["differing_rows"] > 0


def test_knn_rows_off_on_the_full_data_are_exact_neighbour_ties_which_verification_explains() -> None:
    X, y = load_wine(return_X_y=True, as_frame=True)  # plot_scaling_importance.py: 20 neighbours, two columns
    scaled = StandardScaler().set_output(transform="pandas").fit_transform(X[["proline", "hue"]])
    model = KNeighborsClassifier(n_neighbors=20).fit(scaled, y)
    onx = to_onnx(model, scaled[:5])
    rows = _seen(onx, scaled.to_numpy())
    off = np.abs(_run(onx, scaled)["probabilities"] - model.predict_proba(rows)).max(axis=1) > 1e-5
    ties = knn_ties(model, rows, rtol=1e-6)
    assert off.any() and not (off & ~ties).any()  # the gallery's 0.05: the 20th and 21st neighbours tie
    assert verify(onx, model, scaled)["outputs"]["label"]["differing_rows"] == 0


def test_kbins_edges_are_rounded_toward_their_bin_and_the_made_rows_catch_skl2onnx_s_nearest_rounding() -> None:
    from skl2onnx.operator_converters.k_bins_discretiser import convert_sklearn_k_bins_discretiser
    from skl2onnx.shape_calculators.k_bins_discretiser import calculate_sklearn_k_bins_discretiser

    rng = np.random.default_rng(42)  # plot_target_encoder_cross_val.py: 100 uniform bins
    values = (rng.standard_normal(3000) + 0.5 * rng.standard_normal(3000)).reshape(-1, 1)
    model = KBinsDiscretizer(n_bins=100, encode="ordinal", strategy="uniform", subsample=None).fit(values)
    edges = model.bin_edges_[0][1:-1]
    near = np.float32(edges)  # float32 values at every edge and either side: where nearest rounding errs
    X = np.concatenate([values.ravel(), near, np.nextafter(near, np.float32(-np.inf)),
                        np.nextafter(near, np.float32(np.inf))]).reshape(-1, 1)
    assert (np.searchsorted(np.float32(edges), np.float32(X.ravel()), side="right")
            != model.transform(np.float32(X).astype(np.float64)).ravel()).sum() > 10
    theirs = _skl2onnx_graph(model, 1, convert_sklearn_k_bins_discretiser,
                             calculate_sklearn_k_bins_discretiser)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sample_probe, "_around_matrix", lambda model, X: None)
        assert verify(theirs, model, values[:5])["verified"]
    with pytest.raises(ExportParityError, match=r"variable: \d+ of \d+ rows differ, max \|difference\| 1"):
        verify(theirs, model, values[:5])  # the bin edges' float32 neighbours are among the made rows
    onx = to_onnx(model, values[:5], dtype=np.float32)
    assert onx.graph.input[0].type.tensor_type.elem_type == FLOAT
    np.testing.assert_array_equal(_run(onx, X)["variable"], model.transform(_seen(onx, X)))
    assert np.all(ceil32(edges) >= edges) and np.all(np.float32(ceil32(edges)) == ceil32(edges))
    exact = to_onnx(model, values[:5])  # the default: double, scikit-learn's own comparison
    assert exact.graph.input[0].type.tensor_type.elem_type == DOUBLE
    np.testing.assert_array_equal(_run(exact, X)["variable"], model.transform(X))


@pytest.mark.parametrize("encode", ["ordinal", "onehot-dense"])
def test_kbins_after_a_scaler_bins_new_rows_of_scaled_integers_as_scikit_learn(encode) -> None:
    # The quantile edges are the scaled integers themselves: a float32 scaler moved 1,037 of
    # 20,000 such rows a bin (and a label); the default export is double, as scikit-learn computes.
    rng = np.random.default_rng(1)

    def rows(n: int) -> np.ndarray:
        return np.c_[rng.integers(0, 20, n), rng.integers(0, 7, n) * 1.5, rng.normal(size=n)]

    X = rows(300)
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 3, 300) > 12).astype(int)
    model = make_pipeline(StandardScaler(), KBinsDiscretizer(n_bins=5, encode=encode), LogisticRegression()).fit(X, y)
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == DOUBLE
    new = rows(3000)
    got = _run(onx, new)
    np.testing.assert_array_equal(got["label"], model.predict(new))
    np.testing.assert_allclose(got["probabilities"], model.predict_proba(new), rtol=0, atol=1e-12)


def test_kbins_onehot_is_refused_for_its_sparse_output() -> None:
    model = KBinsDiscretizer(n_bins=3, encode="onehot").fit(np.arange(12.0).reshape(-1, 2))
    with pytest.raises(UnsupportedExportError, match="sparse matrix, which ONNX tensors cannot hold"):
        to_onnx(model)


def test_a_dataframe_sample_is_joined_by_rows_of_its_ranges_and_the_fitted_categories() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"size": rng.normal(10, 3, 120), "rooms": rng.integers(1, 7, 120),
                          "city": rng.choice(["lyon", "nice", "brest", "metz"], 120)})
    y = (frame["size"] > 10) ^ (frame["city"] == "nice")
    columns = make_column_transformer((StandardScaler(), ["size", "rooms"]), (OneHotEncoder(), ["city"]))
    model = make_pipeline(columns, LogisticRegression()).fit(frame, y)
    sample = frame[frame["city"] != "metz"].iloc[:5]
    rows, source = _sample_probe.probe(model, sample)
    assert source == "sample+synthesized" and len(rows) > 100
    pd.testing.assert_frame_equal(rows.iloc[:5], sample.reset_index(drop=True))
    assert list(rows.dtypes) == list(sample.dtypes)
    assert set(rows["city"]) == {"lyon", "nice", "brest", "metz"}  # metz: from the fitted encoder
    assert rows["size"].min() < sample["size"].min() and rows["size"].max() > sample["size"].max()
    assert np.array_equal(rows.to_numpy(), _sample_probe.probe(model, sample)[0].to_numpy())  # deterministic
    assert _parity(to_onnx(model, sample))["rows"] == len(rows)


def test_rows_the_estimator_refuses_are_left_out() -> None:
    X = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [1.0, 1.0]])
    model = make_pipeline(OneHotEncoder(handle_unknown="error"), LogisticRegression()).fit(X, [0, 1, 0, 1])
    rows, source = _sample_probe.probe(model, X[:2])
    assert source == "sample+synthesized"
    assert set(np.unique(rows[:, 0])) <= {1.0, 2.0, 3.0} and set(np.unique(rows[:, 1])) <= {0.0, 1.0}
    assert _parity(to_onnx(model, X[:2]))["verified"]


def test_both_dtypes_failing_raise_with_both_differences() -> None:
    def export(dtype):
        raise ExportParityError(f"{np.dtype(dtype).name} off", {"variable": {"max_abs": 1.0, "differing_rows": 3}})

    with pytest.raises(ExportParityError, match="float32: float32 off float64: float64 off") as info:
        choose_dtype(export, None)
    assert set(info.value.outputs) == {"float32", "float64"}


def test_a_model_without_intercept_falls_back_to_double_where_float32_cannot_hold_it() -> None:
    """The gallery's plot_lasso_dense_vs_sparse_data.py: a Lasso of 5,000 features fitted with
    ``fit_intercept=False`` (``intercept_ = 0.0``, a float). Its float32 graph is 6e-5 off near zero;
    skl2onnx's double converter could not read a float intercept, so the export was refused."""
    from aprender.format.onnx import to_onnx
    from aprender.linear_model import Lasso

    X, y = make_regression(n_samples=200, n_features=5000, random_state=0)
    model = Lasso(alpha=1, fit_intercept=False, max_iter=1000).fit(X, y)
    onx = to_onnx(model, X[:5])
    assert isinstance(model.intercept_, float)  # the caller's model is left as it was
    parity = json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])
    assert parity["dtype"]["chosen"] == "float64", parity
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: X})[0].ravel()
    assert np.allclose(got, model.predict(X), rtol=1e-12, atol=1e-9)
    assert onnx.checker.check_model(onx) is None


def test_a_model_that_takes_missing_values_is_probed_with_them() -> None:
    # A KNNImputer graph passed on complete rows and imputed new rows with a missing value otherwise;
    # a lone ExtraTree sent them the wrong way (tests/test_onnx_exact_trees.py).
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.impute import SimpleImputer

    from aprender.format.onnx._probe import probe_rows

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[::9, 1] = np.nan
    y = np.nan_to_num(X[:, 0])
    for model in (SimpleImputer().fit(X), HistGradientBoostingRegressor(max_iter=5).fit(X, y),
                  make_pipeline(SimpleImputer(), LogisticRegression()).fit(X, y > 0)):
        rows = probe_rows(model)
        missing = np.isnan(rows)
        assert missing.any(axis=0).all() and missing.all(axis=1).sum() == 0 and missing.any(axis=1).sum() >= 3
    complete = probe_rows(LogisticRegression().fit(np.nan_to_num(X), y > 0))
    assert not np.isnan(complete).any()  # a model that refuses missing values is not asked about them
