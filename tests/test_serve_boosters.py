"""Serving XGBoost, LightGBM and CatBoost models and DataFrame pipelines that hold them.

A real server on 127.0.0.1 (tests/support/serve_helpers.py), driven by httpx (realizar and
Open Inference Protocol v2 JSON) and tritonclient; each answer must equal the in-process
output of the loaded model on the same rows, exactly.
"""

from __future__ import annotations

import httpx
import numpy as np
import pandas as pd
import pytest
import tritonclient.http as triton
from serve_helpers import serving

import aprender
from aprender.compose import ColumnTransformer
from aprender.pipeline import make_pipeline
from aprender.preprocessing import OneHotEncoder, StandardScaler
from aprender.serve import ServeConfig

lightgbm = pytest.importorskip("lightgbm", reason="the lightgbm extra is not installed")
xgboost = pytest.importorskip("xgboost", reason="the xgboost extra is not installed")
catboost = pytest.importorskip("catboost", reason="the catboost extra is not installed")

_RNG = np.random.default_rng(3)
_N = 200
FRAME = pd.DataFrame({
    "age": _RNG.integers(18, 80, _N).astype(float),
    "income": np.where(_RNG.random(_N) < 0.1, np.nan, _RNG.normal(50, 10, _N)),
    "city": _RNG.choice(["Lyon", "Paris", "Nice"], _N),
    "plan": pd.Categorical(_RNG.choice(["basic", "pro", "team"], _N)),
})
LABELS = np.where(FRAME["age"] + _RNG.normal(0, 10, _N) > 50, "churn", "stay")
NUMBERS = np.c_[FRAME[["age", "income"]].to_numpy(), _RNG.normal(size=(_N, 2))]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("boosters")
    columns = ColumnTransformer([("num", StandardScaler(), ["age", "income"]),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"])])
    small = {"n_estimators": 20, "num_leaves": 7, "min_child_samples": 5, "verbose": -1}
    fitted = {
        "lgbm-pipeline": make_pipeline(columns, lightgbm.LGBMClassifier(**small)).fit(FRAME, LABELS),
        "lgbm-categories": lightgbm.LGBMClassifier(**small).fit(FRAME[["age", "income", "plan"]], LABELS),
        "xgb": xgboost.XGBClassifier(n_estimators=20, max_depth=3).fit(NUMBERS, LABELS == "churn"),
        "catboost": catboost.CatBoostRegressor(iterations=20, depth=3, verbose=0, allow_writing_files=False,
                                               random_seed=0).fit(NUMBERS, FRAME["age"]),
        # CatBoost encodes the string columns itself (one-hot and CTRs) after a ColumnTransformer passes them on.
        "catboost-categories": make_pipeline(
            ColumnTransformer([("num", "passthrough", ["age", "income"]), ("cat", "passthrough", ["city", "plan"])],
                              verbose_feature_names_out=False).set_output(transform="pandas"),
            catboost.CatBoostClassifier(iterations=10, depth=3, verbose=0, allow_writing_files=False, random_seed=0,
                                        cat_features=["city", "plan"])).fit(FRAME.astype({"plan": str}), LABELS),
        "catboost-frame": catboost.CatBoostClassifier(iterations=10, depth=3, verbose=0, allow_writing_files=False,
                                                      random_seed=0, cat_features=["city", "plan"]).fit(
            FRAME.astype({"plan": str}), LABELS),
    }
    paths = {name: root / f"{name}.{'safetensors' if name == 'xgb' else 'apr'}" for name in fitted}
    for name, model in fitted.items():
        aprender.save(model, paths[name])
    loaded = {name: aprender.load(path) for name, path in paths.items()}
    with serving(ServeConfig(tuple(str(p) for p in paths.values()))) as url:
        yield url, loaded


def _records(frame: pd.DataFrame) -> list[dict]:
    out = frame.astype(object).where(frame.notna(), None)
    return [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
            for row in out.to_dict(orient="records")]


def test_a_lightgbm_dataframe_pipeline_over_realizar(served):
    url, loaded = served
    rows = FRAME.iloc[:12]
    reply = httpx.post(f"{url}/predict", json={"model_id": "lgbm-pipeline", "features": _records(rows),
                                               "options": {"return_probabilities": True}})
    assert reply.status_code == 200, reply.text
    model = loaded["lgbm-pipeline"]
    assert reply.json()["prediction"] == model.predict(rows).tolist()
    assert reply.json()["probabilities"] == model.predict_proba(rows).tolist()


def test_lightgbm_on_category_columns_over_open_inference_v2(served):
    url, loaded = served
    rows = FRAME[["age", "income", "plan"]].iloc[:10]
    inputs = [{"name": c, "shape": [len(rows)], "datatype": "BYTES" if c == "plan" else "FP64",
               "data": [r[c] for r in _records(rows)]} for c in rows.columns]
    reply = httpx.post(f"{url}/v2/models/lgbm-categories/infer", json={"inputs": inputs,
                                                                     "outputs": [{"name": "predict_proba"}]})
    assert reply.status_code == 200, reply.text
    out = reply.json()["outputs"][0]
    assert np.array_equal(np.reshape(out["data"], out["shape"]), loaded["lgbm-categories"].predict_proba(rows))


def test_xgboost_with_missing_values_over_tritonclient(served):
    url, loaded = served
    rows = NUMBERS[:16]
    assert np.isnan(rows).any()
    client = triton.InferenceServerClient(url.removeprefix("http://"))
    tensor = triton.InferInput("input-0", list(rows.shape), "FP64")
    tensor.set_data_from_numpy(rows)
    result = client.infer("xgb", [tensor], outputs=[triton.InferRequestedOutput("predict_proba")])
    assert np.array_equal(result.as_numpy("predict_proba"), loaded["xgb"].predict_proba(rows))


def test_catboost_regressor_over_open_inference_v2(served):
    url, loaded = served
    rows = NUMBERS[:9]
    body = {"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                        "data": np.where(np.isnan(rows), None, rows).tolist()}]}
    reply = httpx.post(f"{url}/v2/models/catboost/infer", json=body)
    assert reply.status_code == 200, reply.text
    out = reply.json()["outputs"][0]
    assert np.array_equal(np.reshape(out["data"], out["shape"]), loaded["catboost"].predict(rows))


@pytest.mark.parametrize("name", ["catboost-categories", "catboost-frame"], ids=["pipeline", "alone"])
def test_catboost_on_string_columns_over_open_inference_v2(served, name):
    url, loaded = served
    rows = FRAME.astype({"plan": str}).iloc[:10].copy()
    rows.loc[rows.index[0], "city"] = "Brest"  # a category the model never saw
    inputs = [{"name": c, "shape": [len(rows)], "datatype": "BYTES" if c in ("city", "plan") else "FP64",
               "data": [r[c] for r in _records(rows)]} for c in rows.columns]
    reply = httpx.post(f"{url}/v2/models/{name}/infer",
                       json={"inputs": inputs, "outputs": [{"name": "predict_proba"}]})
    assert reply.status_code == 200, reply.text
    out = reply.json()["outputs"][0]
    assert np.array_equal(np.reshape(out["data"], out["shape"]), loaded[name].predict_proba(rows))
