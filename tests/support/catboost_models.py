"""Small fitted CatBoost models, one per configuration aprender stores (tests/test_catboost*.py,
tools/gen_fitted_names.py, tools/semantic_seeds.py): a few shallow trees on a few hundred rows, with
missing values; the categorical ones on a DataFrame of string columns (:data:`FRAME`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

QUIET = {"verbose": False, "allow_writing_files": False, "thread_count": 1, "random_seed": 0}
_RS = np.random.RandomState(0)
X = _RS.rand(300, 4)
X[_RS.rand(300, 4) < 0.1] = np.nan  # missing values in every column
X0 = np.nan_to_num(X[:, 0])
GROUPS = np.repeat(np.arange(30), 10)
_NOISE = _RS.rand(300)


def _with_loss_importances(model: Any, y: np.ndarray) -> Any:
    """``model`` after computing its loss-change importances, which it then keeps (``_loss_value_change``)."""
    import catboost

    model.get_feature_importance(catboost.Pool(X, y), type="LossFunctionChange")
    return model


def _fit(name: str, y: np.ndarray, **kw: Any) -> Any:
    import catboost

    cls = getattr(catboost, name)
    fit_kw = {"group_id": GROUPS} if name == "CatBoostRanker" else {}
    if kw.pop("early_stopping", False):
        fit_kw["eval_set"] = (X[200:], y[200:])
        return cls(iterations=60, depth=3, early_stopping_rounds=3, **QUIET, **kw).fit(X[:200], y[:200], **fit_kw)
    return cls(iterations=6, depth=3, **QUIET, **kw).fit(X, y, **fit_kw)


#: case -> a function fitting the model
CASES: dict[str, Callable[[], Any]] = {
    "binary": lambda: _fit("CatBoostClassifier", (X0 > 0.5).astype(int)),
    "bool-labels": lambda: _fit("CatBoostClassifier", X0 > 0.5),
    "binary-nan-max": lambda: _fit("CatBoostClassifier", (X0 > 0.5).astype(int), nan_mode="Max"),
    "multiclass-strings": lambda: _fit("CatBoostClassifier", np.array(["ant", "bee", "cat"])[(X0 * 3).astype(int) % 3]),
    "one-vs-all": lambda: _fit("CatBoostClassifier", (X0 * 3).astype(int) % 3, loss_function="MultiClassOneVsAll"),
    "early-stopping": lambda: _fit("CatBoostClassifier", (X0 + _NOISE * 0.8 > 0.9).astype(int), early_stopping=True),
    "rmse": lambda: _with_loss_importances(_fit("CatBoostRegressor", np.nan_to_num(X[:, 1]) + X0),
                                           np.nan_to_num(X[:, 1]) + X0),
    "quantile": lambda: _fit("CatBoostRegressor", np.nan_to_num(X[:, 1]), loss_function="Quantile:alpha=0.3"),
    "uncertainty": lambda: _fit("CatBoostRegressor", np.nan_to_num(X[:, 1]), loss_function="RMSEWithUncertainty"),
    "multi-rmse": lambda: _fit("CatBoostRegressor", np.c_[np.nan_to_num(X[:, 1]), X0], loss_function="MultiRMSE"),
    "ranker": lambda: _fit("CatBoostRanker", np.nan_to_num(X[:, 1])),
}


def fitted() -> dict[str, Any]:
    """Every case, fitted."""
    return {case: make() for case, make in CASES.items()}


def frame(rows: int = 300, seed: int = 0) -> Any:
    """A DataFrame of two float columns (with NaN) and three string columns: ``colour`` (4 categories, one-hot
    sized), ``city`` (20) and ``shop`` (12 categories, CTR sized)."""
    import pandas as pd

    rs = np.random.RandomState(seed)
    data = pd.DataFrame({"x0": rs.rand(rows), "colour": rs.choice(["red", "green", "blue", "grey"], rows),
                         "x1": rs.rand(rows), "city": rs.choice([f"city{i}" for i in range(20)], rows),
                         "shop": rs.choice([f"shop{i}" for i in range(12)], rows)})
    data.loc[rs.rand(rows) < 0.1, "x0"] = np.nan
    return data


FRAME = frame()
#: Rows the models never saw: unseen categories in every string column, and NaN.
UNSEEN = frame(40, seed=1).assign(colour=lambda d: np.where(np.arange(40) % 4 == 0, "purple", d["colour"]),
                                  city=lambda d: np.where(np.arange(40) % 3 == 0, "atlantis", d["city"]),
                                  shop=lambda d: np.where(np.arange(40) % 5 == 0, "bazaar", d["shop"]))
_CITY = FRAME["city"].str.slice(4).astype(int).to_numpy()
_SIGNAL = ((FRAME["colour"] == "red") ^ FRAME["shop"].isin(["shop1", "shop2", "shop3"])
           ^ (FRAME["x0"] > 0.5)).to_numpy()


def _fit_frame(name: str, y: np.ndarray, **kw: Any) -> Any:
    import catboost

    return getattr(catboost, name)(**{"iterations": 8, "depth": 4, **QUIET, **kw}).fit(FRAME, y)


#: case -> a function fitting a model with categorical features on FRAME: one-hot and CTR splits,
#: cat_features by name and by index, one_hot_max_size both ways; the binary one's deeper trees
#: combine categorical values, float borders and one-hot values in its CTRs.
CATEGORICAL: dict[str, Callable[[], Any]] = {
    "categorical-binary": lambda: _fit_frame("CatBoostClassifier", _SIGNAL, cat_features=["colour", "city", "shop"],
                                             one_hot_max_size=4, iterations=10, depth=6, max_ctr_complexity=3),
    "categorical-multiclass": lambda: _fit_frame("CatBoostClassifier", np.array(["ant", "bee", "cat"])[_CITY % 3],
                                                 cat_features=[1, 3, 4]),
    "categorical-regressor": lambda: _fit_frame("CatBoostRegressor", _SIGNAL + np.nan_to_num(FRAME["x1"].to_numpy()),
                                                cat_features=["colour", "city", "shop"], one_hot_max_size=4),
}
