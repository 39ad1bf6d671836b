"""ONNX export of XGBoost, LightGBM and CatBoost estimators, alone and in DataFrame pipelines.

Every export is run in ONNX Runtime and compared with the estimator here (labels exact,
probabilities and values within 1e-5 of their scale), besides aprender's own verification.
Small fits (10 trees, 400 rows) keep the module fast; each library is skipped by name
when it is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from sklearn.base import is_classifier
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

import aprender
from aprender.codec import to_state
from aprender.exceptions import ExportParityError, ExportPrecisionWarning, UnsupportedExportError
from aprender.format import safetensors
from aprender.format.onnx import _boosters, input_feed, to_onnx

LIBRARIES = ("lightgbm", "xgboost", "catboost")
ROWS = 400


def _library(name: str):
    return pytest.importorskip(name, reason=f"{name} is not installed (the aprender[{name}] extra)")


def _estimator(library: str, kind: str, **params):
    """A small model of ``library``: kind is 'classifier' or 'regressor'."""
    module = _library(library)
    if library == "lightgbm":
        cls = module.LGBMClassifier if kind == "classifier" else module.LGBMRegressor
        return cls(n_estimators=10, verbose=-1, n_jobs=1, **params)  # one thread: a busy machine
    if library == "xgboost":
        cls = module.XGBClassifier if kind == "classifier" else module.XGBRegressor
        return cls(n_estimators=10, max_depth=3, n_jobs=1, **params)
    cls = module.CatBoostClassifier if kind == "classifier" else module.CatBoostRegressor
    return cls(iterations=10, depth=3, verbose=0, thread_count=1, allow_writing_files=False, **params)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """Numbers with missing values, a string column and a pandas category column."""
    rng = np.random.default_rng(7)
    df = pd.DataFrame({
        "age": rng.normal(40, 12, ROWS).round(1),
        "income": rng.lognormal(10, 1, ROWS),
        "city": rng.choice(["lyon", "paris", "nice", "brest"], ROWS),
        "plan": pd.Categorical(rng.choice(["free", "pro"], ROWS)),
    })
    df.loc[rng.random(ROWS) < 0.1, "age"] = np.nan
    df.loc[rng.random(ROWS) < 0.1, "income"] = np.nan
    return df


def _targets(df: pd.DataFrame) -> dict[str, np.ndarray]:
    older = df["age"].fillna(40).to_numpy() > 40
    city = df["city"].to_numpy()
    return {
        "binary": (older ^ (city == "paris")).astype(int),
        "multiclass": np.where(city == "nice", "c", np.where(older, "a", "b")),
        "regression": df["age"].fillna(0).to_numpy() * 0.3 + (city == "lyon") * 5 + np.log(df["income"].fillna(1)),
    }


def _run(onx, X) -> list[np.ndarray]:
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, input_feed(onx, X))


def _assert_matches(model, onx, X) -> None:
    """ONNX Runtime's outputs against the estimator on the float32 values the graph reads."""
    seen = X.astype({c: np.float32 for c in X.columns if X[c].dtype.kind == "f"}).astype(
        {c: np.float64 for c in X.columns if X[c].dtype.kind == "f"}) if hasattr(X, "columns") else \
        X.astype(np.float32).astype(np.float64)
    outputs = _run(onx, seen)
    if is_classifier(model):
        labels, proba = outputs
        assert np.array_equal(labels.astype(str), np.asarray(model.predict(seen)).ravel().astype(str))
        assert np.abs(proba - model.predict_proba(seen)).max() <= 1e-5
    else:
        expected = np.asarray(model.predict(seen), dtype=np.float64)
        assert np.abs(outputs[0].ravel() - expected).max() <= 1e-5 * max(1.0, np.abs(expected).max())


def _parity(onx) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


