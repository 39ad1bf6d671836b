"""The models of tests/test_user_models.py, built where the semantic fuzzer can seed from them too.

A DataFrame of strings, categories and nullable columns; a ColumnTransformer pipeline
that picks its columns with ``make_column_selector``; searches over ``scipy.stats``
distributions; a frame with missing values for IterativeImputer.
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import HalvingRandomSearchCV, RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

__all__ = ["DISTRIBUTIONS", "frame", "labels", "missing", "fitted_search", "quiet", "selector_pipeline"]


def frame(n: int = 80, seed: int = 0) -> pd.DataFrame:
    """Numbers with NaN, strings, a category, and nullable Int64/boolean/string columns holding pd.NA."""
    rng = np.random.RandomState(seed)
    df = pd.DataFrame({
        "age": rng.randint(18, 80, n).astype(float),
        "income.k": rng.gamma(3.0, 20.0, n),
        "city": rng.choice(["Lyon", "Paris", "Nice"], n).astype(object),
        "colour": pd.Categorical(rng.choice(["red", "blue", "green"], n)),
        "visits": pd.array(rng.randint(0, 5, n), dtype="Int64"),
        "member": pd.array(rng.rand(n) > 0.5, dtype="boolean"),
        "code": pd.array(rng.choice(["x", "y", "z"], n), dtype="string"),
        "review": rng.choice(["good value", "awful service", "très bien", "great food, slow service"], n),
    })
    df.loc[3, "age"] = np.nan
    df.loc[4, "visits"] = pd.NA
    df.loc[5, "code"] = pd.NA
    df.loc[6, "member"] = pd.NA
    return df


def labels(df: pd.DataFrame) -> np.ndarray:
    return np.where(df["colour"].astype(str).eq("red") | (df["age"].fillna(40) > 60), "churn", "stay")


def quiet(fn: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def selector_pipeline() -> Any:
    categorical = make_pipeline(SimpleImputer(strategy="most_frequent", missing_values=pd.NA),
                                OneHotEncoder(handle_unknown="ignore"))
    ct = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(), StandardScaler()), make_column_selector(dtype_include=np.number)),
        ("cat", categorical, make_column_selector(dtype_include=["object", "category", "string", "boolean"],
                                                  dtype_exclude="Int64", pattern=r"^(?!review)")),
        ("text", TfidfVectorizer(), "review"),
    ])
    return make_pipeline(ct, LogisticRegression(max_iter=500))


DISTRIBUTIONS = {
    "C": stats.loguniform(1e-3, 1e2),
    "tol": stats.uniform(1e-5, 1e-3),
    "max_iter": stats.randint(50, 300),
    "intercept_scaling": stats.expon(scale=2.0),
}


@cache
def fitted_search(kind: str) -> tuple[Any, np.ndarray, np.ndarray]:
    rng = np.random.RandomState(0)
    X, y = rng.rand(60, 4), (rng.rand(60) > 0.5).astype(int)
    if kind == "list":
        grid = [DISTRIBUTIONS, {"C": stats.norm(loc=5.0, scale=1.0), "fit_intercept": [True, False]}]
        search = RandomizedSearchCV(LogisticRegression(), grid, n_iter=4, cv=2, random_state=0)
    elif kind == "halving":
        search = HalvingRandomSearchCV(LogisticRegression(), DISTRIBUTIONS, n_candidates=4, cv=2, random_state=0,
                                       min_resources=20)
    else:
        own = stats.loguniform(1e-2, 10.0)
        own.random_state = 7  # a distribution with a RandomState of its own
        search = RandomizedSearchCV(LogisticRegression(), {**DISTRIBUTIONS, "C": own}, n_iter=4, cv=2,
                                    random_state=0)
    return quiet(lambda: search.fit(X, y)), X, y


@cache
def missing() -> pd.DataFrame:
    rng = np.random.RandomState(0)
    X = rng.normal(size=(60, 5)) @ rng.normal(size=(5, 5))
    X[rng.rand(*X.shape) < 0.2] = np.nan
    X[:, 4] = np.nan  # a column with no value at all
    return pd.DataFrame(X, columns=["a", "b", "c", "d", "empty"])

