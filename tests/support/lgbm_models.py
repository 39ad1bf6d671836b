"""Small fitted LightGBM models for tests/test_lightgbm*.py: each native feature once.

Every model fits in well under a second: a few trees on a few hundred rows.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd


def frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Numeric columns with NaN, a pandas ``category`` column of strings and an integer column."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "x": rng.normal(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue", "violet", "teal"], size=n)),
        "count": rng.integers(0, 40, size=n),
        "y": rng.normal(size=n),
    })
    df.loc[::7, "x"] = np.nan
    return df


def labels(df: pd.DataFrame, classes: int) -> np.ndarray:
    score = df["x"].fillna(0).to_numpy() + (df["colour"] == "red").to_numpy() + df["y"].to_numpy() / 2
    bins = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    names = np.array(["ant", "bee", "cat", "dog", "eel"])[:classes]
    return names[np.digitize(score, bins)]


def _quiet(fit: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


@cache
def models() -> dict[str, Any]:
    """Name -> (fitted model, the DataFrame or array it predicts on)."""
    df = frame()
    X = df[["x", "count", "y"]].to_numpy(dtype=float, na_value=np.nan)
    target = df["x"].fillna(0).to_numpy() * 2 + df["y"].to_numpy()
    rng = np.random.default_rng(1)
    common = {"n_estimators": 4, "verbose": -1, "n_jobs": 1, "min_child_samples": 5, "min_data_per_group": 5,
              "cat_smooth": 1}
    out: dict[str, Any] = {}
    out["binary"] = (_quiet(lambda: lgb.LGBMClassifier(**common).fit(df, labels(df, 2))), df)
    out["multiclass"] = (_quiet(lambda: lgb.LGBMClassifier(**common).fit(df, labels(df, 3))), df)
    out["ova"] = (_quiet(lambda: lgb.LGBMClassifier(objective="ova", **common).fit(X, labels(df, 3))), X)
    early = lgb.LGBMRegressor(objective="huber", **{**common, "n_estimators": 60})
    out["early_stopping"] = (_quiet(lambda: early.fit(
        df[:200], target[:200], eval_set=[(df[200:], target[200:])],
        callbacks=[lgb.early_stopping(3, verbose=False)])), df)
    out["sqrt_monotone"] = (_quiet(lambda: lgb.LGBMRegressor(
        objective="l2", reg_sqrt=True, monotone_constraints=[1, 0, -1], **common).fit(X, np.abs(target))), X)
    out["rf"] = (_quiet(lambda: lgb.LGBMRegressor(
        boosting_type="rf", subsample=0.5, subsample_freq=1, **common).fit(X, target)), X)
    out["poisson"] = (_quiet(lambda: lgb.LGBMRegressor(objective="poisson", **common).fit(X, np.abs(target))), X)
    out["ranker"] = (_quiet(lambda: lgb.LGBMRanker(**common).fit(
        X, rng.integers(0, 3, size=X.shape[0]), group=[30] * 10)), X)
    return out


@cache
def nested() -> dict[str, Any]:
    """Name -> (a fitted meta-estimator or pipeline holding LightGBM models, its input)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import StackingClassifier, VotingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.multioutput import MultiOutputRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    df = frame()
    n = len(df)
    # A nullable string column and a nullable integer column, as users' frames have.
    df["name"] = pd.array(np.where(np.arange(n) % 3 == 0, None, np.where(np.arange(n) % 2, "a", "b")),
                          dtype="string")
    df["visits"] = pd.array(np.where(np.arange(n) % 5 == 0, None, np.arange(n) % 11), dtype="Int64")
    y = labels(df, 3)
    small = {"n_estimators": 3, "verbose": -1, "n_jobs": 1, "min_child_samples": 5}
    strings = make_pipeline(SimpleImputer(strategy="constant", fill_value="?", missing_values=pd.NA),
                            OneHotEncoder(handle_unknown="ignore"))
    columns = ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()), ["x", "y", "visits"]),
                                 ("cat", strings, ["colour", "name"])])
    linear = make_pipeline(ColumnTransformer([("num", SimpleImputer(), ["x", "y"])]), LogisticRegression())
    native = df[["x", "colour", "count", "y"]]
    out: dict[str, Any] = {
        "pipeline": (make_pipeline(columns, lgb.LGBMClassifier(**small)), df, y),
        "search": (GridSearchCV(lgb.LGBMClassifier(**small), {"num_leaves": [4, 8]}, cv=2), native, y),
        "stacking": (StackingClassifier([("lgbm", lgb.LGBMClassifier(**small)), ("linear", linear)], cv=2),
                     native, y),
        "voting": (VotingClassifier([("lgbm", lgb.LGBMClassifier(**small)), ("linear", linear)], voting="soft"),
                   native, y),
        "calibrated": (CalibratedClassifierCV(lgb.LGBMClassifier(**small), cv=2), native, y),
        "multioutput": (MultiOutputRegressor(lgb.LGBMRegressor(**small)), df[["x", "count", "y"]],
                        np.c_[df["y"], df["count"]]),
    }
    return {name: (_quiet(lambda m=model, X=X, y=y: m.fit(X, y)), X) for name, (model, X, y) in out.items()}
