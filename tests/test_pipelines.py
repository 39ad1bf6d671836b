"""Pipelines and ColumnTransformers: nested tensor names, plain and mixed sklearn models,
GridSearchCV's best estimator, DataFrame inputs, and hostile step structures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import safetensors.numpy as official
from cases_pipelines import CORPUS, NEWTON, TOPICS, frame, texts
from sklearn import compose as sk_compose
from sklearn import linear_model as sk_linear
from sklearn import pipeline as sk_pipeline
from sklearn import preprocessing as sk_pre
from sklearn.decomposition import TruncatedSVD
from sklearn.model_selection import GridSearchCV
from state_edit import find, hostile
from zoo import assert_identical_outputs, diabetes, iris

import aprender
from aprender.codec import ModelType, to_state
from aprender.compose import ColumnTransformer, make_column_transformer
from aprender.exceptions import ModelTypeMismatch, UnsupportedTypeError
from aprender.feature_extraction.text import TfidfVectorizer
from aprender.linear_model import LogisticRegression, Ridge
from aprender.pipeline import Pipeline, make_pipeline
from aprender.preprocessing import MinMaxScaler, OneHotEncoder, StandardScaler

#: Also run under the oldest supported scikit-learn (.ci/run, docs/compatibility.md).
pytestmark = pytest.mark.lower_bound


def _roundtrip(model, tmp_path, expected=None):
    path = tmp_path / "model.safetensors"
    aprender.save(model, path)
    return aprender.load(path, expected), path


def _scaler_logistic() -> Pipeline:
    return Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(solver=NEWTON))]).fit(*iris())


def _frame_pipeline(ct_cls=ColumnTransformer, pipe_cls=Pipeline):
    prep = ct_cls([
        ("cat", OneHotEncoder(handle_unknown="ignore"), ["petal_size", "sepal_shape"]),
        ("num", StandardScaler(), ["sepal_length", "sepal_width", "petal_width"]),
    ])
    return pipe_cls([("prep", prep), ("clf", LogisticRegression(solver=NEWTON))]).fit(frame(), iris()[1])


# -- layout ----------------------------------------------------------------------------


def test_step_tensors_are_prefixed_with_index_and_name(tmp_path) -> None:
    pipe = _scaler_logistic()
    loaded, path = _roundtrip(pipe, tmp_path, ModelType.PIPELINE)
    tensors = official.load_file(str(path))
    assert sorted(tensors) == [
        "steps.0.scale.mean_", "steps.0.scale.scale_", "steps.0.scale.var_",
        "steps.1.clf.classes_", "steps.1.clf.coefficients", "steps.1.clf.intercept", "steps.1.clf.n_iter_",
    ]
    assert np.array_equal(tensors["steps.1.clf.coefficients"], pipe[-1].coef_)
    assert type(loaded) is Pipeline and [name for name, _ in loaded.steps] == ["scale", "clf"]
    assert type(loaded[0]) is StandardScaler and type(loaded[-1]) is LogisticRegression


def test_column_transformer_tensors_nest_under_transformers_(tmp_path) -> None:
    pipe = _frame_pipeline()
    _, path = _roundtrip(pipe, tmp_path)
    names = sorted(official.load_file(str(path)))
    assert "steps.0.prep.transformers_.1.num.mean_" in names
    assert all(n.startswith(("steps.0.prep.transformers_.", "steps.1.clf.")) for n in names)


def test_make_pipeline_builds_aprender_pipelines() -> None:
    pipe = make_pipeline(MinMaxScaler(), Ridge(), verbose=False)
    assert type(pipe) is Pipeline and [n for n, _ in pipe.steps] == ["minmaxscaler", "ridge"]
    pipe.fit(*diabetes())
    assert type(pipe[:1]) is Pipeline  # slicing keeps the class, so slices save too
    ct = make_column_transformer((StandardScaler(), [0]), remainder="passthrough")
    assert type(ct) is ColumnTransformer and ct.transformers[0][0] == "standardscaler"


# -- exact roundtrips ----------------------------------------------------------------------


def test_frame_pipeline_roundtrip_on_dataframes(tmp_path) -> None:
    pipe = _frame_pipeline()
    loaded, _ = _roundtrip(pipe, tmp_path)
    df = frame()
    assert_identical_outputs(pipe, loaded, df)
    reordered = df[df.columns[::-1]]  # DataFrame columns are selected by name, not position
    assert np.array_equal(loaded.predict_proba(reordered), pipe.predict_proba(reordered))
    ct, loaded_ct = pipe[0], loaded[0]
    assert np.array_equal(loaded_ct.feature_names_in_, ct.feature_names_in_)
    assert np.array_equal(loaded_ct.get_feature_names_out(), ct.get_feature_names_out())
    assert loaded_ct.output_indices_ == ct.output_indices_
    with pytest.raises(ValueError, match="columns are missing"):
        loaded.predict(df.drop(columns="petal_size"))


@pytest.mark.parametrize("mixed", ["sklearn-outside", "aprender-outside"])
def test_mixed_aprender_and_sklearn_steps(mixed, tmp_path) -> None:
    if mixed == "sklearn-outside":
        pipe = _frame_pipeline(sk_compose.ColumnTransformer, sk_pipeline.Pipeline)
    else:
        prep = ColumnTransformer([("cat", sk_pre.OneHotEncoder(), ["petal_size"]), ("num", MinMaxScaler(), [0, 1])])
        pipe = Pipeline([("prep", prep), ("clf", sk_linear.LogisticRegression(solver=NEWTON))]).fit(frame(), iris()[1])
    loaded, _ = _roundtrip(pipe, tmp_path)
    assert type(loaded) is type(pipe) and type(loaded[0]) is type(pipe[0])
    classes = [type(t) for _, t, _ in loaded[0].transformers_]
    assert classes == [type(t) for _, t, _ in pipe[0].transformers_]
    assert_identical_outputs(pipe, loaded, frame())


def test_plain_sklearn_pipeline_loads_as_aprender_when_asked(tmp_path) -> None:
    pipe = sk_pipeline.make_pipeline(sk_pre.StandardScaler(), sk_linear.Ridge()).fit(*diabetes())
    path = tmp_path / "sk.safetensors"
    aprender.save(pipe, path)
    loaded = Pipeline.load_safetensors(path)
    assert type(loaded) is Pipeline and type(loaded[0]) is sk_pre.StandardScaler
    assert_identical_outputs(pipe, loaded, diabetes()[0])
    with pytest.raises(ModelTypeMismatch, match="expected COLUMN_TRANSFORMER"):
        aprender.load(path, ModelType.COLUMN_TRANSFORMER)


def test_passthrough_steps_and_remainder(tmp_path) -> None:
    X, y = iris()
    ct = ColumnTransformer([("scale", StandardScaler(), slice(0, 2)), ("gone", "drop", [2])],
                           remainder="passthrough")
    pipe = Pipeline([("ct", ct), ("nothing", "passthrough"), ("clf", LogisticRegression(solver=NEWTON))]).fit(X, y)
    loaded, _ = _roundtrip(pipe, tmp_path)
    assert loaded.steps[1] == ("nothing", "passthrough")
    assert type(loaded[0].transformers_[2][1]) is sk_pre.FunctionTransformer  # the fitted remainder
    assert loaded[0].transformers_[0][2] == slice(0, 2)
    assert_identical_outputs(pipe, loaded, X)


def test_text_pipeline_roundtrip(tmp_path) -> None:
    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("clf", LogisticRegression(solver=NEWTON))]).fit(CORPUS, TOPICS)
    loaded, path = _roundtrip(pipe, tmp_path)
    assert "steps.0.tfidf.idf" in official.load_file(str(path))
    assert_identical_outputs(pipe, loaded, texts())


def test_pandas_output_configuration_roundtrips(tmp_path) -> None:
    ct = ColumnTransformer([("num", StandardScaler(), ["sepal_length", "petal_width"])]).set_output(transform="pandas")
    ct.fit(frame())
    loaded, _ = _roundtrip(ct, tmp_path)
    out, expected = loaded.transform(frame()), ct.transform(frame())
    assert isinstance(out, pd.DataFrame)
    pd.testing.assert_frame_equal(out, expected, check_exact=True)


def test_grid_search_best_estimator_roundtrip(tmp_path) -> None:
    X, y = iris()
    pipe = Pipeline([("scale", MinMaxScaler()), ("clf", LogisticRegression(solver=NEWTON))])
    search = GridSearchCV(pipe, {"clf__C": [0.1, 10.0], "scale__feature_range": [(0, 1), (-1, 1)]}, cv=3).fit(X, y)
    best = search.best_estimator_
    loaded, _ = _roundtrip(best, tmp_path)
    assert type(loaded) is Pipeline and loaded.get_params()["clf__C"] == search.best_params_["clf__C"]
    assert loaded.get_params()["scale__feature_range"] == search.best_params_["scale__feature_range"]
    assert_identical_outputs(best, loaded, X)
    assert np.array_equal(search.predict(X), loaded.predict(X))


def test_unfitted_pipeline_is_refused() -> None:
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        to_state(Pipeline([("scale", StandardScaler()), ("clf", Ridge())]))


class _UserSVD(TruncatedSVD):
    """A user's own subclass: not on the allow-list until registered."""


