"""Functions by name, helper objects, the realistic pipelines of issue 12, the static table, the lazy registry."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.ensemble import GradientBoostingClassifier, StackingClassifier, VotingClassifier
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.feature_selection import SelectKBest, f_regression
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import make_scorer, mean_absolute_error
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, PolynomialFeatures, StandardScaler
from sklearn.svm import LinearSVC
from sklearn_instances import same
from zoo import diabetes, iris

import aprender
from aprender.codec import allow_list, to_state
from aprender.exceptions import UnsupportedTypeError, UntrustedFunctionError
from aprender.format import apr, gguf, safetensors

FORMATS = {
    "safetensors": lambda m: safetensors.loads(safetensors.dumps(m)),
    "apr": lambda m: apr.loads(apr.dumps(m)),
    "gguf": lambda m: gguf.loads(gguf.dumps(m)),
}
METHODS = ("predict", "predict_proba", "decision_function", "transform")


def _check(model, X) -> None:
    for fmt, roundtrip in FORMATS.items():
        loaded = roundtrip(model)
        assert type(loaded) is type(model)
        for method in METHODS:
            if hasattr(model, method):
                assert same(getattr(model, method)(X), getattr(loaded, method)(X)), f"{fmt} {method}"


# -- functions by name -----------------------------------------------------------------


def test_function_transformer_with_numpy_ufuncs_roundtrips() -> None:
    X = np.abs(iris()[0])
    model = FunctionTransformer(func=np.log1p, inverse_func=np.expm1).fit(X)
    node = to_state(model).meta["model"]["params"]["func"]
    assert node == {"__t__": "function", "name": "numpy.log1p"}
    _check(model, X)


def test_partial_of_an_allowed_function_roundtrips() -> None:
    X = iris()[0]
    model = FunctionTransformer(func=functools.partial(np.clip, a_min=1.0, a_max=5.0)).fit(X)
    loaded = safetensors.loads(safetensors.dumps(model))
    assert loaded.func.func is np.clip and loaded.func.keywords == {"a_min": 1.0, "a_max": 5.0}
    assert same(model.transform(X), loaded.transform(X))


def test_scipy_special_function_roundtrips() -> None:
    model = FunctionTransformer(func=expit).fit(iris()[0])
    assert safetensors.loads(safetensors.dumps(model)).func is expit


def test_lambda_is_refused_with_how_to_register() -> None:
    model = FunctionTransformer(func=lambda x: x + 1).fit(iris()[0])
    with pytest.raises(UnsupportedTypeError, match=r"func.*aprender\.register_function"):
        safetensors.dumps(model)


def _double(x):
    return x * 2.0


def test_registered_user_function_roundtrips() -> None:
    aprender.register_function(_double, name="tests.test_breadth._double")
    model = FunctionTransformer(func=_double).fit(iris()[0])
    assert safetensors.loads(safetensors.dumps(model)).func is _double


def test_register_function_refuses_a_second_function_under_one_name() -> None:
    with pytest.raises(ValueError, match="already registered"):
        aprender.register_function(_double, name="numpy.log1p")


def _with_function_name(raw_model, name: str) -> bytes:
    state = to_state(raw_model)
    meta = json.loads(json.dumps(state.meta))
    meta["model"]["params"]["func"]["name"] = name
    return safetensors.state_to_bytes(type(state)(tensors=state.tensors, meta=meta))


@pytest.mark.parametrize("name", ["os.system", "numpy.load", "numpy.save", "builtins.eval", "subprocess.run"])
def test_a_file_cannot_name_an_unlisted_function(name) -> None:
    raw = _with_function_name(FunctionTransformer(func=np.log1p).fit(iris()[0]), name)
    with pytest.raises(UntrustedFunctionError, match=rf"'{name}' at 'func' is not trusted.*trusted=\[{name}\]"):
        safetensors.loads(raw)


def test_a_scorer_with_a_metric_roundtrips() -> None:
    X, y = diabetes()
    search = GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=KFold(3),
                          scoring=make_scorer(mean_absolute_error, greater_is_better=False)).fit(X, y)
    loaded = safetensors.loads(safetensors.dumps(search))
    assert loaded.scorer_._score_func is mean_absolute_error
    assert np.ma.isMaskedArray(loaded.cv_results_["param_alpha"])
    assert same(search.predict(X), loaded.predict(X))


# -- the realistic pipelines of issue 12 -------------------------------------------------


def test_column_transformer_on_a_dataframe_into_gradient_boosting() -> None:
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"city": rng.choice(["a", "b", "c"], 60), "x": rng.normal(size=60),
                          "z": rng.normal(size=60)})
    y = (frame["x"] > 0).astype(int)
    pipe = make_pipeline(
        ColumnTransformer([("cat", OneHotEncoder(), ["city"]), ("num", StandardScaler(), ["x", "z"])]),
        GradientBoostingClassifier(n_estimators=5, random_state=0),
    ).fit(frame, y)
    _check(pipe, frame)


def test_imputer_polynomial_select_ridge() -> None:
    X, y = diabetes()
    X = X.copy()
    X[::7, 2] = np.nan
    pipe = make_pipeline(SimpleImputer(), PolynomialFeatures(2), SelectKBest(f_regression, k=8), Ridge()).fit(X, y)
    _check(pipe, X)


def test_tfidf_into_linear_svc() -> None:
    texts = ["good movie", "bad movie", "great film", "awful film", "good film", "bad plot"] * 3
    y = [1, 0, 1, 0, 1, 0] * 3
    pipe = make_pipeline(TfidfVectorizer(), LinearSVC()).fit(texts, y)
    _check(pipe, texts)


def test_grid_search_whole_and_its_best_estimator() -> None:
    X, y = iris()
    search = GridSearchCV(make_pipeline(StandardScaler(), LogisticRegression()),
                          {"logisticregression__C": [0.1, 1.0]}, cv=3).fit(X, y)
    _check(search, X)
    _check(search.best_estimator_, X)


def test_feature_union() -> None:
    X, y = iris()
    pipe = Pipeline([("union", FeatureUnion([("scale", StandardScaler()), ("poly", PolynomialFeatures(2))])),
                     ("clf", LogisticRegression(max_iter=500))]).fit(X, y)
    _check(pipe, X)


def test_transformed_target_regressor_with_log1p() -> None:
    X, y = diabetes()
    model = TransformedTargetRegressor(Ridge(), func=np.log1p, inverse_func=np.expm1).fit(X, y)
    _check(model, X)


def test_calibrated_classifier() -> None:
    X, y = iris()
    _check(CalibratedClassifierCV(LogisticRegression(max_iter=500), cv=3).fit(X, y), X)


def test_stacking_and_voting() -> None:
    X, y = iris()
    estimators = [("lr", LogisticRegression(max_iter=500)), ("svc", LinearSVC())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stacking = StackingClassifier(estimators, cv=3).fit(X, y)
        voting = VotingClassifier([("lr", LogisticRegression(max_iter=500)), ("ridge", make_pipeline(
            StandardScaler(), LogisticRegression()))], voting="soft").fit(X, y)
    _check(stacking, X)
    _check(voting, X)


# -- the static table and the lazy registry ----------------------------------------------


def test_static_table_is_up_to_date() -> None:
    done = subprocess.run([sys.executable, "tools/gen_codec_table.py", "--check"], check=False)
    assert done.returncode == 0, "aprender/codec/_table.py is stale: run python tools/gen_codec_table.py"


#: Estimator classes of this scikit-learn that are not on the allow-list, each with why no
#: fitted public estimator holds one. A class a new release adds (a private helper such as
#: 1.8's _TemperatureScaling, inside CalibratedClassifierCV) fails the test below until it
#: is allow-listed (tools/gen_codec_table.py PRIVATE_ESTIMATORS) or reviewed here.
NOT_HELD = {
    "sklearn.base.BaseEstimator": "the base class",
    "sklearn.covariance._graph_lasso.BaseGraphicalLasso": "a base class",
    "sklearn.decomposition._nmf._BaseNMF": "a base class",
    "sklearn.decomposition._sparse_pca._BaseSparsePCA": "a base class",
    "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper": "stored by HGB's schema as its arrays",
    "sklearn.impute._base._BaseImputer": "a base class",
    "sklearn.linear_model._glm.glm._GeneralizedLinearRegressor": "a base class",
    "sklearn.linear_model._ridge._BaseRidgeCV": "a base class",
    "sklearn.linear_model._ridge._IdentityClassifier": "built and dropped inside RidgeClassifierCV.fit",
    "sklearn.linear_model._ridge._IdentityRegressor": "built and dropped inside RidgeCV.fit",
    "sklearn.linear_model._ridge._RidgeGCV": "built inside RidgeCV.fit, which copies its results and drops it",
    "sklearn.model_selection._classification_threshold.BaseThresholdClassifier": "a base class",
    "sklearn.preprocessing._encoders._BaseEncoder": "a base class",
}


def test_every_estimator_class_of_this_scikit_learn_is_allow_listed_or_reviewed() -> None:
    """Every concrete class deriving from BaseEstimator in scikit-learn (test mocks aside) is known to the table."""
    import importlib
    import inspect
    import pkgutil
    import warnings

    import sklearn
    from sklearn.base import BaseEstimator

    from aprender.codec._registry import public_key
    from aprender.codec._table import GENERIC, SCHEMA_MODULES

    unknown = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(sklearn.__path__, "sklearn."):
            if ".tests" in info.name or "externals" in info.name or info.name.startswith("sklearn.utils._mocking"):
                continue
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # a module for an optional dependency
                continue
            for cls in vars(module).values():
                if (inspect.isclass(cls) and cls.__module__ == info.name and issubclass(cls, BaseEstimator)
                        and not inspect.isabstract(cls) and public_key(cls) not in GENERIC
                        and public_key(cls) not in SCHEMA_MODULES
                        and f"{cls.__module__}.{cls.__qualname__}" not in NOT_HELD):
                    unknown.append(f"{cls.__module__}.{cls.__qualname__}")
    assert unknown == [], "allow-list these (tools/gen_codec_table.py) or review them in NOT_HELD"


def test_loading_imports_only_the_schemas_a_file_names(tmp_path) -> None:
    from sklearn.linear_model import SGDClassifier

    X, y = iris()
    path = tmp_path / "sgd.safetensors"
    safetensors.save_file(SGDClassifier(random_state=0).fit(X, y), path)
    code = textwrap.dedent(f"""
        import sys
        import aprender
        aprender.load({str(path)!r})
        print(sorted(m for m in sys.modules if m.startswith("aprender.codec.schemas.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # sgd.py and the helpers it imports; none of the other family schemas.
    expected = [f"aprender.codec.schemas.{m}" for m in ("_compiled", "_generic", "_model_checks", "sgd")]
    assert out.strip() == str(expected)


def test_registered_lists_schemas_and_optionally_generic_entries() -> None:
    keys = {e.key for e in allow_list()}
    assert "aprender.linear_model.LinearRegression" in keys
    assert "sklearn.linear_model.RidgeClassifier" not in keys
    assert "sklearn.linear_model.RidgeClassifier" in {e.key for e in allow_list(generic=True)}
