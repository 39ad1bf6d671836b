"""scikit-learn's trees in ONNX decide as scikit-learn does, by default (aprender/format/onnx/_exact_trees.py).

A DataFrame pipeline (median imputer + StandardScaler, one-hot and ordinal encoders) before
each tree model, and a lone decision tree, exported with no sample through
``aprender.save`` and through ``apr convert``: labels equal to scikit-learn's, probabilities
within one float32 unit (ai.onnx.ml 3's classifier scores are float32), regression values
within 1e-12 (ai.onnx.ml 5's double ``TreeEnsemble``), no ``ExportPrecisionWarning``. The
rows include values whose scaled value sits on a split threshold and on its float32 and
float64 neighbours, where the compact float32 graph (``dtype=np.float32``) and a graph
without scikit-learn's float32 cast go the other way.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
from cli_run import invoke
from sklearn.base import is_classifier
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import aprender
from aprender.exceptions import ExportPrecisionWarning
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._exact_trees import _Exact

EPS32 = float(np.finfo(np.float32).eps)
DOUBLE = 11  # onnx.TensorProto.DOUBLE

MODELS = {
    "forest": lambda: RandomForestClassifier(n_estimators=20, random_state=0),
    "forest_regressor": lambda: RandomForestRegressor(n_estimators=10, random_state=0),
    "extra": lambda: ExtraTreesClassifier(n_estimators=10, random_state=0),
    "extra_regressor": lambda: ExtraTreesRegressor(n_estimators=10, random_state=0),
    "boosting": lambda: GradientBoostingClassifier(n_estimators=20, random_state=0),
    "boosting_regressor": lambda: GradientBoostingRegressor(n_estimators=20, random_state=0),
    "histogram": lambda: HistGradientBoostingClassifier(max_iter=20, random_state=0),
    "histogram_regressor": lambda: HistGradientBoostingRegressor(max_iter=20, random_state=0),
}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 300
    return pd.DataFrame({
        "age": np.where(rng.random(n) < 0.1, np.nan, rng.normal(40, 12, n).round()),  # rounded: ties at thresholds
        "income": rng.lognormal(10, 1, n),
        "city": rng.choice(["lyon", "nice", "brest"], n).astype(object),
        "plan": rng.choice(["basic", "pro", "team"], n).astype(object),
    })


def _targets(frame: pd.DataFrame, classifier: bool) -> np.ndarray:
    if classifier:
        return ((frame["age"].fillna(40) > 42) ^ (frame["city"] == "nice")).to_numpy().astype(int)
    return (frame["income"] / 1e4 + frame["age"].fillna(30) + (frame["plan"] == "pro") * 5).to_numpy()


def _columns() -> ColumnTransformer:
    return ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["age", "income"]),
        ("city", OneHotEncoder(handle_unknown="ignore"), ["city"]),
        ("plan", OrdinalEncoder(), ["plan"]),
    ])


def _trees(model):
    est = model[-1] if hasattr(model, "steps") else model
    if hasattr(est, "_predictors"):
        nodes = [p.nodes[~p.nodes["is_leaf"].astype(bool)] for it in est._predictors for p in it]
        return [(int(f), float(t)) for n in nodes for f, t in zip(n["feature_idx"], n["num_threshold"], strict=True)]
    members = [est] if hasattr(est, "tree_") else list(np.ravel(est.estimators_))
    return [(int(f), float(t)) for m in members for f, t in zip(m.tree_.feature, m.tree_.threshold, strict=True)
            if f >= 0]


def _values_around(t: float) -> list[float]:
    """A threshold, its float64 neighbours and the float32 values on either side of it."""
    f = np.float32(t)
    below = f if float(f) <= t else np.nextafter(f, np.float32(-np.inf))
    above = np.nextafter(below, np.float32(np.inf))
    return [t, float(np.nextafter(t, -np.inf)), float(np.nextafter(t, np.inf)), float(below), float(above)]


def _threshold_rows(model, frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose scaled age or income lands on each split of those columns and its neighbours."""
    scaler = model[0].named_transformers_["num"][-1]
    rows = []
    for feature, threshold in _trees(model)[:60]:
        if feature > 1:  # the encoded columns hold whole numbers
            continue
        column = ["age", "income"][feature]
        for value in _values_around(threshold):
            row = frame.iloc[len(rows) % len(frame)].copy()
            row[column] = value * scaler.scale_[feature] + scaler.mean_[feature]  # scaled back: lands next to value
            rows.append(row)
    return pd.concat([frame, pd.DataFrame(rows)], ignore_index=True).astype(frame.dtypes.to_dict())