def test_pipeline_with_an_unregistered_step_names_the_step() -> None:
    pipe = sk_pipeline.Pipeline([("svd", _UserSVD(n_components=2)), ("clf", Ridge())]).fit(*diabetes())
    with pytest.raises(UnsupportedTypeError, match=r"steps\.0\.svd"):
        to_state(pipe)


# -- hostile files -----------------------------------------------------------------------


def _steps(meta) -> list:
    return meta["model"]["params"]["steps"]


def test_steps_not_a_list(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["params"]["steps"] = {"__t__": "tuple", "v": []}

    assert "'steps' must be a non-empty list" in str(hostile(make_pipeline(Ridge()).fit(*diabetes()), edit, tmp_path))


def test_step_not_a_pair(tmp_path) -> None:
    def edit(meta, tensors):
        _steps(meta)[0]["v"].append("extra")

    assert "'steps.0' must be a (name, estimator) pair" in str(hostile(_scaler_logistic(), edit, tmp_path))


def test_duplicate_step_names(tmp_path) -> None:
    def edit(meta, tensors):
        _steps(meta)[1]["v"][0] = "scale"

    assert "step names are not unique" in str(hostile(_scaler_logistic(), edit, tmp_path))


def test_step_name_with_double_underscore(tmp_path) -> None:
    def edit(meta, tensors):
        _steps(meta)[0]["v"][0] = "a__b"

    assert "step name 'a__b' must be" in str(hostile(_scaler_logistic(), edit, tmp_path))


def test_intermediate_step_that_cannot_transform(tmp_path) -> None:
    def edit(meta, tensors):
        _steps(meta)[0], _steps(meta)[1] = _steps(meta)[1], _steps(meta)[0]

    error = hostile(_scaler_logistic(), edit, tmp_path)
    assert "step 'clf' must be a transformer or 'passthrough', found LogisticRegression" in str(error)


def test_final_step_is_not_an_estimator(tmp_path) -> None:
    def edit(meta, tensors):
        _steps(meta)[1]["v"][1] = 42
        for name in [n for n in tensors if n.startswith("steps.1.")]:
            del tensors[name]

    assert "final step 'clf' must be an estimator" in str(hostile(_scaler_logistic(), edit, tmp_path))


def _ct(meta) -> dict:
    return find(meta, "ColumnTransformer")["attrs"]


def test_column_index_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):
        _ct(meta)["transformers_"][0]["v"][2] = [0, 7]

    ct = ColumnTransformer([("scale", StandardScaler(), [0, 1])]).fit(iris()[0])
    assert "columns of 'scale': column 7 is outside the 4 fitted features" in str(hostile(ct, edit, tmp_path))


