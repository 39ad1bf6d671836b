"""The seeds of the semantic campaign (tools/semantic_fuzz.py): fitted models and the rows they run on.

Each scikit-learn instance tests/support/sklearn_instances.py builds, each case of
tests/support/zoo.py and the :data:`EXTRA` seeds with settings neither uses.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _tests_on_path() -> None:
    tests = str(REPO / "tests" / "support")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def _extra(make: Callable[[], Any], data: str) -> Callable[[], tuple[Any, Any]]:
    def fit() -> tuple[Any, Any]:
        from sklearn.datasets import load_iris

        if data == "dicts":
            X = [{"a": float(i % 5), "b": str(i % 3), "c": 1.0} for i in range(30)]
            return make().fit(X), X
        X, y = load_iris(return_X_y=True)
        return make().fit(X, y), X

    return fit


def _sgd(name: str, **params: Any) -> Callable[[], Any]:
    def make() -> Any:
        from aprender import linear_model

        return getattr(linear_model, name)(random_state=0, max_iter=20, tol=None, **params)

    return make


def _cluster(name: str, **params: Any) -> Callable[[], Any]:
    def make() -> Any:
        from aprender import cluster

        return getattr(cluster, name)(**params)

    return make


def _dict_vectorizer() -> Any:
    from aprender.feature_extraction import DictVectorizer

    return DictVectorizer(sparse=False)


def _user_model(kind: str) -> tuple[Any, Any]:
    """A model of tests/support/user_models.py: a DataFrame pipeline, a search over distributions, an imputer."""
    import user_models as user

    if kind == "selectors":
        df = user.frame()
        return user.selector_pipeline().fit(df, user.labels(df)), df
    if kind == "search":
        search, X, _ = user.fitted_search("list")
        return search, X
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer

    X = user.missing().to_numpy()[:, :4]
    return IterativeImputer(random_state=0, max_iter=3, sample_posterior=True, add_indicator=True).fit(X), X


def _xgboost(kind: str) -> tuple[Any, Any]:
    """A small XGBoost model (when the extra is installed): its booster's arrays are what the lies target."""
    import numpy as np
    import pandas as pd
    import xgboost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    X[::7, 1] = np.nan
    y = (X[:, 0] > 0).astype(int) + (X[:, 2] > 0.5)
    small = {"n_estimators": 3, "max_depth": 3}
    if kind == "categorical":
        frame = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical(rng.choice(list("pqrstu"), 120))})
        labels = (frame["c"].isin(["p", "r"]) ^ (frame["a"] > 0)).astype(int)
        return xgboost.XGBClassifier(enable_categorical=True, max_cat_to_onehot=1, **small).fit(frame, labels), frame
    if kind == "ranker":
        return xgboost.XGBRanker(**small).fit(X, y, qid=np.repeat(np.arange(12), 10)), X
    if kind == "regressor":
        return xgboost.XGBRFRegressor(**small).fit(X, X[:, 3]), X
    return xgboost.XGBClassifier(**small).fit(X, y), X


