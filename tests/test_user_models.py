"""Models users fit on real DataFrames save and load, and predict bit-identically (issue 27, section 1).

A ColumnTransformer that picks its columns with ``make_column_selector`` in a Pipeline
fitted on a DataFrame of strings, categories and nullable columns (``Int64``,
``boolean``, ``string`` with ``pd.NA``, NaN); RandomizedSearchCV and
HalvingRandomSearchCV over frozen ``scipy.stats`` distributions; IterativeImputer;
searches with custom scorers, TransformedTargetRegressor, FunctionTransformer and a
text column. Each goes through SafeTensors, ``.apr`` (plain, zstd, memory mapped) and
GGUF files, and the loaded model keeps working: it predicts the same bits, and fits
again as the original would.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor, make_column_selector
from sklearn.experimental import enable_halving_search_cv, enable_iterative_imputer  # noqa: F401
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import IterativeImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.metrics import f1_score, make_scorer
from sklearn.model_selection import GridSearchCV, ParameterSampler, RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
from sklearn.tree import DecisionTreeRegressor
from user_models import fitted_search, frame, labels, missing, quiet, selector_pipeline

import aprender
from aprender.cli import main as cli_main

#: (suffix, save options, load options) of every file a test writes.
FILES = {
    "safetensors": (".safetensors", {}, {}),
    "apr": (".apr", {}, {}),
    "apr-zstd": (".apr", {"compression": "zstd"}, {}),
    "apr-mmap": (".apr", {}, {"mmap": True}),
    "gguf": (".gguf", {}, {}),
}


def round_trips(model: Any, tmp_path: Path) -> list[Any]:
    """``model`` saved to and loaded from every file of :data:`FILES`."""
    loaded = []
    for name, (suffix, save_options, load_options) in FILES.items():
        path = tmp_path / f"{name}{suffix}"
        quiet(lambda: aprender.save(model, path, **save_options))  # noqa: B023 - called at once
        loaded.append(aprender.load(path, **load_options))
    return loaded


def described(distributions: Any) -> Any:
    """``param_distributions`` with each frozen distribution as (name, args, kwds)."""
    if isinstance(distributions, list):
        return [described(d) for d in distributions]
    return {k: (v.dist.name, v.args, v.kwds) if hasattr(v, "rvs") else v for k, v in distributions.items()}


def same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and (
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f") if a.dtype.kind in "fc" else np.array_equal(a, b))


# -- ColumnTransformer with make_column_selector -------------------------------------------


@cache
def _fitted_selector_pipeline() -> Any:
    df = frame()
    return quiet(lambda: selector_pipeline().fit(df, labels(df)))


def test_column_selector_pipeline_predicts_bit_identically(tmp_path: Path) -> None:
    model, new = _fitted_selector_pipeline(), frame(40, seed=1)
    assert isinstance(model[0].transformers[0][2], make_column_selector)
    for loaded in round_trips(model, tmp_path):
        assert same(loaded.predict(new), model.predict(new))
        assert same(loaded.predict_proba(new), model.predict_proba(new))
        assert loaded[0].transformers_[1][2] == ["city", "colour", "member", "code"]


def test_loaded_selectors_select_again_when_the_model_is_fitted_anew(tmp_path: Path) -> None:
    model = _fitted_selector_pipeline()
    (loaded, *_) = round_trips(model, tmp_path)
    for (_, _, mine), (_, _, theirs) in zip(loaded[0].transformers, model[0].transformers, strict=True):
        if isinstance(theirs, make_column_selector):
            assert type(mine) is make_column_selector and vars(mine) == vars(theirs)
    df = frame(60, seed=2)
    again, reference = quiet(lambda: loaded.fit(df, labels(df))), quiet(lambda: clone(model).fit(df, labels(df)))
    assert same(again.predict_proba(df), reference.predict_proba(df))


@pytest.mark.parametrize("selector", [
    make_column_selector(dtype_include=[np.floating, np.integer], dtype_exclude=(bool, np.bool_)),
    make_column_selector(dtype_include=pd.CategoricalDtype()),
    make_column_selector(dtype_include=(object, "str", pd.StringDtype(), pd.BooleanDtype())),
    make_column_selector(pattern=r"^inc.*\.k$"),
    make_column_selector(dtype_exclude=[np.number, "datetime", "timedelta", "datetimetz", pd.Int64Dtype(),
                                        "category", "boolean"]),
], ids=["abstract-numpy", "categorical-dtype", "tuple-of-strings", "pattern", "exclude"])
def test_every_kind_of_dtype_spec_round_trips(selector: make_column_selector, tmp_path: Path) -> None:
    df = frame(30)
    ct = ColumnTransformer([("kept", "passthrough", selector)]).set_output(transform="pandas").fit(df)
    (loaded, *_) = round_trips(ct, tmp_path)
    chosen = loaded.transformers[0][2]
    assert vars(chosen).keys() == vars(selector).keys()
    for key, value in vars(selector).items():
        assert repr(getattr(chosen, key)) == repr(value) and type(getattr(chosen, key)) is type(value)
    assert chosen(df) == selector(df) and selector(df)
    assert loaded.transform(df).equals(ct.transform(df))


# -- searches over scipy.stats distributions ----------------------------------------------


@pytest.mark.parametrize("kind", ["dict", "list", "halving"])
def test_search_over_distributions_predicts_and_refits_the_same(kind: str, tmp_path: Path) -> None:
    search, X, y = fitted_search(kind)
    for loaded in round_trips(search, tmp_path):
        assert same(loaded.predict_proba(X), search.predict_proba(X))
        assert loaded.best_params_ == search.best_params_
        assert described(loaded.param_distributions) == described(search.param_distributions)
    # Fitting the loaded search again draws the same candidates as fitting the original again.
    again = quiet(lambda: clone(loaded).fit(X, y))
    reference = quiet(lambda: clone(search).fit(X, y))
    assert again.best_params_ == reference.best_params_
    assert same(again.cv_results_["mean_test_score"], reference.cv_results_["mean_test_score"])


def test_what_lies_under_a_mask_is_not_written(tmp_path: Path) -> None:
    """cv_results_["param_*"] of a list of grids are np.empty under their masks: zeros go to the file."""
    search = fitted_search("list")[0]
    column = search.cv_results_["param_fit_intercept"]
    assert column.dtype == bool and column.mask.any()
    saved = []
    for junk in (0, 1):
        column.data.view(np.uint8)[column.mask] = 7 * junk  # 7 is no bool: a GGUF reader refuses it
        saved.append(aprender.format.safetensors.dumps(search))
        aprender.save(search, tmp_path / f"s{junk}.gguf")
        loaded = aprender.load(tmp_path / f"s{junk}.gguf")
        got = loaded.cv_results_["param_fit_intercept"]
        assert np.array_equal(got.mask, column.mask) and np.array_equal(got[~got.mask], column[~column.mask])
        assert not got.data[got.mask].any()
    assert saved[0] == saved[1]


def test_a_distribution_keeps_its_own_random_state(tmp_path: Path) -> None:
    search, _, _ = fitted_search("dict")
    state = search.param_distributions["C"].random_state.get_state()
    assert search.param_distributions["tol"].random_state is np.random.mtrand._rand
    for loaded in round_trips(search, tmp_path):
        copy = np.random.RandomState()
        copy.set_state(state)
        drawn = loaded.param_distributions["C"].rvs(size=5)
        assert same(drawn, stats.loguniform(1e-2, 10.0).rvs(size=5, random_state=copy))
        # scipy's default, NumPy's global generator, stays the global one
        assert loaded.param_distributions["tol"].random_state is np.random.mtrand._rand


@pytest.mark.parametrize("name", ["uniform", "loguniform", "reciprocal", "norm", "expon", "gamma", "beta", "lognorm",
                                  "truncnorm", "randint", "poisson", "geom", "binom", "bernoulli"])
def test_each_common_distribution_samples_the_same_after_loading(name: str, tmp_path: Path) -> None:
    args = {"uniform": (0.1, 2.0), "loguniform": (1e-4, 1.0), "reciprocal": (1e-4, 1.0), "norm": (0.0, 2.0),
            "expon": (0.0, 0.5), "gamma": (2.0,), "beta": (2.0, 3.0), "lognorm": (0.5,), "truncnorm": (-1.0, 2.0),
            "randint": (1, 20), "poisson": (3.0,), "geom": (0.3,), "binom": (10, 0.4), "bernoulli": (0.3,)}[name]
    dist = getattr(stats, name)(*args)
    sampler = ParameterSampler({"alpha": dist}, n_iter=6, random_state=3)
    search = RandomizedSearchCV(Ridge(), {"alpha": dist}, n_iter=2, cv=2, random_state=0)
    quiet(lambda: search.fit(np.random.RandomState(0).rand(20, 2), np.arange(20.0)))
    (loaded, *_) = round_trips(search, tmp_path)
    again = ParameterSampler(loaded.param_distributions, n_iter=6, random_state=3)
    assert [p["alpha"] for p in again] == [p["alpha"] for p in sampler]


def test_a_distribution_object_passed_unfrozen_loads_as_scipys_own(tmp_path: Path) -> None:
    search = RandomizedSearchCV(Ridge(), {"alpha": stats.expon}, n_iter=3, cv=2, random_state=0)
    X, y = np.random.RandomState(0).rand(20, 2), np.arange(20.0)
    quiet(lambda: search.fit(X, y))
    for loaded in round_trips(search, tmp_path):
        assert loaded.param_distributions["alpha"] is stats.expon
        assert quiet(lambda: clone(loaded).fit(X, y)).best_params_ == search.best_params_  # noqa: B023


# -- IterativeImputer ----------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    {},
    {"add_indicator": True, "sample_posterior": True},
    {"n_nearest_features": 2, "imputation_order": "random", "max_iter": 3},
    {"keep_empty_features": True, "min_value": -1.0, "max_value": 1.0},
    {"estimator": DecisionTreeRegressor(max_depth=3, random_state=0), "max_iter": 2, "skip_complete": True},
], ids=["default", "indicator-posterior", "nearest-random", "keep-empty-bounded", "tree"])
def test_iterative_imputer_transforms_bit_identically(params: dict, tmp_path: Path) -> None:
    X = missing()
    if params.get("keep_empty_features"):  # scikit-learn writes into the DataFrame's read-only array there
        X = X.to_numpy().copy()
    imputer = quiet(lambda: IterativeImputer(random_state=0, **params).fit(X))
    assert imputer.imputation_sequence_
    # sample_posterior draws from random_state_, which transform advances: each loaded copy starts where the
    # saved imputer was, before the transform that gives the expected output
    loaded_copies = round_trips(imputer, tmp_path)
    expected = quiet(lambda: imputer.transform(X))
    for loaded in loaded_copies:
        got = quiet(lambda: loaded.transform(X))  # noqa: B023 - called at once
        assert same(got, expected)
        assert list(getattr(loaded, "feature_names_in_", [])) == list(getattr(X, "columns", []))
        assert np.array_equal(loaded.get_feature_names_out(), imputer.get_feature_names_out())


def test_iterative_imputer_in_a_dataframe_pipeline(tmp_path: Path) -> None:
    X = missing().drop(columns="empty")
    y = np.nan_to_num(X["a"].to_numpy()) > 0
    model = quiet(lambda: make_pipeline(IterativeImputer(random_state=0, max_iter=3), LogisticRegression()).fit(X, y))
    for loaded in round_trips(model, tmp_path):
        assert same(loaded.predict_proba(X), model.predict_proba(X))


# -- searches with scorers, target transforms, functions, text -----------------------------


@pytest.mark.parametrize("scoring", [
    make_scorer(f1_score, average="macro"),
    {"f1": make_scorer(f1_score, average="macro"), "auc": "roc_auc"},
    "roc_auc",
], ids=["make_scorer-f1-macro", "dict-of-scorers", "roc_auc"])
def test_grid_search_with_its_scoring_round_trips(scoring: Any, tmp_path: Path) -> None:
    rng = np.random.RandomState(0)
    X, y = rng.rand(40, 3), (rng.rand(40) > 0.5).astype(int)
    refit = "auc" if isinstance(scoring, dict) else True
    search = quiet(lambda: GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, scoring=scoring, refit=refit,
                                         cv=2).fit(X, y))
    for loaded in round_trips(search, tmp_path):
        assert same(loaded.predict_proba(X), search.predict_proba(X))
        assert loaded.score(X, y) == search.score(X, y)
        assert loaded.best_params_ == search.best_params_


def test_transformed_target_regressor_and_function_transformer(tmp_path: Path) -> None:
    rng = np.random.RandomState(0)
    X, y = rng.rand(40, 3), rng.rand(40) * 10
    ttr = TransformedTargetRegressor(LinearRegression(), func=np.log1p, inverse_func=np.expm1).fit(X, y)
    ft = make_pipeline(FunctionTransformer(np.log1p), Ridge()).fit(X, y)
    for model in (ttr, ft):
        for loaded in round_trips(model, tmp_path):
            assert same(loaded.predict(X), model.predict(X))
    assert round_trips(ttr, tmp_path)[0].func is np.log1p


def test_text_column_pipeline(tmp_path: Path) -> None:
    df = frame()
    model = make_pipeline(ColumnTransformer([("text", TfidfVectorizer(), "review"),
                                             ("city", OneHotEncoder(), ["city"])]), LogisticRegression())
    model = quiet(lambda: model.fit(df, labels(df)))
    for loaded in round_trips(model, tmp_path):
        assert same(loaded.predict_proba(df), model.predict_proba(df))


def test_encoders_of_a_date_column(tmp_path: Path) -> None:
    from sklearn.preprocessing import OrdinalEncoder

    df = frame()
    df["joined"] = pd.to_datetime("2024-01-01") + pd.to_timedelta(df["visits"].fillna(0).astype(int) * 30, unit="D")
    model = make_pipeline(ColumnTransformer([("date", OneHotEncoder(handle_unknown="ignore"), ["joined"]),
                                             ("ord", OrdinalEncoder(), ["joined"])]), LogisticRegression())
    model = quiet(lambda: model.fit(df, labels(df)))
    assert model[0].transformers_[0][1].categories_[0].dtype.kind == "M"
    for loaded in round_trips(model, tmp_path):
        assert same(loaded.predict_proba(df), model.predict_proba(df))
        assert loaded[0].transformers_[0][1].categories_[0].dtype == model[0].transformers_[0][1].categories_[0].dtype


def test_a_vocabulary_given_as_a_set(tmp_path: Path) -> None:
    docs = frame()["review"].tolist()
    for vocabulary in ({"good", "awful", "service"}, frozenset({"food", "slow"})):
        model = TfidfVectorizer(vocabulary=vocabulary).fit(docs)
        for loaded in round_trips(model, tmp_path):
            assert loaded.vocabulary == vocabulary and type(loaded.vocabulary) is type(vocabulary)
            assert (loaded.transform(docs) != model.transform(docs)).nnz == 0


def test_a_vectorizer_preprocessed_with_a_builtin_method(tmp_path: Path) -> None:
    """``preprocessor=str.lower`` is stored by name; as any function outside the default table, it loads if trusted."""
    from aprender.exceptions import UntrustedFunctionError

    docs = frame()["review"].str.upper().tolist()
    model = TfidfVectorizer(preprocessor=str.lower).fit(docs)
    path = tmp_path / "v.apr"
    aprender.save(model, path)
    with pytest.raises(UntrustedFunctionError, match=r"builtins\.str\.lower"):
        aprender.load(path)
    loaded = aprender.load(path, trusted=[str.lower])
    assert loaded.preprocessor is str.lower and (loaded.transform(docs) != model.transform(docs)).nnz == 0


def test_the_cli_validates_inspects_and_converts_a_dataframe_pipeline(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "churn.apr"
    quiet(lambda: aprender.save(_fitted_selector_pipeline(), path))
    assert cli_main(["validate", str(path)]) == 0
    assert cli_main(["inspect", str(path), "--json"]) == 0
    assert "Pipeline" in capsys.readouterr().out
    converted = tmp_path / "churn.safetensors"
    assert cli_main(["convert", str(path), "--format", "safetensors", "-o", str(converted)]) == 0
    df = frame(30, seed=3)
    assert same(aprender.load(converted).predict_proba(df), _fitted_selector_pipeline().predict_proba(df))