def _agree(onx, model, X: pd.DataFrame | np.ndarray) -> None:
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, input_feed(onx, X))
    if is_classifier(model):
        top = np.sort(model.predict_proba(X), axis=1)[:, -2:]
        decided = top[:, 1] - top[:, 0] > 2 * EPS32  # a forest's 0.5 / 0.5: either label is scikit-learn's argmax
        assert np.array_equal(outputs[0][decided], model.predict(X)[decided])
        np.testing.assert_allclose(outputs[1], model.predict_proba(X), rtol=EPS32, atol=EPS32)
    else:  # opset 5's TreeEnsemble: double leaves summed into a double prediction
        assert outputs[0].dtype == np.float64
        expected = model.predict(X)
        np.testing.assert_allclose(outputs[0].ravel(), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def _parity(onx) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_dataframe_pipeline_of_trees_saves_exact_without_a_sample(frame, name, tmp_path: Path) -> None:
    est = MODELS[name]()
    model = make_pipeline(_columns(), est).fit(frame, _targets(frame, is_classifier(est)))
    path = tmp_path / "m.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportPrecisionWarning)
        aprender.save(model, path)
    import onnx

    onx = onnx.load(path)
    assert {i.name: i.type.tensor_type.elem_type for i in onx.graph.input if i.name in ("age", "income")} == {
        "age": DOUBLE, "income": DOUBLE}  # the preprocessing is computed in double, as scikit-learn does
    parity = _parity(onx)
    assert parity["verified"] and parity["rtol"] == EPS32
    opsets = {o.domain: o.version for o in onx.opset_import}
    assert opsets["ai.onnx.ml"] == (3 if is_classifier(est) else 5)
    _agree(onx, model, _threshold_rows(model, frame))


@pytest.mark.parametrize("name", ["forest", "histogram_regressor"])
def test_apr_convert_exports_the_same_exact_graph(frame, name, tmp_path: Path, capsys) -> None:
    est = MODELS[name]()
    model = make_pipeline(_columns(), est).fit(frame, _targets(frame, is_classifier(est)))
    aprender.save(model, tmp_path / "m.apr")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportPrecisionWarning)
        run = invoke(capsys, "convert", tmp_path / "m.apr", "--format", "onnx", "-o", tmp_path / "m.onnx")
    assert run.code == 0, run.err
    import onnx

    onx = onnx.load(tmp_path / "m.onnx")
    assert _parity(onx)["verified"]
    _agree(onx, model, _threshold_rows(model, frame))


@pytest.mark.parametrize("make", [DecisionTreeClassifier, DecisionTreeRegressor])
def test_a_lone_decision_tree_decides_at_its_thresholds_as_scikit_learn(make) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) if make is DecisionTreeClassifier else X[:, 0] * 3 + X[:, 2]
    model = make(max_depth=6, random_state=0).fit(X, y)
    probe = np.array([[v if j == f else 0.0 for j in range(3)] for f, t in _trees(model) for v in _values_around(t)])
    onx = to_onnx(model)
    assert onx.graph.input[0].type.tensor_type.elem_type == DOUBLE
    _agree(onx, model, np.vstack([X, probe]))


def test_float32_thresholds_or_a_missing_cast_would_decide_otherwise(frame, monkeypatch) -> None:
    model = make_pipeline(_columns(), MODELS["forest"]()).fit(frame, _targets(frame, True))
    rows = _threshold_rows(model, frame)
    expected = model.predict_proba(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExportPrecisionWarning)  # what this test shows
        compact = to_onnx(model, dtype=np.float32, verify=False)
    monkeypatch.setattr(_Exact, "_round_trip", lambda self, name: name)  # double thresholds, no float32 cast
    uncast = to_onnx(model, verify=False)
    for onx in (compact, uncast):
        session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
        _, proba = session.run(None, input_feed(onx, rows))
        assert (np.abs(proba - expected) > 1e-3).any(axis=1).sum() > 0