#: Seeds with settings neither the instance generator nor the zoo uses, whose state has
#: arrays compiled code writes to (averaged SGD's ``_average_coef``) or dense outputs.
EXTRA: dict[str, Callable[[], tuple[Any, Any]]] = {
    "SGDClassifier-average": _extra(_sgd("SGDClassifier", average=True), "iris"),
    "SGDRegressor-average": _extra(_sgd("SGDRegressor", average=True), "iris"),
    "SGDClassifier-average-huber": _extra(_sgd("SGDClassifier", average=5, loss="modified_huber"), "iris"),
    # scikit-learn's own Cython losses (CyHalfBinomialLoss, CyHuberLoss) as _loss_function_
    "SGDClassifier-log-loss": _extra(_sgd("SGDClassifier", average=True, loss="log_loss"), "iris"),
    "SGDClassifier-huber": _extra(_sgd("SGDClassifier", loss="huber"), "iris"),
    "SGDRegressor-huber": _extra(_sgd("SGDRegressor", average=5, loss="huber"), "iris"),
    # trees of several levels (the instance generator's fit to small data makes one node)
    "Birch-deep": _extra(_cluster("Birch", branching_factor=3, threshold=0.3, n_clusters=3), "iris"),
    "BisectingKMeans-8": _extra(_cluster("BisectingKMeans", n_clusters=8, random_state=0), "iris"),
    "DictVectorizer-dense": _extra(_dict_vectorizer, "dicts"),
    "ColumnTransformer-selectors": lambda: _user_model("selectors"),
    "RandomizedSearchCV-distributions": lambda: _user_model("search"),
    "IterativeImputer-posterior": lambda: _user_model("imputer"),
}
if importlib.util.find_spec("xgboost") is not None:
    # XGBoost's booster as validated arrays (docs/boosting.md): multiclass, categorical, ranking, forest
    EXTRA.update({"XGBClassifier-multiclass": lambda: _xgboost("multiclass"),
                  "XGBClassifier-categorical": lambda: _xgboost("categorical"),
                  "XGBRanker": lambda: _xgboost("ranker"), "XGBRFRegressor": lambda: _xgboost("regressor")})


def _catboost(case: str) -> Callable[[], tuple[Any, Any]]:
    def fit() -> tuple[Any, Any]:
        import catboost_models

        if case in catboost_models.CATEGORICAL:  # string columns: predicted on unseen categories too
            return catboost_models.CATEGORICAL[case](), catboost_models.UNSEEN
        return catboost_models.CASES[case](), catboost_models.X

    return fit


def _optional_seeds() -> dict[str, Callable[[], tuple[Any, Any]]]:
    """Seeds of the optional libraries' estimators, when their extra is installed."""
    from aprender.codec._optional import available

    if not available("catboost"):
        return {}
    return {f"CatBoost-{case}": _catboost(case)
            for case in ("binary", "multiclass-strings", "early-stopping", "multi-rmse", "ranker",
                         "categorical-binary", "categorical-multiclass", "categorical-regressor")}


EXTRA.update(_optional_seeds())


def _lightgbm(name: str) -> Callable[[], tuple[Any, Any]]:
    def fit() -> tuple[Any, Any]:
        import lgbm_models  # tests/support: LightGBM models with categorical splits, NaN, early stopping

        return lgbm_models.models()[name]

    return fit


if importlib.util.find_spec("lightgbm") is not None:  # the lightgbm extra
    EXTRA.update({f"LGBM-{name}": _lightgbm(name) for name in ("multiclass", "early_stopping", "ranker")})


def seed_ids(zoo: bool = True, breadth: bool = True) -> list[str]:
    """``zoo:<case id>`` for every zoo case, ``sk:<key>`` for every scikit-learn instance, ``extra:<name>``."""
    _tests_on_path()
    ids = [f"extra:{name}" for name in EXTRA]
    if zoo:
        from zoo import CASES

        ids += [f"zoo:{case.id}" for case in CASES]
    if breadth:
        import sklearn_instances

        ids += [f"sk:{key}" for key in sorted(sklearn_instances.instances())]
    return ids


def build(seed_id: str) -> tuple[Any, Any]:
    """A newly fitted model of ``seed_id`` and the rows it runs inference on."""
    import warnings

    from sklearn.base import clone

    _tests_on_path()
    kind, _, name = seed_id.partition(":")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "extra":
            return EXTRA[name]()
        if kind == "zoo":
            from zoo import CASES

            return next(c for c in CASES if c.id == name).fresh()
        import sklearn_instances

        return sklearn_instances.fit(clone(sklearn_instances.instances()[name]))


def seed_state(seed_id: str) -> Any:
    """The seed's ModelState, or None for a class aprender refuses to save."""
    import warnings

    from aprender.codec import to_state
    from aprender.exceptions import AprenderError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return to_state(build(seed_id)[0])
    except AprenderError:
        return None
