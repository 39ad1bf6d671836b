"""Serving what users fit on DataFrames and text, through every protocol's real client or payload.

Each answer must equal the in-process ``predict`` / ``predict_proba`` of the loaded model on the
same DataFrame, exactly: strings, categories, nullable integers and missing values included.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import tempfile
import threading

import httpx
import numpy as np
import pandas as pd
import pytest
import tritonclient.http as triton
from serve_helpers import serving

import aprender
from aprender.compose import ColumnTransformer
from aprender.ensemble import HistGradientBoostingClassifier
from aprender.feature_extraction.text import TfidfVectorizer
from aprender.impute import SimpleImputer
from aprender.linear_model import LogisticRegression
from aprender.pipeline import make_pipeline
from aprender.preprocessing import OneHotEncoder, StandardScaler
from aprender.serve import ServeConfig

_RNG = np.random.RandomState(0)
_N = 240
FRAME = pd.DataFrame({
    "age": _RNG.randint(18, 80, _N),
    "income.k": np.where(_RNG.rand(_N) < 0.1, np.nan, _RNG.normal(50, 10, _N)),  # a dot in the name
    "home city": _RNG.choice(["Lyon", "Paris", "Nice", "Besançon", None], _N),  # a space, non-ASCII, missing
    "kind": pd.Categorical(_RNG.choice(["a", "b", "c"], _N)),
    "visits": pd.array(_RNG.choice([1, 2, 3, None], _N), dtype="Int64"),
})
LABELS = np.where(FRAME["age"] + _RNG.normal(0, 10, _N) > 50, "churn", "stay")
TEXTS = ["great value, works well", "très bien, je recommande", "broken on arrival", "terrible support",
         "großartig und schnell", "would buy again", "waste of money", "excellent quality"] * 5
SENTIMENT = np.array(["pos", "pos", "neg", "neg", "pos", "pos", "neg", "pos"] * 5)
ROWS = FRAME.iloc[:6]


def _pipeline() -> object:
    numbers = make_pipeline(SimpleImputer(), StandardScaler())
    strings = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore"))
    columns = ColumnTransformer([("num", numbers, ["age", "income.k", "visits"]),
                                 ("cat", strings, ["home city", "kind"])])
    return make_pipeline(columns, LogisticRegression(max_iter=500)).fit(FRAME, LABELS)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("tabular")
    hgb_frame = FRAME[["age", "kind", "home city"]].astype({"home city": "category"})
    fitted = {
        "churn": _pipeline(),
        "hgb": HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(hgb_frame, LABELS),
        "reviews": make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(TEXTS, SENTIMENT),
    }
    for name, model in fitted.items():
        aprender.save(model, root / f"{name}.apr")
    loaded = {name: aprender.load(root / f"{name}.apr") for name in fitted}
    with serving(ServeConfig(tuple(str(root / f"{name}.apr") for name in fitted))) as url:
        yield url, loaded, hgb_frame


def _records(frame: pd.DataFrame) -> list[dict]:
    """JSON records as a client writes them: missing values as null, categories as their strings."""
    out = frame.astype(object).where(frame.notna(), None)
    return [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
            for row in out.to_dict(orient="records")]


def test_metadata_lists_the_columns_with_their_types(served):
    url, _, _ = served
    meta = httpx.get(f"{url}/v2/models/churn").json()
    assert meta["inputs"] == [
        {"name": "age", "datatype": "FP64", "shape": [-1]},
        {"name": "income.k", "datatype": "FP64", "shape": [-1]},
        {"name": "home city", "datatype": "BYTES", "shape": [-1]},
        {"name": "kind", "datatype": "BYTES", "shape": [-1]},
        {"name": "visits", "datatype": "FP64", "shape": [-1]},
    ]
    assert {o["name"]: o["datatype"] for o in meta["outputs"]}["predict"] == "BYTES"
    assert httpx.get(f"{url}/v2/models/reviews").json()["inputs"] == [
        {"name": "text", "datatype": "BYTES", "shape": [-1]}]
    hgb = {i["name"]: i["datatype"] for i in httpx.get(f"{url}/v2/models/hgb").json()["inputs"]}
    assert hgb == {"age": "FP64", "kind": "BYTES", "home city": "BYTES"}


def test_tritonclient_sends_one_bytes_or_number_tensor_per_column(served):
    url, loaded, _ = served
    client = triton.InferenceServerClient(url.removeprefix("http://"))
    inputs = []
    for column in FRAME.columns:
        values = ROWS[column]
        if values.dtype.kind in "iuf" or isinstance(values.dtype, pd.Int64Dtype):
            tensor = triton.InferInput(column, [len(ROWS)], "FP64")
            tensor.set_data_from_numpy(values.astype("float64").to_numpy(na_value=np.nan))
        else:  # BYTES, sent in the binary extension's length-prefixed layout; a missing string as ""
            tensor = triton.InferInput(column, [len(ROWS)], "BYTES")
            tensor.set_data_from_numpy(values.astype(object).where(values.notna(), "").to_numpy(dtype=object))
        inputs.append(tensor)
    wanted = [triton.InferRequestedOutput("predict"), triton.InferRequestedOutput("predict_proba")]
    result = client.infer("churn", inputs, outputs=wanted)
    expected = ROWS.astype({"home city": object}).copy()
    expected["home city"] = expected["home city"].fillna("")  # what was sent
    model = loaded["churn"]
    assert [v.decode() for v in result.as_numpy("predict")] == model.predict(expected).tolist()
    assert np.array_equal(result.as_numpy("predict_proba"), model.predict_proba(expected))


def test_mlserver_pandas_codec_request_with_nulls(served):
    url, loaded, _ = served
    inputs = []
    for column in FRAME.columns:
        values = [r[column] for r in _records(ROWS)]
        is_text = not pd.api.types.is_numeric_dtype(ROWS[column])
        inputs.append({"name": column, "shape": [len(ROWS)], "datatype": "BYTES" if is_text else "FP64",
                       "data": values})
    body = {"parameters": {"content_type": "pd"}, "inputs": inputs, "outputs": [{"name": "predict_proba"}]}
    reply = httpx.post(f"{url}/v2/models/churn/infer", json=body)
    assert reply.status_code == 200, reply.text
    out = reply.json()["outputs"][0]
    assert np.array_equal(np.reshape(out["data"], out["shape"]), loaded["churn"].predict_proba(ROWS))
    assert ROWS["home city"].isna().any() or ROWS["income.k"].isna().any() or ROWS["visits"].isna().any()


def test_realizar_rows_as_objects_and_records(served):
    url, loaded, _ = served
    model = loaded["churn"]
    records = _records(ROWS)
    one = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": records[0],
                                             "options": {"return_probabilities": True}}).json()
    assert one["prediction"] == model.predict(ROWS.iloc[:1])[0]
    assert one["probabilities"] == model.predict_proba(ROWS.iloc[:1])[0].tolist()
    many = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": records}).json()
    assert many["prediction"] == model.predict(ROWS).tolist()
    batch = httpx.post(f"{url}/predict/batch", json={"model_id": "churn",
                                                     "instances": [{"features": r} for r in records]}).json()
    assert [p["prediction"] for p in batch["predictions"]] == model.predict(ROWS).tolist()
    bad = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": {**records[0], "agee": 3}})
    assert bad.status_code == 400 and "unknown column 'agee'" in bad.json()["error"]
    wrong = httpx.post(f"{url}/predict", json={"model_id": "churn", "features": {**records[0], "age": "old"}})
    assert wrong.status_code == 400 and "'age' holds numbers" in wrong.json()["error"]


@pytest.mark.parametrize("payload", ["dataframe_split", "dataframe_records", "instances", "inputs", "csv"])
def test_mlflow_scoring_protocol(served, payload):
    url, loaded, _ = served
    records = _records(ROWS)
    columns = list(FRAME.columns)
    if payload == "csv":
        content, kind = ROWS.to_csv(index=False).encode(), "text/csv"
    else:
        body = {"dataframe_split": {"columns": columns, "data": [[r[c] for c in columns] for r in records]},
                "dataframe_records": records,
                "instances": records,
                "inputs": {c: [r[c] for r in records] for c in columns}}[payload]
        content, kind = pd.io.json.ujson_dumps({payload: body}).encode(), "application/json"
    reply = httpx.post(f"{url}/invocations?model=churn", content=content, headers={"Content-Type": kind})
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"predictions": loaded["churn"].predict(ROWS).tolist()}


def test_mlflow_needs_a_model_name_when_several_are_served(served):
    url, _, _ = served
    reply = httpx.post(f"{url}/invocations", json={"instances": [[1.0]]})
    assert reply.status_code == 400 and "several models are served" in reply.json()["error"]
    assert httpx.get(f"{url}/ping").status_code == 200


def test_hgb_with_category_columns(served):
    url, loaded, hgb_frame = served
    rows = hgb_frame.iloc[:8]
    records = _records(rows)
    reply = httpx.post(f"{url}/predict", json={"model_id": "hgb", "features": records,
                                               "options": {"return_probabilities": True}}).json()
    model = loaded["hgb"]
    assert reply["prediction"] == model.predict(rows).tolist()
    assert reply["probabilities"] == model.predict_proba(rows).tolist()


def test_text_model_takes_strings_in_every_protocol(served):
    url, loaded, _ = served
    model = loaded["reviews"]
    docs = ["très bien", "broken and terrible", "großartig"]
    client = triton.InferenceServerClient(url.removeprefix("http://"))
    tensor = triton.InferInput("text", [len(docs)], "BYTES")
    tensor.set_data_from_numpy(np.array(docs, dtype=object))
    result = client.infer("reviews", [tensor], outputs=[triton.InferRequestedOutput("predict_proba")])
    assert np.array_equal(result.as_numpy("predict_proba"), model.predict_proba(docs))
    one = httpx.post(f"{url}/predict", json={"model_id": "reviews", "features": docs[0]}).json()
    assert one["prediction"] == model.predict(docs[:1])[0]
    many = httpx.post(f"{url}/predict", json={"model_id": "reviews", "features": docs}).json()
    assert many["prediction"] == model.predict(docs).tolist()
    generated = httpx.post(f"{url}/api/generate", json={"model": "reviews", "prompt": docs[1], "stream": False})
    assert generated.json()["response"] == f'"{model.predict(docs[1:2])[0]}"'
    mlflow = httpx.post(f"{url}/invocations?model=reviews", json={"inputs": docs})
    assert mlflow.json() == {"predictions": model.predict(docs).tolist()}


def test_csv_with_a_missing_string():
    from aprender.serve._inputs import BYTES, FP64, Column, Inputs

    inputs = Inputs("frame", 2, (Column("x", FP64), Column("c", BYTES)))
    frame = inputs.from_columns(pd.read_csv(io.StringIO("x,c\n1.5,\n,b\n")).to_dict(orient="list")).frame()
    assert frame["x"].tolist()[0] == 1.5 and np.isnan(frame["x"].tolist()[1])
    assert frame["c"].isna().tolist() == [True, False] and frame["c"][1] == "b"


def test_concurrent_dataframe_requests_are_batched_and_each_answer_is_exact(served, monkeypatch, tmp_path):
    """Requests that queue while a call runs go in one call (one ColumnTransformer.transform for all
    their rows), yet each answer has the bits of the pipeline's own predict_proba on that request's
    DataFrame alone, which a plain merged predict_proba does not give (BLAS sums a matrix-vector
    product in another order than one row's dot product)."""
    from aprender.serve import _models

    _, loaded, _ = served
    model = loaded["churn"]
    aprender.save(model, tmp_path / "churn.apr")
    gate, entered, calls = threading.Event(), threading.Event(), []
    real_runner = _models._runner

    def held_runner(loaded_model, outputs):
        run = real_runner(loaded_model, outputs)

        def held(X):
            calls.append(X.bounds)
            if len(calls) == 1:  # the first call waits until the others have queued behind it
                entered.set()
                gate.wait(30)
            return run(X)

        return held

    monkeypatch.setattr(_models, "_runner", held_runner)
    sizes = [1, 3, 1, 2, 5, 1, 4, 1, 2]
    starts = np.cumsum([0, *sizes])
    frames = [FRAME.iloc[a:b] for a, b in itertools.pairwise(starts)]

    def body(rows):
        return {"model_id": "churn:1", "features": _records(rows), "options": {"return_probabilities": True}}

    async def scenario():
        async with httpx.AsyncClient(base_url=url) as client:
            first = asyncio.ensure_future(client.post("/predict", json=body(frames[0])))
            while not entered.is_set():
                await asyncio.sleep(0.01)
            rest = [asyncio.ensure_future(client.post("/predict", json=body(f))) for f in frames[1:]]
            while (await client.get("/v1/metrics")).json()["queue_depth"] < len(rest):
                await asyncio.sleep(0.01)
            gate.set()
            return [await first] + [await r for r in rest]

    with serving(ServeConfig((str(tmp_path / "churn.apr"),))) as url:
        meta = httpx.get(f"{url}/v2/models/churn").json()["parameters"]
        assert "batched exactly" in meta["warmup"] and meta["max_batch_size"] == 64
        calls.clear()  # (the readiness probe's calls)
        answers = asyncio.run(scenario())
    # the queued requests went in one call (in the order they arrived, which the connections decide)
    assert calls[0] == (1,) and sorted(calls[1]) == sorted(sizes[1:])
    for rows, answer in zip(frames, answers, strict=True):
        got = answer.json()
        assert answer.status_code == 200, answer.text
        assert np.array_equal(np.array(got["probabilities"]), model.predict_proba(rows))  # bit for bit
        assert got["prediction"] == model.predict(rows).tolist()


def test_only_row_exact_transforms_are_batched():
    """A transform whose rows depend on the batch's arithmetic (PCA's matrix product) or on unknown
    code (FunctionTransformer) keeps batching off; scalers and encoders get it."""
    from aprender.decomposition import PCA
    from aprender.preprocessing import FunctionTransformer
    from aprender.serve._inputs import describe_inputs
    from aprender.serve._models import _split

    numbers = FRAME[["age", "income.k"]].fillna(0.0)
    outputs = ("predict", "predict_proba")
    for head, batched in ((StandardScaler(), True), (PCA(n_components=2), False),
                          (FunctionTransformer(np.log1p), False)):
        columns = ColumnTransformer([("num", head, ["age", "income.k"])])
        model = make_pipeline(columns, LogisticRegression()).fit(numbers, LABELS)
        inputs = describe_inputs(model)
        assert inputs.kind == "frame"
        assert (_split(model, outputs, inputs) is not None) is batched, head


def test_a_large_request_is_transformed_in_slices_with_the_same_bits(served):
    """A request of more rows than one slice: the transforms run slice by slice (so that the thread
    gives the event loop the GIL back between them), and the answer is the pipeline's own."""
    from aprender.serve import _rowwise
    from aprender.serve._inputs import describe_inputs
    from aprender.serve._models import _split

    _, loaded, _ = served
    model = loaded["churn"]
    rows = FRAME.sample(_rowwise._SLICE * 2 + 5, replace=True, random_state=0).reset_index(drop=True)
    inputs = describe_inputs(model)
    X = inputs.records(_records(rows))
    split = _split(model, ("predict", "predict_proba"), inputs)
    transforms = []
    real = split.transform
    split = _rowwise.Split(lambda f: transforms.append(len(f)) or real(f), split.final)
    got = split.run(X, ("predict", "predict_proba"))
    assert transforms == [_rowwise._SLICE, _rowwise._SLICE, 5]
    assert np.array_equal(got["predict_proba"], model.predict_proba(rows))
    assert got["predict"].tolist() == model.predict(rows).tolist()


def test_batched_pipelines_with_sparse_or_pandas_transforms_answer_each_request_exactly():
    """The final estimator gets each request's own rows whatever the transforms give: a sparse
    matrix (one-hot output kept sparse) or a DataFrame (set_output pandas)."""
    from aprender.serve._inputs import Frame, describe_inputs
    from aprender.serve._models import _split

    sparse = make_pipeline(ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["home city", "kind"]),
                                              ("num", StandardScaler(), ["age"])], sparse_threshold=1.0),
                           LogisticRegression(max_iter=500))
    frame_out = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["age", "income.k"])]),
                              LogisticRegression()).set_output(transform="pandas")
    data = FRAME[["age", "income.k", "home city", "kind"]].fillna({"income.k": 0.0})
    for model, columns in ((sparse, ["age", "home city", "kind"]), (frame_out, ["age", "income.k"])):
        model.fit(data[columns], LABELS)
        inputs = describe_inputs(model)
        split = _split(model, ("predict_proba",), inputs)
        assert split is not None
        parts = [data.iloc[a:b] for a, b in ((0, 1), (1, 5), (5, 7), (7, 20))]
        merged = Frame.concat([inputs.records(_records(p[list(inputs.names)])) for p in parts])
        got = split.run(merged, ("predict_proba",))["predict_proba"]
        expected = np.concatenate([model.predict_proba(p) for p in parts])
        assert np.array_equal(got, expected)


