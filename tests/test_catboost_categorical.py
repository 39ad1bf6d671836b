"""CatBoost models fitted with ``cat_features`` on string columns, saved and loaded back predicting bit-identically.

One-hot and CTR splits, CTRs over combinations of categorical values, float borders and
one-hot values, unseen categories and missing numbers at predict time; alone and inside a
scikit-learn Pipeline; SafeTensors, .apr and GGUF. Text features stay refused at save,
and ONNX export says why it cannot take categorical features.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

catboost = pytest.importorskip("catboost", reason="CatBoost is an optional extra: pip install 'aprender[catboost]'")
pd = pytest.importorskip("pandas", reason="CatBoost's categorical features come from a DataFrame here")

from catboost_models import CATEGORICAL, FRAME, QUIET, UNSEEN  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402

import aprender  # noqa: E402
from aprender.codec import to_state  # noqa: E402
from aprender.exceptions import AprenderError, UnsupportedTypeError  # noqa: E402

DATA = pd.concat([FRAME.iloc[:60], UNSEEN], ignore_index=True)


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return {case: fit() for case, fit in CATEGORICAL.items()}


def outputs(model: Any, data: Any = DATA) -> dict[str, np.ndarray]:
    out = {"predict": np.asarray(model.predict(data))}
    if hasattr(model, "predict_proba"):
        out["predict_proba"] = model.predict_proba(data)
    booster = model[-1] if isinstance(model, Pipeline) else model
    out["raw"] = booster.predict(data if booster is model else model[:-1].transform(data),
                                 prediction_type="RawFormulaVal")
    return out


def assert_same(model: Any, loaded: Any) -> None:
    assert type(loaded) is type(model)
    for method, value in outputs(model).items():
        np.testing.assert_array_equal(outputs(loaded)[method], value, err_msg=method)


def test_the_cases_split_every_way(models: dict[str, Any]) -> None:
    """The models exercise what is stored: both split kinds besides float ones, every CTR table type a default
    fit makes, and every kind of combination element."""
    tensors = {case: to_state(m).tensors for case, m in models.items()}
    kinds = {k for t in tensors.values() for k in t["_object.split_kind"].tolist()}
    elements = {k for t in tensors.values() for k in t["_object.element_kind"].tolist()}
    tables = {k for t in tensors.values() for k in t["_object.table_type"].tolist()}
    assert kinds == {0, 1, 2} and elements == {0, 1, 2} and tables == {0, 2}  # Borders and Counter
    assert tensors["categorical-multiclass"]["_object.one_hot_values"].size == 0  # every column through CTRs


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("case", list(CATEGORICAL))
def test_roundtrip_every_format(models: dict[str, Any], case: str, suffix: str, tmp_path: Path) -> None:
    model = models[case]
    aprender.save(model, tmp_path / f"m.{suffix}")
    loaded = aprender.load(tmp_path / f"m.{suffix}")
    assert_same(model, loaded)
    assert loaded.get_params() == model.get_params()
    assert loaded.feature_names_ == model.feature_names_ and loaded.n_features_in_ == model.n_features_in_
    assert loaded.get_cat_feature_indices() == model.get_cat_feature_indices()


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
def test_saves_are_byte_identical(models: dict[str, Any], suffix: str, tmp_path: Path) -> None:
    """The same model saved twice is the same bytes; saved again after a load it predicts the same (CatBoost
    may list a hash table in another order then, as its own JSON reload does)."""
    model = models["categorical-binary"]
    aprender.save(model, tmp_path / f"a.{suffix}")
    aprender.save(model, tmp_path / f"b.{suffix}")
    assert (tmp_path / f"a.{suffix}").read_bytes() == (tmp_path / f"b.{suffix}").read_bytes()
    aprender.save(aprender.load(tmp_path / f"a.{suffix}"), tmp_path / f"c.{suffix}")
    assert_same(model, aprender.load(tmp_path / f"c.{suffix}"))


def test_categorical_columns_only(tmp_path: Path) -> None:
    """No float feature at all: the model is its categorical features."""
    frame = FRAME[["colour", "city"]]
    model = catboost.CatBoostClassifier(iterations=5, depth=3, cat_features=[0, 1], **QUIET).fit(
        frame, FRAME["city"].isin(["city1", "city2", "city3"]) | (FRAME["colour"] == "red"))
    aprender.save(model, tmp_path / "m.apr")
    loaded = aprender.load(tmp_path / "m.apr")
    data = pd.concat([frame, UNSEEN[["colour", "city"]]])
    np.testing.assert_array_equal(loaded.predict_proba(data), model.predict_proba(data))


@pytest.mark.parametrize("by", ["name", "index"])
def test_inside_a_pipeline(by: str, tmp_path: Path) -> None:
    numbers, strings = ["x0", "x1"], ["colour", "city", "shop"]
    prepare = ColumnTransformer([("num", SimpleImputer(), numbers), ("cat", "passthrough", strings)],
                                verbose_feature_names_out=False).set_output(transform="pandas")
    cats = strings if by == "name" else [2, 3, 4]
    pipe = Pipeline([("prepare", prepare), ("model", catboost.CatBoostRegressor(
        iterations=6, depth=4, cat_features=cats, one_hot_max_size=4, **QUIET))])
    pipe.fit(FRAME, np.nan_to_num(FRAME["x1"].to_numpy()) + (FRAME["colour"] == "red"))
    for suffix in ("safetensors", "apr"):
        aprender.save(pipe, tmp_path / f"p.{suffix}")
        assert_same(pipe, aprender.load(tmp_path / f"p.{suffix}"))


def test_fresh_process_predicts_identically(models: dict[str, Any], tmp_path: Path) -> None:
    cases = {}
    for case, model in models.items():
        path = tmp_path / f"{case}.apr"
        aprender.save(model, path)
        np.save(tmp_path / f"{case}.npy", getattr(model, "predict_proba", model.predict)(DATA))
        cases[case] = str(path)
    DATA.to_csv(tmp_path / "data.csv", index=False)
    code = textwrap.dedent("""
        import json, sys
        import numpy as np, pandas as pd
        import aprender
        data = pd.read_csv(sys.argv[2], keep_default_na=False, na_values={"x0": [""], "x1": [""]})
        out = {}
        for case, path in json.loads(sys.argv[1]).items():
            m = aprender.load(path)
            out[case] = bool(np.array_equal(getattr(m, "predict_proba", m.predict)(data), np.load(path[:-4] + ".npy")))
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cases), str(tmp_path / "data.csv")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == dict.fromkeys(cases, True)