def test_missing_values_go_the_way_scikit_learn_sends_them() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    X[rng.random(X.shape) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0], nan=3.0) + np.isnan(X[:, 1]) * 2.0
    model = ExtraTreesRegressor(n_estimators=10, random_state=0).fit(X, y)
    assert any(m.tree_.missing_go_to_left.any() for m in model.estimators_)  # NaN goes left at some splits
    for dtype in (None, np.float32):
        onx = to_onnx(model, X, dtype=dtype)
        session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
        (predicted,) = session.run(None, input_feed(onx, X))
        np.testing.assert_allclose(predicted.ravel(), model.predict(X), rtol=1e-6)


def test_a_target_of_ai_onnx_ml_3_keeps_the_regressors_float32_scores() -> None:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 3))
    model = GradientBoostingRegressor(n_estimators=10, random_state=0).fit(X, X[:, 0] * 100)
    onx = to_onnx(model, target_opset={"": 21, "ai.onnx.ml": 3})
    assert [n.op_type for n in onx.graph.node if n.domain == "ai.onnx.ml"] == ["TreeEnsembleRegressor"]
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    (predicted,) = session.run(None, {"X": X})
    np.testing.assert_allclose(predicted.ravel(), model.predict(X), rtol=EPS32)


def test_the_threshold_search_is_skipped_only_inside_an_exact_tree_conversion() -> None:
    from skl2onnx.common import tree_ensemble

    X = np.array([[0.0], [1.0], [np.nan], [2.0]] * 10)
    y = np.array([0, 0, 1, 0] * 10)  # missing or not is the whole answer
    model = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert np.isinf(model.tree_.threshold).any()  # the split skl2onnx's search never ended on
    to_onnx(model, X)
    # outside the conversion (here, or in another thread) skl2onnx's own search answers
    assert tree_ensemble.sklearn_threshold(np.float64(0.1), np.float64, "BRANCH_LEQ") != np.float64(0.1)


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("labels", ["int", "str"])
def test_tied_votes_give_scikit_learn_s_label_the_first_class(classes, labels) -> None:
    # ONNX Runtime's tree operator broke exact ties of votes its own way: an
    # ExtraTreesClassifier(30) with 13 votes for each of two classes got the second class
    # (19 of these 3,000 rows). The float32 graph's float32 sums cannot hold such ties (docs/onnx.md).
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = rng.integers(0, classes, 300)
    y = np.array(["lyon", "nice", "paris"])[y] if labels == "str" else y
    model = ExtraTreesClassifier(n_estimators=30, random_state=0).fit(X, y)  # votes of 1/30: not exact in binary
    new = rng.normal(size=(3000, 4))
    proba = model.predict_proba(new)
    tied = (np.sort(proba, axis=1)[:, -1] == np.sort(proba, axis=1)[:, -2])
    assert tied.sum() > 50
    onx = to_onnx(model)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, _ = session.run(None, input_feed(onx, new))
    assert np.array_equal(np.asarray(label).astype(str), model.predict(new).astype(str))


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize("dtype", [None, np.float32])
def test_a_lone_extra_tree_sends_missing_values_where_scikit_learn_does(kind, dtype) -> None:
    # A single ExtraTree went through skl2onnx's converter, which sends every NaN right: the probe
    # rows with missing values found 13 of 242 rows 3.08 off (and 3 of 191 labels).
    from sklearn.tree import ExtraTreeClassifier, ExtraTreeRegressor

    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.2] = np.nan
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int) if kind == "classifier" else np.nan_to_num(X[:, 1]) * 3
    model = (ExtraTreeClassifier if kind == "classifier" else ExtraTreeRegressor)(random_state=0).fit(X, y)
    new = rng.normal(size=(2000, 4))
    new[rng.random(new.shape) < 0.2] = np.nan
    onx = to_onnx(model, dtype=dtype)
    seen = new.astype(np.float32).astype(np.float64)
    got = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, input_feed(onx, seen))
    if kind == "classifier":
        assert np.array_equal(got[0], model.predict(seen))
    else:
        np.testing.assert_allclose(got[0].ravel(), model.predict(seen), rtol=1e-6, atol=1e-6)
