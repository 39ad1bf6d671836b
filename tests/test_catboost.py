"""CatBoost's estimators saved as checked arrays and loaded back predicting bit-identically.

Every model is fitted once per module on a few hundred rows with a few shallow trees;
each test saves, loads and compares every output with ``np.testing.assert_array_equal``.
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

from catboost_models import CASES, QUIET, X0, X, fitted  # noqa: E402

import aprender  # noqa: E402
from aprender.codec import to_state  # noqa: E402
from aprender.exceptions import UnsupportedTypeError  # noqa: E402
from aprender.format import Compression  # noqa: E402

CatBoostClassifier, CatBoostRegressor, CatBoostRanker = (
    catboost.CatBoostClassifier, catboost.CatBoostRegressor, catboost.CatBoostRanker)


@pytest.fixture(scope="module")
def models() -> dict[str, Any]:
    return fitted()


def outputs(model: Any, data: Any = X) -> dict[str, np.ndarray]:
    """Every prediction the model makes, by method."""
    out = {"predict": model.predict(data)}
    if not isinstance(model, CatBoostRanker):
        out["raw"] = model.predict(data, prediction_type="RawFormulaVal")
    if isinstance(model, CatBoostClassifier):
        out["predict_proba"] = model.predict_proba(data)
        out["classes_"] = np.asarray(model.classes_)
    out["leaf_indexes"] = model.calc_leaf_indexes(data)
    return out


def assert_same(model: Any, loaded: Any, data: Any = X) -> None:
    assert type(loaded) is type(model)
    expected, found = outputs(model, data), outputs(loaded, data)
    for method, value in expected.items():
        np.testing.assert_array_equal(found[method], value, err_msg=method)
    assert loaded.get_params() == model.get_params()
    assert loaded.tree_count_ == model.tree_count_ and loaded.n_features_in_ == model.n_features_in_
    assert loaded.feature_names_ == model.feature_names_
    if not isinstance(model, CatBoostRanker):  # a ranker computes importances from data only
        np.testing.assert_array_equal(loaded.feature_importances_, model.feature_importances_)


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("case", list(CASES))
def test_roundtrip_every_format(models: dict[str, Any], case: str, suffix: str, tmp_path: Path) -> None:
    model = models[case]
    path = tmp_path / f"m.{suffix}"
    aprender.save(model, path)
    assert_same(model, aprender.load(path))


def test_early_stopping_keeps_best_iteration_and_evals(models: dict[str, Any], tmp_path: Path) -> None:
    model = models["early-stopping"]
    assert model.tree_count_ < 60  # it did stop early
    aprender.save(model, tmp_path / "m.apr")
    loaded = aprender.load(tmp_path / "m.apr")
    assert loaded.best_iteration_ == model.best_iteration_
    assert loaded.best_score_ == model.best_score_
    assert loaded.evals_result_.keys() == model.evals_result_.keys()
    for name, metrics in model.evals_result_.items():
        for metric, values in metrics.items():
            np.testing.assert_allclose(loaded.evals_result_[name][metric], values, rtol=1e-12)


#: option -> (save keyword arguments, load keyword arguments), as tests/test_apr.py has them
_KEY = bytes(range(32))


def _apr_options() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    signing = Ed25519PrivateKey.from_private_bytes(_KEY)
    return {
        "mmap": ({}, {"mmap": True}),
        "zstd": ({"compression": Compression.ZSTD_DEFAULT}, {}),
        "lz4": ({"compression": Compression.LZ4}, {}),
        "signed": ({"signing_key": signing}, {"verifying_key": signing.public_key()}),
        "password": ({"password": "pw"}, {"password": "pw"}),
    }


@pytest.fixture
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.format.apr import _crypto as crypto

    monkeypatch.setitem(crypto.ARGON2, "memory_cost", 64)
    monkeypatch.setitem(crypto.ARGON2, "iterations", 1)


@pytest.mark.parametrize("option", ["mmap", "zstd", "lz4", "signed", "password"])
def test_apr_options(models: dict[str, Any], option: str, tmp_path: Path, cheap_argon2: None) -> None:
    save_kw, load_kw = _apr_options()[option]
    model = models["multiclass-strings"]
    aprender.save(model, tmp_path / "m.apr", **save_kw)
    assert_same(model, aprender.load(tmp_path / "m.apr", **load_kw))


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
def test_saves_are_byte_identical(models: dict[str, Any], suffix: str, tmp_path: Path) -> None:
    aprender.save(models["early-stopping"], tmp_path / f"a.{suffix}")
    aprender.save(models["early-stopping"], tmp_path / f"b.{suffix}")
    assert (tmp_path / f"a.{suffix}").read_bytes() == (tmp_path / f"b.{suffix}").read_bytes()


def test_trees_are_named_arrays(models: dict[str, Any]) -> None:
    state = to_state(models["multiclass-strings"])
    names = {name.rpartition(".")[2] for name in state.tensors}
    assert {"borders", "split_feature", "split_border", "tree_depths", "leaf_values", "bias"} <= names
    node = state.meta["model"]["attrs"]["_object"]
    assert node["__t__"] == "catboost_booster" and node["loss"] == "MultiClass"
    assert node["class_params"]["class_names"] == ["ant", "bee", "cat"]


def test_fresh_process_predicts_identically(models: dict[str, Any], tmp_path: Path) -> None:
    cases = {}
    for case in ("binary", "multi-rmse", "ranker"):
        path = tmp_path / f"{case}.apr"
        aprender.save(models[case], path)
        np.save(tmp_path / f"{case}.npy", models[case].predict(X))
        cases[case] = str(path)
    code = textwrap.dedent("""
        import json, sys
        import numpy as np
        import aprender
        X = np.load(sys.argv[2])
        out = {}
        for case, path in json.loads(sys.argv[1]).items():
            out[case] = bool(np.array_equal(aprender.load(path).predict(X), np.load(path[:-4] + ".npy")))
        print(json.dumps(out))
    """)
    np.save(tmp_path / "X.npy", X)
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cases), str(tmp_path / "X.npy")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == dict.fromkeys(cases, True)


def test_dataframe_feature_names(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["age", "height", "weight", "score"])
    model = CatBoostRegressor(iterations=5, depth=2, **QUIET).fit(frame, X0)
    aprender.save(model, tmp_path / "m.safetensors")
    loaded = aprender.load(tmp_path / "m.safetensors")
    assert loaded.feature_names_ == ["age", "height", "weight", "score"]
    assert_same(model, loaded, frame)


@pytest.mark.parametrize("orjson", [True, False], ids=["orjson", "standard-library"])
def test_the_model_json_is_the_same_with_or_without_orjson(models: dict[str, Any], orjson: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.codec.handlers import _booster_json

    if not orjson:
        monkeypatch.setattr(_booster_json, "_orjson", None)
    elif _booster_json._orjson is None:
        pytest.skip("orjson (the fast extra) is not installed")
    pd = pytest.importorskip("pandas")
    # A non-ASCII feature name takes the standard library's path even with orjson.
    frame = pd.DataFrame(X, columns=["âge", "height", "weight", "score"])
    cases = {**models, "unicode": CatBoostRegressor(iterations=3, depth=2, **QUIET).fit(frame, X0)}
    for case, model in cases.items():
        aprender.save(model, tmp_path / f"{case}.apr")
        data = frame if case == "unicode" else X
        assert_same(model, aprender.load(tmp_path / f"{case}.apr"), data)


def test_saves_are_the_same_bytes_with_or_without_orjson(models: dict[str, Any], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.codec.handlers import _booster_json

    if _booster_json._orjson is None:
        pytest.skip("orjson (the fast extra) is not installed")
    for case, model in models.items():
        aprender.save(model, tmp_path / f"{case}-orjson.safetensors")
    monkeypatch.setattr(_booster_json, "_orjson", None)
    for case, model in models.items():
        aprender.save(model, tmp_path / f"{case}-json.safetensors")
        assert (tmp_path / f"{case}-json.safetensors").read_bytes() == (
            tmp_path / f"{case}-orjson.safetensors").read_bytes(), case


def test_non_symmetric_trees_are_refused_at_save(tmp_path: Path) -> None:
    model = CatBoostRegressor(iterations=3, depth=2, grow_policy="Depthwise", **QUIET).fit(X, X0)
    with pytest.raises(UnsupportedTypeError, match="symmetric trees"):
        aprender.save(model, tmp_path / "m.apr")


class _Objective:
    """A user's Python objective: CatBoost calls it while fitting."""

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> list[tuple[float, float]]:
        return [(targets[i] - approxes[i], -1.0) for i in range(len(approxes))]


