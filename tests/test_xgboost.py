"""XGBoost's scikit-learn estimators round-trip bit-identically through every format.

Small real fits (a few trees, a few hundred rows): multiclass with missing values,
binary, regression, ranking, random forests, pandas ``category`` columns with early
stopping. Every output (``predict``, ``predict_proba``, ``apply``) is compared exactly,
after a load in this process and in a fresh one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost", reason="XGBoost is an optional extra: pip install 'aprender[xgboost]'")

import pandas as pd  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import StackingClassifier, VotingClassifier  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.multioutput import MultiOutputRegressor  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder  # noqa: E402

import aprender  # noqa: E402
from aprender.exceptions import MissingDependencyError, UnsupportedTypeError  # noqa: E402
from aprender.format import safetensors  # noqa: E402
from aprender.format.apr import Compression  # noqa: E402
from aprender.format.apr import _crypto as crypto  # noqa: E402

_METHODS = ("predict", "predict_proba", "decision_function", "apply")
_X, _Y = make_classification(240, 6, n_informative=4, n_classes=3, random_state=0)
_X[::9, 2] = np.nan  # missing values take each split's default direction


def _frame(n: int = 240) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "a": rng.normal(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue", "vé", "ab"], n)),
        "size": pd.Categorical(rng.choice([3, 7, -9], n)),
        "count": pd.array(rng.integers(0, 5, n), dtype="Int64"),
    })
    frame.loc[::7, "a"] = np.nan
    frame.loc[::11, "colour"] = np.nan
    y = ((frame["a"].fillna(0) + (frame["colour"] == "red") * 2 + (frame["size"] == 7)) > 0.5).astype(int)
    return frame, y.to_numpy()


def _models() -> dict[str, tuple[Any, Any]]:
    frame, y = _frame()
    qid = np.repeat(np.arange(24), 10)
    small = {"n_estimators": 4, "max_depth": 3}
    return {
        "multiclass": (xgboost.XGBClassifier(**small).fit(_X, _Y), _X),
        "binary": (xgboost.XGBClassifier(**small).fit(_X, _Y > 0), _X),
        "regressor": (xgboost.XGBRegressor(**small, objective="reg:pseudohubererror").fit(_X, _X[:, 0]), _X),
        "ranker": (xgboost.XGBRanker(**small).fit(_X, _Y, qid=qid), _X),
        "rf_classifier": (xgboost.XGBRFClassifier(n_estimators=3, max_depth=3).fit(_X, _Y), _X),
        "rf_regressor": (xgboost.XGBRFRegressor(n_estimators=3, max_depth=3).fit(_X, _X[:, 1]), _X),
        "categorical": (xgboost.XGBClassifier(
            n_estimators=30, max_depth=3, learning_rate=0.9, enable_categorical=True, max_cat_to_onehot=1,
            early_stopping_rounds=2).fit(frame[:160], y[:160], eval_set=[(frame[160:], y[160:])], verbose=False),
            frame),
        "multi_target": (xgboost.XGBRegressor(**small).fit(_X, _X[:, :2]), _X),
        "quantiles": (xgboost.XGBRegressor(**small, objective="reg:quantileerror",
                                           quantile_alpha=np.array([0.2, 0.8])).fit(_X, _X[:, 0]), _X),
    }


@pytest.fixture(scope="module")
def models() -> dict[str, tuple[Any, Any]]:
    return _models()


def _outputs(model: Any, X: Any) -> dict[str, np.ndarray]:
    # hasattr asks available_if: a Pipeline has decision_function only when its last step does.
    return {name: getattr(model, name)(X) for name in _METHODS if hasattr(model, name)}


def _assert_same(model: Any, loaded: Any, X: Any) -> None:
    assert type(loaded) is type(model)
    expected, found = _outputs(model, X), _outputs(loaded, X)
    assert expected.keys() == found.keys()
    for name in expected:
        np.testing.assert_array_equal(found[name], expected[name], err_msg=name)
    # assert_equal compares arrays (quantile_alpha) and takes NaN (``missing``) as equal to itself.
    np.testing.assert_equal(loaded.get_params(), model.get_params())


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("name", ["multiclass", "binary", "regressor", "ranker", "rf_classifier", "rf_regressor",
                                  "categorical", "multi_target", "quantiles"])
def test_round_trip(models: dict, name: str, suffix: str, tmp_path: Path) -> None:
    model, X = models[name]
    path = tmp_path / f"m.{suffix}"
    aprender.save(model, path)
    _assert_same(model, aprender.load(path), X)


def _nested() -> dict[str, tuple[Any, Any]]:
    frame, y = _frame()
    X = np.nan_to_num(_X)  # LogisticRegression takes no missing values
    frame["text"] = np.where(frame["a"].fillna(0) > 0, "up", "down")
    small = {"n_estimators": 3, "max_depth": 2}
    columns = ColumnTransformer([("num", SimpleImputer(), ["a", "count"]),
                                 ("str", OneHotEncoder(handle_unknown="ignore"), ["text"]),
                                 ("cat", OrdinalEncoder(), ["size"])])
    native = ColumnTransformer([("keep", "passthrough", ["a", "colour", "size"])]).set_output(transform="pandas")
    return {
        "pipeline": (Pipeline([("columns", columns), ("xgb", xgboost.XGBClassifier(**small))]).fit(frame, y), frame),
        "pipeline_categorical": (Pipeline([("columns", native), ("xgb", xgboost.XGBClassifier(
            enable_categorical=True, **small))]).fit(frame, y), frame),
        "grid_search": (GridSearchCV(xgboost.XGBClassifier(**small), {"max_depth": [1, 2]}, cv=2).fit(X, _Y), X),
        "stacking": (StackingClassifier([("xgb", xgboost.XGBClassifier(**small)), ("lr", LogisticRegression())],
                                        cv=2).fit(X, _Y), X),
        "voting": (VotingClassifier([("xgb", xgboost.XGBClassifier(**small)), ("lr", LogisticRegression())],
                                    voting="soft").fit(X, _Y), X),
        "multi_output": (MultiOutputRegressor(xgboost.XGBRegressor(**small)).fit(_X, X[:, :2]), X),
        "calibrated": (CalibratedClassifierCV(xgboost.XGBClassifier(**small), cv=2).fit(X, _Y), X),
    }


@pytest.fixture(scope="module")
def nested() -> dict[str, tuple[Any, Any]]:
    return _nested()


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("name", ["pipeline", "pipeline_categorical", "grid_search", "stacking", "voting",
                                  "multi_output", "calibrated"])
def test_nested_round_trip(nested: dict, name: str, suffix: str, tmp_path: Path) -> None:
    model, X = nested[name]
    path = tmp_path / f"m.{suffix}"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert type(loaded) is type(model)
    expected, found = _outputs(model, X), _outputs(loaded, X)
    assert expected.keys() == found.keys() and "predict" in expected
    for method in expected:
        np.testing.assert_array_equal(found[method], expected[method], err_msg=method)


_SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
_APR_OPTIONS = {
    "mmap": ({}, {"mmap": True}),
    "zstd": ({"compression": Compression.ZSTD_DEFAULT}, {}),
    "signed": ({"signing_key": _SIGNING_KEY}, {"verifying_key": _SIGNING_KEY.public_key()}),
    "password": ({"password": "pw"}, {"password": "pw"}),
}


@pytest.mark.parametrize("name", ["multiclass", "ranker", "rf_classifier", "categorical", "multi_target"])
def test_the_rebuilt_booster_is_the_original(models: dict, name: str) -> None:
    # XGBoost's own JSON dump of the booster aprender rebuilt equals the original's, byte for byte.
    model, _ = models[name]
    loaded = safetensors.loads(safetensors.dumps(model))
    assert loaded.get_booster().save_raw("json") == model.get_booster().save_raw("json")


@pytest.mark.parametrize("option", list(_APR_OPTIONS))
def test_apr_options(models: dict, option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)
    model, X = models["categorical"]
    save_kw, load_kw = _APR_OPTIONS[option]
    path = tmp_path / "m.apr"
    aprender.save(model, path, **save_kw)
    _assert_same(model, aprender.load(path, **load_kw), X)


def test_saves_are_the_same_bytes_with_or_without_orjson(models: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.codec.handlers import _booster_json

    if _booster_json._orjson is None:
        pytest.skip("orjson (the fast extra) is not installed")
    for name, (model, _) in models.items():
        aprender.save(model, tmp_path / f"{name}-orjson.safetensors")
    monkeypatch.setattr(_booster_json, "_orjson", None)
    for name, (model, _) in models.items():
        aprender.save(model, tmp_path / f"{name}-json.safetensors")
        assert (tmp_path / f"{name}-json.safetensors").read_bytes() == (
            tmp_path / f"{name}-orjson.safetensors").read_bytes(), name


def test_fitted_state_comes_back(models: dict, tmp_path: Path) -> None:
    model, frame = models["categorical"]
    path = tmp_path / "m.apr"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert 0 < model.best_iteration < 29  # early stopping stopped before the last round
    assert loaded.best_iteration == model.best_iteration and loaded.best_score == model.best_score
    np.testing.assert_array_equal(loaded.feature_names_in_, model.feature_names_in_)
    assert loaded.n_features_in_ == model.n_features_in_ == 4
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    assert loaded.evals_result() == model.evals_result()
    # The iteration range predict uses by default (up to best_iteration) and an explicit one.
    np.testing.assert_array_equal(loaded.predict_proba(frame, iteration_range=(0, 2)),
                                  model.predict_proba(frame, iteration_range=(0, 2)))


def test_saving_twice_gives_the_same_bytes(models: dict, tmp_path: Path) -> None:
    model, _ = models["categorical"]
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    aprender.save(model, first)
    aprender.save(model, second)
    assert first.read_bytes() == second.read_bytes()


def test_fresh_process(models: dict, tmp_path: Path) -> None:
    model, X = models["multiclass"]
    path = tmp_path / "m.apr"
    aprender.save(model, path)
    np.save(tmp_path / "X.npy", X)
    code = ("import sys, json, numpy as np, aprender\n"
            "m = aprender.load(sys.argv[1]); X = np.load(sys.argv[2])\n"
            "print(json.dumps({k: getattr(m, k)(X).tolist() for k in ('predict', 'predict_proba', 'apply')}))")
    done = subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "X.npy")], capture_output=True,
                          text=True, timeout=120, check=True)
    found = json.loads(done.stdout)
    for name, expected in _outputs(model, X).items():
        np.testing.assert_array_equal(np.asarray(found[name], dtype=expected.dtype), expected, err_msg=name)


@pytest.mark.parametrize("booster", ["gblinear", "dart", "multi_output_tree"])
def test_other_boosters_are_refused_at_save(booster: str, tmp_path: Path) -> None:
    if booster == "multi_output_tree":
        model = xgboost.XGBRegressor(n_estimators=2, multi_strategy=booster).fit(_X, _X[:, :2])
    else:
        model = xgboost.XGBRegressor(n_estimators=2, booster=booster).fit(_X, _X[:, 0])
    with pytest.raises(UnsupportedTypeError, match=booster):
        aprender.save(model, tmp_path / "m.apr")
    assert not (tmp_path / "m.apr").exists()


def _squared(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return y_pred - y_true, np.ones_like(y_pred)


@pytest.mark.parametrize("param", ["objective", "eval_metric", "callbacks"])
def test_callable_objective_is_refused_at_save(param: str, tmp_path: Path) -> None:
    # A module-level function, which aprender could otherwise store by name; a callback object.
    value = [xgboost.callback.EvaluationMonitor()] if param == "callbacks" else _squared
    model = xgboost.XGBRegressor(n_estimators=2, **{param: value}).fit(_X, _X[:, 0])
    with pytest.raises(UnsupportedTypeError, match=f"custom XGBoost {param} is code"):
        aprender.save(model, tmp_path / "m.apr")
    assert not (tmp_path / "m.apr").exists()


def test_a_keyword_without_a_rule_is_refused_at_save(tmp_path: Path) -> None:
    model = xgboost.XGBRegressor(n_estimators=2, max_cached_hist_node=8).fit(_X, _X[:, 0])
    with pytest.raises(UnsupportedTypeError, match="no rule for"):
        aprender.save(model, tmp_path / "m.apr")


def test_without_xgboost_the_load_names_the_extra(models: dict, tmp_path: Path) -> None:
    path = tmp_path / "m.apr"
    aprender.save(models["binary"][0], path)
    code = ("import sys\nsys.modules['xgboost'] = None\nimport aprender\n"
            "from aprender.exceptions import MissingDependencyError\n"
            "try:\n    aprender.load(sys.argv[1])\nexcept MissingDependencyError as exc:\n    print('MISSING', exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stdout.startswith("MISSING") and "aprender[xgboost]" in done.stdout, done.stdout + done.stderr
    assert issubclass(MissingDependencyError, ImportError)


_DOC = Path(__file__).resolve().parent.parent / "docs" / "boosting.md"


def test_the_documented_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _DOC.read_text()
    snippet = text[text.index("```python\n") + 10:]
    snippet = snippet[:snippet.index("```")]
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, str(_DOC), "exec"), {})
    assert (tmp_path / "xgb.apr").exists()


def test_every_booster_tensor_is_documented() -> None:
    from aprender.codec.handlers.xgboost_booster import BOOSTER_TENSORS

    text = _DOC.read_text()
    assert all(f"`{name}`" in text for name in BOOSTER_TENSORS)


def test_inference_only_leaves_out_the_eval_history(models: dict, tmp_path: Path) -> None:
    model, frame = models["categorical"]
    path = tmp_path / "m.apr"
    aprender.save(model, path, inference_only=True)
    loaded = aprender.load(path)
    assert not hasattr(loaded, "evals_result_")
    np.testing.assert_array_equal(loaded.predict_proba(frame), model.predict_proba(frame))
