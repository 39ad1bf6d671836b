"""ONNX export of DataFrame pipelines without a sample: the fitted state types each column.

Each model is fitted on a DataFrame with numeric, string, category and text columns,
exported with ``X=None``, and run in ONNX Runtime on the user's own frame: the inputs
are the columns the model reads, typed as a sample would type them, and the outputs
agree with the estimator.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

from aprender.exceptions import ExportPrecisionWarning
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._frame_probe import probe_frame

STRING, FLOAT, DOUBLE = 8, 1, 11  # onnx.TensorProto element types


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 160
    return pd.DataFrame({
        "age": rng.normal(40, 9, n),
        "rooms": rng.integers(1, 6, n).astype(float),
        "city": pd.Categorical(rng.choice(["Lyon", "Nice", "Brest"], n)),
        "plan": rng.choice(["basic", "pro"], n).astype(object),
        "note": rng.choice(["good value", "too loud", "nice view"], n),
        "id": rng.integers(0, 10**6, n),
    })


def _columns() -> ColumnTransformer:
    return ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age"]),
        ("ord", OrdinalEncoder(), ["rooms"]),
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
    ])  # "note" and "id" are dropped (the remainder)


def _run(onx, X: pd.DataFrame) -> list[np.ndarray]:
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, input_feed(onx, X))


def _as_fed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(city=frame["city"].astype(object))


@pytest.mark.parametrize("make", [
    lambda: make_pipeline(_columns(), LogisticRegression()),
    lambda: make_pipeline(_columns(), RandomForestClassifier(n_estimators=5, random_state=0)),
    lambda: GridSearchCV(make_pipeline(_columns(), LogisticRegression()), {"logisticregression__C": [0.1, 1.0]}, cv=2),
], ids=["linear", "forest", "search"])
def test_a_dataframe_classifier_exports_without_a_sample(frame, make) -> None:
    y = (frame["age"] > 40).to_numpy().astype(int) ^ (frame["plan"] == "pro").to_numpy()
    model = make().fit(frame, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportPrecisionWarning)  # the forest's exact graph computes the scaler in double
        onx = to_onnx(model)
    inputs = {i.name: i.type.tensor_type.elem_type for i in onx.graph.input}
    number = DOUBLE if isinstance(model, Pipeline) and isinstance(model[-1], RandomForestClassifier) else FLOAT
    assert inputs == {"age": number, "rooms": number, "city": STRING, "plan": STRING}  # dropped columns: no input
    parity = json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])
    assert parity["verified"] and parity["source"] == "synthesized" and parity["rows"] == 64
    labels, probabilities = _run(onx, _as_fed(frame))
    assert np.array_equal(labels, model.predict(frame))
    np.testing.assert_allclose(probabilities, model.predict_proba(frame), rtol=1e-4, atol=1e-5)


def test_a_dataframe_regressor_exports_without_a_sample(frame) -> None:
    model = make_pipeline(_columns(), Ridge()).fit(frame, frame["age"] * 2 + frame["rooms"])
    onx = to_onnx(model)
    (prediction,) = _run(onx, _as_fed(frame))
    np.testing.assert_allclose(prediction.ravel(), model.predict(frame), rtol=1e-4, atol=1e-4)


def test_the_probe_frame_draws_from_what_the_model_learned(frame) -> None:
    text = ColumnTransformer([("text", TfidfVectorizer(), "note"), ("cat", OneHotEncoder(), ["city"])])
    model = make_pipeline(text, LogisticRegression()).fit(frame, frame["plan"])
    sample = probe_frame(model)
    assert list(sample.columns) == list(frame.columns)
    assert set(sample["city"]) <= {"Lyon", "Nice", "Brest"} and len(set(sample["city"])) == 3
    vocabulary = set(model[0].named_transformers_["text"].vocabulary_)
    assert all(set(doc.split()) <= vocabulary for doc in sample["note"])
    assert sample.attrs["aprender.read_columns"] == ["city", "note"]
    assert np.array_equal(probe_frame(model).to_numpy(), sample.to_numpy())  # deterministic
    assert probe_frame(LogisticRegression().fit(frame[["age"]], frame["plan"])) is None  # no ColumnTransformer


def _with_missing_text(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame({"age": rng.normal(40, 12, n), "city": rng.choice(["lyon", "nice", "brest"], n),
                          "plan": rng.choice(["free", "pro", "team"], n)})
    frame.loc[rng.random(n) < 0.2, "plan"] = np.nan
    frame.loc[rng.random(n) < 0.1, "city"] = np.nan
    return frame


@pytest.mark.parametrize("imputer", [SimpleImputer(strategy="constant", fill_value="missing"),
                                     SimpleImputer(strategy="most_frequent")], ids=["constant", "most_frequent"])
def test_string_columns_with_nan_imputed_before_one_hot_export_without_a_sample(imputer) -> None:
    # skl2onnx refused a string SimpleImputer whose missing_values is NaN; the graph reads a
    # missing string as "nan", what input_feed (numpy's str of NaN) gives it.
    rng = np.random.default_rng(8)
    frame = _with_missing_text(rng, 400)
    y = (frame["age"] > 40) ^ (frame["plan"] == "pro")
    columns = ColumnTransformer([("num", StandardScaler(), ["age"]),
                                 ("cat", make_pipeline(imputer, OneHotEncoder(handle_unknown="ignore")),
                                  ["city", "plan"])])
    model = make_pipeline(columns, RandomForestClassifier(20, random_state=0)).fit(frame, y)
    onx = to_onnx(model)
    assert [i.name for i in onx.graph.input] == ["age", "city", "plan"]
    new = _with_missing_text(rng, 2000)
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, proba = session.run(None, input_feed(onx, new))
    assert np.array_equal(label, model.predict(new))
    assert np.abs(proba - model.predict_proba(new)).max() <= 1e-6
