"""Every value aprender/codec/refused.py lists is really refused on save, and the docs list exactly those.

Each entry of ``REFUSED`` has a builder here that fits what a user would fit; saving it
must raise UnsupportedTypeError with a message that names the offending value, in a
SafeTensors and an .apr file alike, and leave no file behind. docs/estimators.md and
docs/codec.md carry the list as tools/gen_refused.py writes it.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import RandomizedSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

import aprender
from aprender.codec.refused import REFUSED
from aprender.exceptions import UnsupportedTypeError

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "gen_refused.py"
sys.path.insert(0, str(SCRIPT.parent))
from gen_refused import PAGES, render  # noqa: E402 - tools/ is not a package

X, Y = np.random.RandomState(0).rand(20, 3), np.arange(20) % 2


class Homemade(RegressorMixin, BaseEstimator):
    """A user's own estimator, not registered."""

    def fit(self, X: Any, y: Any) -> Homemade:
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X: Any) -> np.ndarray:
        return np.full(len(X), self.mean_)


def _lambda() -> Any:
    return FunctionTransformer(lambda Z: Z + 1).fit(X)


def _memory(tmp_path: Path) -> Any:
    import joblib

    return Pipeline([("s", StandardScaler()), ("m", LogisticRegression())],
                    memory=joblib.Memory(tmp_path / "cache", verbose=0)).fit(X, Y)


def _histogram() -> Any:
    dist = stats.rv_histogram(np.histogram(np.random.RandomState(0).rand(50) + 0.1, bins=5))
    return RandomizedSearchCV(Ridge(), {"alpha": dist}, n_iter=2, cv=2, random_state=0).fit(X, Y)


def _categories() -> Any:
    df = pd.DataFrame({"c": pd.Categorical(["x", "y"] * 5), "n": np.arange(10.0)})
    return ColumnTransformer([("k", "passthrough",
                               make_column_selector(dtype_include=pd.CategoricalDtype(["x", "y"])))]).fit(df)


def _pattern() -> Any:
    df = pd.DataFrame({"aa": np.arange(4.0), "b": np.arange(4.0)})
    return ColumnTransformer([("k", "passthrough", make_column_selector(pattern="^(a+)+$"))]).fit(df)


#: REFUSED id -> (builder taking tmp_path, what the error message must contain).
CASES: dict[str, tuple[Callable[[Path], Any], str]] = {
    "lambda": (lambda tmp: _lambda(), "functions are stored by name and this one has no unique name"),
    "joblib-memory": (_memory, "of type joblib.memory.Memory: a cache object; its folder holds pickles that a "
                               "later fit would load; instead: memory=None, or a folder path"),
    "unregistered-class": (lambda tmp: make_pipeline(StandardScaler(), Homemade()).fit(X, Y),
                           "this class is not registered; call aprender.register_estimator()"),
    "distribution-outside-table": (lambda tmp: _histogram(), "only the distributions of the table DISTRIBUTIONS"),
    "selector-dtype-outside-table": (lambda tmp: _categories(), "a stored selector names only the dtypes of the "
                                                                 "table DTYPES"),
    "selector-pattern-backtracks": (lambda tmp: _pattern(), "nests a repetition inside another"),
}


def test_every_listed_value_has_a_case_and_every_case_is_listed() -> None:
    assert set(CASES) == set(REFUSED)


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_each_listed_value_is_refused_on_save(key: str, tmp_path: Path) -> None:
    build, message = CASES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build(tmp_path)
    for name in ("m.safetensors", "m.apr"):
        with pytest.raises(UnsupportedTypeError, match="cannot serialize attribute") as info:
            aprender.save(model, tmp_path / name)
        assert message in str(info.value)
        assert not (tmp_path / name).exists()


def test_a_value_no_entry_covers_is_refused_with_what_to_do(tmp_path: Path) -> None:
    model = StandardScaler().fit(X)
    model.note_ = Path("somewhere")  # a value of a class the codec has no handler for
    with pytest.raises(UnsupportedTypeError, match=r"note_' of type pathlib\.PosixPath: .*register_estimator\(\)"):
        aprender.save(model, tmp_path / "m.apr")


def test_a_vectorizer_with_a_lambda_tokenizer_is_refused_the_same_way(tmp_path: Path) -> None:
    vectorizer = CountVectorizer(tokenizer=lambda s: s.split(), token_pattern=None).fit(["a b", "b c"])
    with pytest.raises(UnsupportedTypeError, match="no unique name"):
        aprender.save(vectorizer, tmp_path / "v.apr")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_docs_list_exactly_the_refused_values(page: Path) -> None:
    text = page.read_text()
    assert render(text) == text, f"{page.name} is out of date: run python tools/gen_refused.py"
    for refused in REFUSED.values():
        assert refused.what.replace("|", "\\|") in text


def test_the_script_checks_the_pages() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
