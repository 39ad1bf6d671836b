"""Serving XGBoost, LightGBM and CatBoost models and DataFrame pipelines that hold them.

A real server on 127.0.0.1 (tests/support/serve_helpers.py), driven by httpx (realizar and
Open Inference Protocol v2 JSON) and tritonclient; each answer must equal the in-process
output of the loaded model on the same rows, exactly.
"""

from __future__ import annotations

import asyncio
import itertools

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
CLASSES = np.digitize(NUMBERS[:, 2] + NUMBERS[:, 3], [-0.5, 0.5])
#: Models answered through the booster's own predict (aprender.serve._fast_boosters), batched.
FAST = ("xgb", "xgb-multiclass", "xgb-regressor", "lgbm-numbers", "lgbm-regressor")


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
        "xgb-multiclass": xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1).fit(NUMBERS, CLASSES),
        "xgb-regressor": xgboost.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1).fit(NUMBERS, FRAME["age"]),
        "lgbm-numbers": lightgbm.LGBMClassifier(**small).fit(NUMBERS, LABELS),
        "lgbm-regressor": lightgbm.LGBMRegressor(**small).fit(NUMBERS, FRAME["age"]),
        "xgb-pipeline": make_pipeline(columns, xgboost.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1)).fit(
            FRAME, LABELS == "churn"),
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


def _v2_numbers(url, name, rows, output):
    body = {"inputs": [{"name": "input-0", "shape": list(rows.shape), "datatype": "FP64",
                        "data": np.where(np.isnan(rows), None, rows).ravel().tolist()}],
            "outputs": [{"name": output}]}
    reply = httpx.post(f"{url}/v2/models/{name}/infer", json=body)
    assert reply.status_code == 200, reply.text
    out = reply.json()["outputs"][0]
    return np.reshape(out["data"], out["shape"])


@pytest.mark.parametrize("name", FAST)
def test_boosters_take_their_fast_path_batched_and_answer_the_methods_bits(served, name):
    url, loaded = served
    meta = httpx.get(f"{url}/v2/models/{name}").json()["parameters"]
    assert "exact fast path for predict" in meta["warmup"] and meta["max_batch_size"] == 64
    model = loaded[name]
    outputs = ("predict", "predict_proba") if hasattr(model, "predict_proba") else ("predict",)
    complete = NUMBERS[~np.isnan(NUMBERS).any(axis=1)]
    for rows in (complete[:1], complete[:25], NUMBERS[:6]):  # the last with missing values
        for output in outputs:
            want = getattr(model, output)(rows)
            got = _v2_numbers(url, name, rows, output)
            if want.dtype.kind in "OU":  # string labels
                assert got.tolist() == want.tolist()
            else:  # (float32 probabilities as the shortest text that reads back to the same float32)
                assert np.array_equal(got.astype(want.dtype), want), (output, len(rows))


def test_concurrent_one_row_requests_to_a_booster_get_their_own_answers(served):
    """Requests arriving while the model computes go together in the next call: each still gets the
    bits of the model on its row alone."""
    url, loaded = served
    model, rows = loaded["xgb-multiclass"], NUMBERS[~np.isnan(NUMBERS).any(axis=1)][:40]
    body = [{"inputs": [{"name": "input-0", "shape": [1, 4], "datatype": "FP64", "data": row.tolist()}],
             "outputs": [{"name": "predict_proba"}, {"name": "predict"}]} for row in rows]

    async def everyone():
        async with httpx.AsyncClient(base_url=url) as client:
            return await asyncio.gather(*(client.post("/v2/models/xgb-multiclass/infer", json=b) for b in body))

    for row, reply in zip(rows, asyncio.run(everyone()), strict=True):
        assert reply.status_code == 200, reply.text
        proba, label = reply.json()["outputs"]
        want = model.predict_proba(row[None]).ravel()
        assert np.array_equal(np.array(proba["data"], dtype=want.dtype), want)
        assert label["data"] == model.predict(row[None]).tolist()


def test_a_dataframe_pipeline_ending_in_xgboost_is_batched_and_exact(served):
    url, loaded = served
    meta = httpx.get(f"{url}/v2/models/xgb-pipeline").json()["parameters"]
    assert "the final estimator once per batch" in meta["warmup"] and meta["max_batch_size"] == 64
    model = loaded["xgb-pipeline"]
    for rows in (FRAME.iloc[:1], FRAME.iloc[:17]):
        reply = httpx.post(f"{url}/predict", json={"model_id": "xgb-pipeline", "features": _records(rows),
                                                   "options": {"return_probabilities": True}})
        assert reply.status_code == 200, reply.text
        assert reply.json()["prediction"] == model.predict(rows).tolist()
        want = model.predict_proba(rows)
        assert np.array_equal(np.array(reply.json()["probabilities"], dtype=want.dtype), want)


def test_a_batch_of_dataframe_requests_calls_the_boosted_pipelines_final_estimator_once(served):
    """The final XGBoost model runs once on every request's transformed rows, and each request still
    gets the pipeline's own answer on its DataFrame alone."""
    from aprender.serve._inputs import Frame, describe_inputs
    from aprender.serve._models import _split

    _, loaded = served
    model = loaded["xgb-pipeline"]
    inputs = describe_inputs(model)
    split = _split(model, ("predict", "predict_proba"), inputs)
    assert split is not None and split.merged
    sizes = [1, 4, 1, 1, 7, 2, 1]
    starts = np.cumsum([0, *sizes])
    bounds = list(itertools.pairwise(starts))
    frames = [FRAME.iloc[a:b].reset_index(drop=True) for a, b in bounds]
    requests = [inputs.from_columns({c: f[c].to_numpy() for c in f.columns}) for f in frames]
    merged = Frame.concat(requests)
    calls = []
    split.final["predict_proba"] = (lambda method: lambda Xt: calls.append(len(Xt)) or method(Xt))(
        split.final["predict_proba"])
    got = split.run(merged, ("predict", "predict_proba"))
    assert calls == [sum(sizes)]
    for frame, (a, b) in zip(frames, bounds, strict=True):
        assert np.array_equal(got["predict_proba"][a:b], model.predict_proba(frame))
        assert np.array_equal(got["predict"][a:b], model.predict(frame))


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