def _pipeline(estimator, encoder) -> Pipeline:
    columns = ColumnTransformer([("cat", encoder, ["city", "plan"]), ("num", "passthrough", ["age", "income"])])
    return Pipeline([("pre", columns), ("model", estimator)])


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("target", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("encoder", ["onehot", "ordinal"])
def test_a_dataframe_pipeline_exports_with_parity(frame, library, target, encoder) -> None:
    y = _targets(frame)[target]
    estimator = _estimator(library, "regressor" if target == "regression" else "classifier")
    if library == "xgboost" and target == "multiclass":
        y = np.unique(y, return_inverse=True)[1]  # XGBClassifier takes 0..n-1 labels only
    encoding = OneHotEncoder(handle_unknown="ignore") if encoder == "onehot" else OrdinalEncoder()
    model = _pipeline(estimator, encoding).fit(frame, y)
    onx = to_onnx(model, frame)
    assert [i.name for i in onx.graph.input] == list(frame.columns)
    record = _parity(onx)
    assert record["verified"] and record["source"] == "sample+synthesized" and record["sample_rows"] == ROWS
    _assert_matches(model, onx, frame)


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("target", ["binary", "multiclass", "regression"])
def test_a_model_alone_exports_without_a_sample(library, target) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(ROWS, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    clean = np.nan_to_num(X)
    y = {"binary": (clean[:, 0] + clean[:, 1] > 0).astype(int),
         "multiclass": (clean[:, 0] > 0).astype(int) + (clean[:, 2] > 0.5),
         "regression": clean[:, 0] * 2 + clean[:, 3]}[target]
    model = _estimator(library, "regressor" if target == "regression" else "classifier").fit(X, y)
    onx = to_onnx(model)
    record = _parity(onx)
    assert record["verified"] and record["source"] == "synthesized"
    # the probe includes the splits: more rows than the 64 random ones
    assert record["rows"] > 64 and _boosters.booster_splits(model)
    _assert_matches(model, onx, X)


@pytest.mark.parametrize("library", LIBRARIES)
def test_aprender_save_writes_the_onnx_file(frame, tmp_path, library) -> None:
    y = _targets(frame)["binary"]
    model = _pipeline(_estimator(library, "classifier"), OrdinalEncoder()).fit(frame, y)
    path = tmp_path / "m.onnx"
    aprender.save(model, path, X=frame)
    onx = onnx.load(path)
    assert [o.name for o in onx.graph.output] == ["label", "probabilities"]
    _assert_matches(model, onx, frame)


def test_float32_toward_keeps_every_float32_on_its_branch() -> None:
    rng = np.random.default_rng(0)
    thresholds = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.integers(-30, 30, 2000), [0.15, -0.15, 1e300]])
    for mode, compare in (("BRANCH_LEQ", np.less_equal), ("BRANCH_LT", np.less),
                          ("BRANCH_GT", np.greater), ("BRANCH_GTE", np.greater_equal)):
        rounded = np.array(_boosters.float32_toward(thresholds.tolist(), [mode] * len(thresholds)), dtype=np.float32)
        assert np.array_equal(rounded.astype(np.float64).astype(np.float32), rounded)  # float32 values
        with np.errstate(over="ignore"):
            nearest = thresholds.astype(np.float32)
        for x in (nearest, np.nextafter(nearest, np.float32(-np.inf)), np.nextafter(nearest, np.float32(np.inf))):
            ok = np.isfinite(x)
            assert np.array_equal(compare(x[ok].astype(np.float64), thresholds[ok]), compare(x[ok], rounded[ok]))


def _stump(lightgbm):
    """One LightGBM split between 0.1 and 0.2 (0.15000000000000005), which float32 rounds up (0.150000006)."""
    X = np.repeat([[0.1], [0.2]], 50, axis=0)
    stump = lightgbm.LGBMClassifier(n_estimators=1, num_leaves=2, min_child_samples=1, verbose=-1, n_jobs=1)
    return stump.fit(X, [0] * 50 + [1] * 50)