def test_callable_objective_is_refused_at_save(tmp_path: Path) -> None:
    model = CatBoostRegressor(iterations=2, depth=2, loss_function=_Objective(), eval_metric="RMSE", **QUIET)
    model.fit(X, X0)
    with pytest.raises(UnsupportedTypeError, match="loss_function"):
        aprender.save(model, tmp_path / "m.apr")


def test_loading_without_catboost_names_the_extra(models: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "m.apr"
    aprender.save(models["binary"], path)
    code = textwrap.dedent("""
        import sys
        sys.modules["catboost"] = None  # as if the extra were not installed
        import aprender
        from aprender.exceptions import MissingDependencyError
        try:
            aprender.load(sys.argv[1])
        except MissingDependencyError as exc:
            print("MISSING", exc)
    """)
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "MISSING" in done.stdout and "aprender[catboost]" in done.stdout


def test_the_docs_snippet_runs(tmp_path: Path) -> None:
    page = (Path(__file__).parent.parent / "docs" / "catboost.md").read_text()
    snippet = page.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "catboost.apr").exists() and ("'yes'" in done.stdout or "'no'" in done.stdout)


def _nested() -> dict[str, tuple[Any, Any, Any]]:
    """name -> (fitted model, the data it predicts on)."""
    pd = pytest.importorskip("pandas")
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import StackingClassifier, VotingClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.multioutput import MultiOutputRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    small = {**QUIET, "iterations": 4, "depth": 2}
    rs = np.random.RandomState(1)
    n = 200
    frame = pd.DataFrame({
        "num": rs.rand(n),
        "colour": pd.Categorical(rs.choice(["red", "green", "blue"], n)),
        "name": rs.choice(["x", "y", None], n),
        "count": pd.array(np.where(rs.rand(n) < 0.2, None, rs.randint(0, 5, n)), dtype="Int64"),
    })
    y = (frame["num"] > 0.5).astype(int).to_numpy()
    columns = ColumnTransformer([
        ("num", "passthrough", ["num"]),
        ("cat", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-2),
         ["colour", "name"]),
        ("count", SimpleImputer(), ["count"]),
    ])
    Xn = X[:200]
    return {
        "pipeline-frame": (Pipeline([("columns", columns), ("clf", CatBoostClassifier(**small))]).fit(frame, y), frame),
        "grid-search": (GridSearchCV(CatBoostClassifier(**small), {"depth": [2, 3]}, cv=2).fit(Xn, y), Xn),
        "stacking": (StackingClassifier([("cb", CatBoostClassifier(**small)), ("lr", LogisticRegression())],
                                        cv=2).fit(np.nan_to_num(Xn), y), np.nan_to_num(Xn)),
        "voting": (VotingClassifier([("cb", CatBoostClassifier(**small)), ("lr", LogisticRegression())],
                                    voting="soft").fit(np.nan_to_num(Xn), y), np.nan_to_num(Xn)),
        "multi-output": (MultiOutputRegressor(CatBoostRegressor(**small)).fit(Xn, np.c_[X0[:200], y]), Xn),
        "calibrated": (CalibratedClassifierCV(CatBoostClassifier(**small), cv=2).fit(Xn, y), Xn),
    }


@pytest.fixture(scope="module")
def nested() -> dict[str, tuple[Any, Any]]:
    return _nested()


@pytest.mark.parametrize("suffix", ["safetensors", "apr", "gguf"])
@pytest.mark.parametrize("case", ["pipeline-frame", "grid-search", "stacking", "voting", "multi-output", "calibrated"])
def test_nested_roundtrip(nested: dict[str, tuple[Any, Any]], case: str, suffix: str, tmp_path: Path) -> None:
    model, data = nested[case]
    aprender.save(model, tmp_path / f"m.{suffix}")
    loaded = aprender.load(tmp_path / f"m.{suffix}")
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(data), model.predict(data))
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(data), model.predict_proba(data))