def test_column_name_not_fitted(tmp_path) -> None:
    def edit(meta, tensors):
        _ct(meta)["transformers_"][1]["v"][2] = ["sepal_length", "password"]

    error = hostile(_frame_pipeline(), edit, tmp_path)
    assert "columns of 'num': column 'password' is not among the fitted feature names" in str(error)


def test_boolean_mask_of_wrong_length(tmp_path) -> None:
    def edit(meta, tensors):
        _ct(meta)["transformers_"][0]["v"][2] = [True, False]

    ct = ColumnTransformer([("scale", StandardScaler(), [0, 1])]).fit(iris()[0])
    assert "boolean column mask of length 2 for 4 features" in str(hostile(ct, edit, tmp_path))


def test_input_index_map_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):
        items = _ct(meta)["_transformer_to_input_indices"]["items"]
        items[0][1] = [0, 99]

    error = hostile(_frame_pipeline(), edit, tmp_path)
    assert "'_transformer_to_input_indices' of 'cat' must be indices in [0, 6)" in str(error)


def test_output_indices_backwards_slice(tmp_path) -> None:
    def edit(meta, tensors):
        items = _ct(meta)["output_indices_"]["items"]
        items[0][1] = {"__t__": "slice", "start": 5, "stop": 2, "step": None}

    error = hostile(_frame_pipeline(), edit, tmp_path)
    assert "'output_indices_' of 'cat' must be a slice(start, stop) with 0 <= start <= stop" in str(error)