@pytest.mark.parametrize("labels", ["binary", "multiclass"])
def test_bucket_ctrs(labels: str, tmp_path: Path) -> None:
    """Buckets tables hold one count per class (the default CTRs hold Borders and Counter tables)."""
    y = FRAME["city"].str.slice(4).astype(int) % (2 if labels == "binary" else 3)
    model = catboost.CatBoostClassifier(iterations=5, depth=4, cat_features=["colour", "city", "shop"],
                                        simple_ctr=["Buckets"], combinations_ctr=["Buckets"], **QUIET).fit(FRAME, y)
    tensors = to_state(model).tensors
    assert set(tensors["_object.table_type"].tolist()) == {1}
    assert set(tensors["_object.table_stride"].tolist()) == {1 + (2 if labels == "binary" else 3)}
    aprender.save(model, tmp_path / "m.safetensors")
    assert_same(model, aprender.load(tmp_path / "m.safetensors"))


def test_a_feature_freq_table_is_read_as_catboost_reads_it(models: dict[str, Any], tmp_path: Path) -> None:
    """FeatureFreq (a GPU fit's CTR) keeps its counts as Counter does: a Counter table relabelled loads and predicts
    the same."""
    from aprender.codec import ModelState
    from aprender.codec.schemas._catboost_ctrs import CTR_TYPES
    from aprender.format import safetensors

    model = models["categorical-binary"]
    state = to_state(model)
    tensors = dict(state.tensors)
    kinds = tensors["_object.table_type"].copy()
    assert CTR_TYPES.index("Counter") in kinds
    kinds[kinds == CTR_TYPES.index("Counter")] = CTR_TYPES.index("FeatureFreq")
    tensors["_object.table_type"] = kinds
    (tmp_path / "m.safetensors").write_bytes(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=state.meta)))
    assert_same(model, aprender.load(tmp_path / "m.safetensors"))


def test_mean_value_ctrs_are_refused_at_save(tmp_path: Path) -> None:
    ctr = ["BinarizedTargetMeanValue"]
    model = catboost.CatBoostClassifier(iterations=6, depth=4, cat_features=["colour", "city", "shop"], **QUIET,
                                        simple_ctr=ctr, combinations_ctr=ctr).fit(FRAME, FRAME["shop"] < "shop4")
    with pytest.raises(UnsupportedTypeError, match="BinarizedTargetMeanValue CTRs are not stored"):
        aprender.save(model, tmp_path / "m.apr")


def test_text_features_are_refused_at_save(tmp_path: Path) -> None:
    rs = np.random.RandomState(0)
    words = np.array(["red apple", "green pear", "blue sky", "grey cloud"])
    frame = pd.DataFrame({"x": rs.rand(200), "text": words[rs.randint(0, 4, 200)]})
    model = catboost.CatBoostClassifier(iterations=3, depth=2, text_features=["text"], **QUIET).fit(
        frame, frame["text"].str.startswith("red") | (frame["x"] > 0.8))
    with pytest.raises(UnsupportedTypeError, match="text or embedding features"):
        aprender.save(model, tmp_path / "m.apr")
    assert not (tmp_path / "m.apr").exists()


def test_onnx_refuses_categorical_features_with_the_reason(models: dict[str, Any], tmp_path: Path) -> None:
    """CatBoost's own ONNX export computes no CTR and aprender's converter takes no string column."""
    with pytest.raises(AprenderError, match="categorical"):
        aprender.save(models["categorical-binary"], tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


def test_the_docs_snippet_runs(tmp_path: Path) -> None:
    page = (Path(__file__).parent.parent / "docs" / "catboost.md").read_text()
    snippet = page.split("## Categorical features", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "categorical.safetensors").exists()


def test_inspect_counts_the_categorical_features(models: dict[str, Any], tmp_path: Path) -> None:
    from aprender.cli._boosters import booster_summaries

    model = models["categorical-regressor"]
    (summary,) = booster_summaries(to_state(model).meta["model"], {})
    assert summary["n_features"] == model.n_features_in_ == 5
    assert summary["library_version"] == catboost.__version__