def test_lightgbm_double_thresholds_are_rounded_toward_their_branch(monkeypatch) -> None:
    lightgbm = _library("lightgbm")
    model = _stump(lightgbm)
    ((_, threshold),) = _boosters.booster_splits(model)
    assert np.float64(np.float32(threshold)) > threshold  # nearest rounding would move the split
    x = np.array([[np.float32(threshold)]], dtype=np.float64)
    onx = to_onnx(model)
    assert _run(onx, x)[0].tolist() == model.predict(x).tolist() == [1]
    # Measured: with thresholds rounded to nearest, the float32 graph sends that value left,
    # and verification refuses it; the default dtype then takes the double graph, which is exact.
    monkeypatch.setattr(_boosters, "float32_toward", lambda values, modes: values)
    with pytest.raises(ExportParityError, match="label: 1 of"):
        to_onnx(model, dtype=np.float32)
    assert _parity(to_onnx(model))["dtype"]["reason"].startswith("the float32 graph failed verification (label: 1 ")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lightgbm_reads_values_within_1e_35_of_zero_as_zero(dtype) -> None:
    lightgbm = _library("lightgbm")
    X = np.repeat([[-1.0], [0.0]], 50, axis=0)  # LightGBM splits at -1e-35f, the edge of its zero band
    model = lightgbm.LGBMClassifier(n_estimators=1, num_leaves=2, min_child_samples=1, verbose=-1, n_jobs=1).fit(
        X, [0] * 50 + [1] * 50)
    assert _boosters.booster_splits(model) == [(0, -_boosters.LIGHTGBM_ZERO)]
    band = np.float32(_boosters.LIGHTGBM_ZERO)
    edges = [np.nextafter(band, np.float32(1)), band, np.nextafter(band, np.float32(0)), np.float32(0)]
    x = np.array([[v] for e in edges for v in (e, -e)], dtype=np.float64)
    expected = model.predict(x)
    assert expected.tolist() == [1, 0, 1, 1, 1, 1, 1, 1]  # only -x beyond the band goes left
    assert _run(to_onnx(model, x, dtype=dtype), x)[0].tolist() == expected.tolist()


def _refused(model, X, match: str) -> None:
    with pytest.raises(UnsupportedExportError, match=match):
        to_onnx(model, X)


def test_catboost_categorical_features_are_refused_with_the_reason(frame) -> None:
    model = _estimator("catboost", "classifier", cat_features=["city"]).fit(
        frame[["city", "age"]], _targets(frame)["binary"])
    _refused(model, frame[["city", "age"]], "CatBoostClassifier cannot be exported to ONNX: it has categorical "
             "features: CatBoost's ONNX export computes none")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_lightgbm_on_category_columns_exports_one_input_per_column(frame, dtype, kind) -> None:
    X = frame[["age", "plan", "city"]].astype({"city": "category"})
    target = _targets(frame)["binary" if kind == "classifier" else "regression"]
    model = _estimator("lightgbm", kind, min_child_samples=5).fit(X, target)
    assert model.booster_.pandas_categorical  # LightGBM encodes the two columns itself
    rows = X.copy()
    rows["city"] = rows["city"].cat.add_categories(["oslo"])
    rows.loc[::9, "city"] = np.nan  # missing and unseen categories: LightGBM reads both as NaN
    rows.loc[4::11, "city"] = "oslo"
    onx = to_onnx(model, rows, dtype=dtype)
    assert [i.name for i in onx.graph.input] == ["age", "plan", "city"]
    assert [n.op_type for n in onx.graph.node].count("LabelEncoder") == 2
    assert _parity(onx)["verified"]
    _assert_matches(model, onx, rows)


def test_xgboost_on_category_columns_is_refused_and_names_the_pipeline_way(frame) -> None:
    X = frame[["plan", "age"]]
    model = _estimator("xgboost", "classifier", enable_categorical=True, tree_method="hist").fit(
        X, _targets(frame)["binary"])
    _refused(model, X, "pandas 'category' dtype.*OrdinalEncoder")


@pytest.mark.parametrize(("library", "params", "match"), [
    ("lightgbm", {"linear_tree": True}, "linear_tree=True"),
    ("lightgbm", {"zero_as_missing": True}, "zero_as_missing=True"),
    ("xgboost", {"booster": "gblinear"}, "booster='gblinear'"),
    ("xgboost", {"booster": "dart"}, "booster='dart'"),
    ("lightgbm", {"boosting_type": "rf", "bagging_freq": 1, "bagging_fraction": 0.5}, "boosting_type='rf'"),
    ("lightgbm", {"objective": "mape"}, "objective 'mape': onnxmltools has no graph"),
    ("xgboost", {"objective": "reg:logistic"}, "objective 'reg:logistic': onnxmltools' regressor graph leaves out"),
    ("catboost", {"loss_function": "MultiRMSE"}, "objective 'MultiRMSE': it predicts several targets"),
])
def test_what_the_graph_cannot_compute_is_refused(library, params, match) -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 3))
    model = _estimator(library, "regressor", **params).fit(X, np.abs(X[:, 0] + X[:, 1]) / 4)  # in [0, 1]: any loss
    _refused(model, X, match)