def test_columns_the_model_drops_take_any_value_or_none():
    """A column a ColumnTransformer drops is advertised as BYTES, takes strings, numbers or null, and may be
    left out; the answer equals the in-process predict on the same DataFrame."""
    frame = FRAME.assign(note=_RNG.choice(["vip", "new", None], _N), extra=_RNG.rand(_N))
    columns = ColumnTransformer([("num", StandardScaler(), ["age"]), ("skip", "drop", ["note"]),
                                 ("cat", OneHotEncoder(handle_unknown="ignore"), ["kind"])], remainder="drop")
    model = make_pipeline(columns, LogisticRegression(max_iter=500)).fit(frame, LABELS)
    rows = frame.iloc[:4]
    expected = model.predict(rows).tolist()
    with tempfile.TemporaryDirectory() as root:
        path = f"{root}/dropping.apr"
        aprender.save(model, path)
        with serving(ServeConfig((path,))) as url:
            meta = {i["name"]: i["datatype"] for i in httpx.get(f"{url}/v2/models/dropping").json()["inputs"]}
            assert meta["age"] == "FP64" and meta["kind"] == "BYTES"
            assert meta["note"] == "BYTES" and meta["extra"] == "BYTES"  # dropped: any value is taken
            records = _records(rows)
            got = httpx.post(f"{url}/predict", json={"model_id": "dropping", "features": records}).json()
            assert got["prediction"] == expected
            mixed = [{**r, "note": 7, "extra": "not a number"} for r in records]
            got = httpx.post(f"{url}/predict", json={"model_id": "dropping", "features": mixed}).json()
            assert got["prediction"] == expected
            kept = [{k: v for k, v in r.items() if k in ("age", "kind", "income.k", "home city", "visits")}
                    for r in records]  # the dropped columns left out
            got = httpx.post(f"{url}/predict", json={"model_id": "dropping", "features": kept}).json()
            assert got["prediction"] == expected
            body = {"inputs": [{"name": name, "datatype": "FP64" if name == "age" else "BYTES", "shape": [4],
                                "data": [r[name] for r in records]} for name in ("age", "kind", "note")]}
            v2 = httpx.post(f"{url}/v2/models/dropping/infer", json=body).json()
            assert v2["outputs"][0]["data"] == expected
            still = httpx.post(f"{url}/predict", json={"model_id": "dropping", "features": {**records[0], "age": "x"}})
            assert still.status_code == 400 and "'age' holds numbers" in still.json()["error"]