def test_slice_with_zero_step(tmp_path) -> None:
    def edit(meta, tensors):
        _ct(meta)["transformers_"][0]["v"][2]["step"] = 0

    ct = ColumnTransformer([("scale", StandardScaler(), slice(0, 2))]).fit(iris()[0])
    assert "invalid slice bounds [0, 2, 0]" in str(hostile(ct, edit, tmp_path))


def test_fitted_transformer_replaced_by_a_string(tmp_path) -> None:
    def edit(meta, tensors):
        _ct(meta)["transformers_"][1]["v"][1] = "rm -rf"
        for name in [n for n in tensors if ".num." in n]:
            del tensors[name]

    error = hostile(_frame_pipeline(), edit, tmp_path)
    assert "'transformers_' entry 'num' must be a transformer, 'drop' or 'passthrough'" in str(error)


def test_function_transformer_with_a_function_name(tmp_path) -> None:
    def edit(meta, tensors):  # a plain string is not a function node: never looked up, never imported
        find(meta, "FunctionTransformer")["params"]["func"] = "os.system"

    ct = ColumnTransformer([("scale", StandardScaler(), [0])], remainder="passthrough").fit(iris()[0])
    assert "FunctionTransformer 'func' must be a function or None" in str(hostile(ct, edit, tmp_path))


def test_remainder_columns_out_of_range(tmp_path) -> None:
    def edit(meta, tensors):  # the remainder's columns index feature_names_in_ (e.g. in the HTML repr)
        _ct(meta)["_remainder"]["v"][2] = [4, 5, 60]

    ct = ColumnTransformer([("num", StandardScaler(), ["sepal_length"])], remainder="passthrough").fit(frame())
    assert "remainder columns: column 60 is outside the 6 fitted features" in str(hostile(ct, edit, tmp_path))


def test_transformer_weight_is_not_a_number(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["params"]["transformer_weights"] = {"__t__": "dict", "items": [["num", "heavy"]]}

    ct = ColumnTransformer([("num", StandardScaler(), [0])], transformer_weights={"num": 2.0}).fit(iris()[0])
    assert "'transformer_weights' must map transformer names to numbers" in str(hostile(ct, edit, tmp_path))


def test_nested_error_names_the_step_path(tmp_path) -> None:
    def edit(meta, tensors):  # errors locate a step by name, like its tensors
        tensors["steps.0.prep.transformers_.1.num.mean_"] = np.zeros(2)

    error = hostile(_frame_pipeline(), edit, tmp_path)
    assert str(error).startswith("at 'steps.0.prep.transformers_.1.num': 'mean_' has shape (2,)")