def test_a_scikit_learn_export_imports_no_booster_library() -> None:
    code = ("import sys; from sklearn.tree import DecisionTreeClassifier; from aprender.format.onnx import to_onnx; "
            "to_onnx(DecisionTreeClassifier().fit([[0.0], [1.0]], [0, 1])); "
            "print([m for m in ('lightgbm', 'xgboost', 'catboost', 'onnxmltools') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def _scaled(library: str, kind: str):
    """A StandardScaler before the model, on features of very different scales, with missing values."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4)) * [1, 10, 100, 1000] + [0, 5, 50, 500]
    X[rng.random(X.shape) < 0.05] = np.nan
    clean = np.nan_to_num(X)
    y = (clean[:, 0] + clean[:, 1] / 10 > 0.5).astype(int) if kind == "classifier" else clean[:, 0] + clean[:, 3] / 100
    return Pipeline([("scale", StandardScaler()), ("model", _estimator(library, kind))]).fit(X, y), X


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_dtype_float64_computes_the_transforms_in_double_and_feeds_the_trees_as_the_library(library, kind) -> None:
    model, X = _scaled(library, kind)
    onx = to_onnx(model, X, dtype=np.float64)
    assert onx.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    trees = [n for n in onx.graph.node if n.op_type.startswith("TreeEnsemble")]
    attributes = {a.name for n in trees for a in n.attribute}
    casts = [a.i for n in onx.graph.node if n.op_type == "Cast" for a in n.attribute if a.name == "to"]
    if library == "lightgbm":  # LightGBM compares doubles: double thresholds, no cast before the trees
        assert "nodes_values_as_tensor" in attributes and "nodes_values" not in attributes
        assert onnx.TensorProto.FLOAT not in casts
    else:  # XGBoost and CatBoost compare float32: the trees read the input cast to float32
        assert "nodes_values" in attributes and onnx.TensorProto.FLOAT in casts
    assert _parity(onx)["verified"]
    outputs = _run(onx, X)
    if kind == "classifier":
        assert np.array_equal(outputs[0], model.predict(X))
        assert np.abs(outputs[1] - model.predict_proba(X)).max() <= 1e-6
    else:
        assert np.abs(outputs[0].ravel() - model.predict(X)).max() <= 1e-5 * np.abs(model.predict(X)).max()


def test_a_float32_transform_before_xgboost_trees_is_refused_with_the_double_remedy() -> None:
    # Measured: the float32 StandardScaler sends 28 of these 300 rows across an XGBoost split.
    model, X = _scaled("xgboost", "regressor")
    refused = r"variable: [0-9]+ of [0-9]+ rows differ.*dtype=numpy.float64: the graph"
    with pytest.warns(ExportPrecisionWarning, match="no CastTransformer"), \
            pytest.raises(ExportParityError, match=refused):
        to_onnx(model, X, dtype=np.float32)
    assert _parity(to_onnx(model, X, dtype=np.float64))["verified"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the float32 graph's warning goes with the float32 graph
        chosen = _parity(to_onnx(model, X))["dtype"]
    assert chosen["chosen"] == "float64" and chosen["reason"].startswith("StandardScaler before XGBRegressor")


@pytest.mark.parametrize("library", LIBRARIES)
def test_dtype_none_exports_a_booster_after_float_transforms_in_double(frame, library) -> None:
    # Verified on probe rows, the float32 graph of such a pipeline (XGBClassifier(100), a scaled
    # integer column) still gave 226 of 20,000 new rows another label: the default is double.
    counts = frame.assign(visits=np.arange(ROWS) % 5)
    columns = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["city"]),
                                 ("num", StandardScaler(), ["visits", "income"])])
    y = _targets(frame)["binary"] ^ (counts["visits"].to_numpy() > 2)
    model = Pipeline([("pre", columns), ("model", _estimator(library, "classifier"))]).fit(counts, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no precision warning: nothing is computed in float32
        onx = to_onnx(model)
    assert {i.type.tensor_type.elem_type for i in onx.graph.input if i.name != "city"} == {onnx.TensorProto.DOUBLE}
    assert _parity(onx)["dtype"]["chosen"] == "float64"
    labels, proba = _run(onx, counts)
    assert np.array_equal(labels, model.predict(counts))
    assert np.abs(proba - model.predict_proba(counts)).max() <= 1e-6


def _rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 3))
    return X, (X[:, 0] + rng.normal(size=200) > 0).astype(int)


@pytest.mark.parametrize(("library", "name", "fit"), [
    ("lightgbm", "LGBMRanker", {"group": [10] * 20}),
    ("xgboost", "XGBRanker", {"qid": np.repeat(np.arange(20), 10)}),
    ("xgboost", "XGBRFClassifier", {}),
    ("xgboost", "XGBRFRegressor", {}),
])
def test_rankers_and_random_forests_export(library, name, fit) -> None:
    X, y = _rows()
    model = getattr(_library(library), name)(n_estimators=5, n_jobs=1).fit(X, y, **fit)
    onx = to_onnx(model)
    assert _parity(onx)["verified"]
    out = _run(onx, X)
    expected = model.predict_proba(X) if name.endswith("Classifier") else model.predict(X)
    assert np.abs(out[-1].reshape(expected.shape) - expected).max() <= 1e-5


@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_early_stopping_exports_the_best_iteration(library) -> None:
    X, y = _rows()
    module = _library(library)
    if library == "lightgbm":
        model = module.LGBMClassifier(n_estimators=200, learning_rate=0.3, verbose=-1, n_jobs=1).fit(
            X[:150], y[:150], eval_set=[(X[150:], y[150:])], callbacks=[module.early_stopping(3, verbose=False)])
        assert model.best_iteration_ < 200
    else:
        model = module.XGBClassifier(n_estimators=200, learning_rate=0.3, early_stopping_rounds=3, n_jobs=1).fit(
            X[:150], y[:150], eval_set=[(X[150:], y[150:])], verbose=False)
        assert model.best_iteration < 199
    _assert_matches(model, to_onnx(model), X)


def test_boosters_inside_a_search_and_a_stack_export() -> None:
    from sklearn.ensemble import StackingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    X, y = _rows()
    search = GridSearchCV(_estimator("lightgbm", "classifier"), {"num_leaves": [4, 8]}, cv=2).fit(X, y)
    stack = StackingClassifier([("lgbm", _estimator("lightgbm", "classifier")),
                                ("xgb", _estimator("xgboost", "classifier"))], LogisticRegression()).fit(X, y)
    for model in (search, stack):
        _assert_matches(model, to_onnx(model), X)


@pytest.mark.parametrize("unknown", [-1, np.nan], ids=["minus-one", "nan"])
def test_lightgbm_categorical_splits_on_ordinal_codes_export(frame, unknown) -> None:
    encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=unknown)
    model = _pipeline(_estimator("lightgbm", "classifier", min_child_samples=5, min_data_per_group=5), encoder)
    model.fit(frame, _targets(frame)["binary"], model__categorical_feature=[0, 1])
    assert "'==" in str(model[-1].booster_.dump_model()).replace('"', "'")  # categorical splits were made
    rows = frame.copy()
    rows.loc[::13, "city"] = "oslo"  # unseen: the encoder's unknown value
    for dtype in (np.float32, np.float64):
        onx = to_onnx(model, rows, dtype=dtype)
        assert _parity(onx)["verified"]
    _assert_matches(model, to_onnx(model, rows), rows)


@pytest.mark.parametrize("loss", ["Poisson", "Tweedie:variance_power=1.5"])
def test_catboost_log_link_losses_get_the_exponent_back(loss) -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    model = _estimator("catboost", "regressor", loss_function=loss).fit(X, rng.poisson(np.exp(X[:, 0])))
    onx = to_onnx(model)
    assert "Exp" in [n.op_type for n in onx.graph.node]
    _assert_matches(model, onx, X)


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_loaded_booster_exports(library) -> None:
    # A booster rebuilt from a file (CatBoost's from the JSON aprender writes, which holds no training
    # options) exports as the fitted one does.
    X, y = _rows()
    model = _estimator(library, "classifier").fit(X, y)
    loaded = safetensors.loads(safetensors.state_to_bytes(to_state(model)))
    _assert_matches(loaded, to_onnx(loaded), X)
