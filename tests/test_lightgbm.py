"""LightGBM's scikit-learn estimators save without pickle and predict bit-identically (issue 37).

Each model of tests/support/lgbm_models.py (binary and multiclass classifiers on a
DataFrame with a pandas ``category`` column and NaN, string labels, one-vs-rest, early
stopping, ``reg_sqrt`` with monotone constraints, random forest mode, Poisson, a ranker)
goes through SafeTensors, ``.apr`` (plain, zstd, LZ4, signed, password-encrypted,
memory-mapped) and GGUF, and is loaded back in a fresh process: ``predict``,
``predict_proba``, raw scores, leaf indices (``pred_leaf``, LightGBM's ``apply``) and
contributions must be the same bits. The rebuilt booster's own model text must be the
original's, tree for tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lightgbm", reason="the lightgbm extra is not installed")

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from lgbm_models import models, nested

import aprender
from aprender.codec import to_state

SIGNING_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
#: file -> (suffix, save options, load options)
FILES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "safetensors": (".safetensors", {}, {}),
    "apr": (".apr", {}, {}),
    "apr-zstd": (".apr", {"compression": "zstd"}, {}),
    "apr-lz4": (".apr", {"compression": "lz4"}, {}),
    "apr-mmap": (".apr", {}, {"mmap": True}),
    "gguf": (".gguf", {}, {}),
}


def outputs(model: Any, X: Any) -> dict[str, np.ndarray]:
    """Everything the model predicts."""
    out = {"predict": model.predict(X), "raw": model.predict(X, raw_score=True),
           "leaf": model.predict(X, pred_leaf=True), "contrib": model.predict(X, pred_contrib=True)}
    if hasattr(model, "predict_proba"):
        out["proba"] = model.predict_proba(X)
    return out


def tree_text(model: Any) -> str:
    text = model.booster_.model_to_string()
    return text[: text.index("end of trees")]


_CHILD = """
import json, sys, warnings
import numpy as np
import aprender
sys.path.insert(0, sys.argv[2])
from lgbm_models import models, nested
warnings.simplefilter("ignore")
for name, files in json.loads(sys.argv[1]).items():
    X = models()[name][1]
    for path, options in files.items():
        m = aprender.load(path, **options)
        o = {"predict": m.predict(X), "raw": m.predict(X, raw_score=True), "leaf": m.predict(X, pred_leaf=True),
             "contrib": m.predict(X, pred_contrib=True)}
        if hasattr(m, "predict_proba"):
            o["proba"] = m.predict_proba(X)
        text = m.booster_.model_to_string()
        o["text"] = np.array([text[: text.index("end of trees")]])
        np.savez(path + ".npz", **o)
"""


@pytest.fixture(scope="module")
def fresh_loads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict[str, Any]]]:
    """Model -> every file it was saved to -> load options; one fresh process loaded them all (beside each, .npz)."""
    root = tmp_path_factory.mktemp("lightgbm")
    loads: dict[str, dict[str, dict[str, Any]]] = {}
    for name, (model, _) in models().items():
        loads[name] = {}
        # Every model through each format; the .apr options (one container, other bytes) on one model.
        files = FILES if name == "multiclass" else {k: FILES[k] for k in ("safetensors", "apr", "gguf")}
        for file, (suffix, save_options, load_options) in files.items():
            path = root / f"{name}-{file}{suffix}"
            aprender.save(model, path, **save_options)
            loads[name][str(path)] = load_options
    support = str(Path(__file__).parent / "support")
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(loads), support],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return loads


@pytest.mark.parametrize("name", list(models()))
def test_every_file_loads_in_a_fresh_process_and_predicts_the_same_bits(
        name: str, fresh_loads: dict[str, dict[str, dict[str, Any]]]) -> None:
    model, X = models()[name]
    expected = outputs(model, X)
    for path in fresh_loads[name]:
        got = np.load(path + ".npz", allow_pickle=False)
        for key, value in expected.items():
            np.testing.assert_array_equal(got[key], value, err_msg=f"{path}: {key}")
        assert str(got["text"][0]) == tree_text(model)


def test_a_signed_file_predicts_the_same(tmp_path: Path) -> None:
    model, X = models()["binary"]
    signed = tmp_path / "signed.apr"
    aprender.save(model, signed, signing_key=SIGNING_KEY)
    loaded = aprender.load(signed, verifying_key=SIGNING_KEY.public_key())
    for key, value in outputs(loaded, X).items():
        np.testing.assert_array_equal(value, outputs(model, X)[key])


def test_a_password_encrypted_file_predicts_the_same(tmp_path: Path) -> None:
    model, X = models()["multiclass"]
    path = tmp_path / "secret.apr"
    aprender.save(model, path, password="correct horse")
    loaded = aprender.load(path, password="correct horse")
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("name", list(models()))
def test_fitted_attributes_come_back(name: str, tmp_path: Path) -> None:
    model, _ = models()[name]
    path = tmp_path / "m.apr"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert type(loaded) is type(model)
    assert loaded.get_params() == model.get_params()
    assert loaded.n_features_in_ == model.n_features_in_
    assert loaded.best_iteration_ == model.best_iteration_
    assert loaded.booster_.best_iteration == model.booster_.best_iteration
    assert loaded.evals_result_ == model.evals_result_
    assert loaded.best_score_ == model.best_score_ and loaded.booster_.best_score is loaded.best_score_
    assert loaded.booster_.pandas_categorical == model.booster_.pandas_categorical
    assert loaded._fitted_with_feature_names == model._fitted_with_feature_names
    if model._fitted_with_feature_names:
        np.testing.assert_array_equal(loaded.feature_names_in_, model.feature_names_in_)
    np.testing.assert_array_equal(loaded.feature_importances_, model.feature_importances_)
    if hasattr(model, "classes_"):
        np.testing.assert_array_equal(loaded.classes_, model.classes_)
        assert loaded.n_classes_ == model.n_classes_


@pytest.mark.parametrize("name", list(nested()))
def test_nested_in_pipelines_searches_and_ensembles(name: str, tmp_path: Path) -> None:
    model, X = nested()[name]
    method = "predict_proba" if hasattr(model, "predict_proba") else "predict"
    expected = getattr(model, method)(X)
    for file, (suffix, save_options, load_options) in FILES.items():
        path = tmp_path / f"{file}{suffix}"
        aprender.save(model, path, **save_options)
        loaded = aprender.load(path, **load_options)
        np.testing.assert_array_equal(getattr(loaded, method)(X), expected, err_msg=file)
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X), err_msg=file)


def test_saving_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    model, _ = models()["multiclass"]
    first, second = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    aprender.save(model, first)
    aprender.save(model, second)
    assert first.read_bytes() == second.read_bytes()


def test_trees_are_stored_as_named_arrays() -> None:
    model, _ = models()["multiclass"]
    state = to_state(model)
    names = {name.rpartition(".")[2] for name in state.tensors}
    assert {"split_feature", "threshold", "left_child", "right_child", "leaf_value", "decision_type",
            "cat_boundaries", "cat_threshold", "num_leaves"} <= names
    assert state.tensors["_Booster.num_leaves"].shape == (model.booster_.num_trees(),)
    # The category column's splits are bitsets of uint32 words.
    assert state.tensors["_Booster.cat_threshold"].dtype == np.uint32
    assert state.tensors["_Booster.cat_threshold"].size > 0


@pytest.mark.parametrize("orjson", [True, False], ids=["orjson", "standard-library"])
def test_the_model_text_is_the_same_with_or_without_orjson(orjson: bool, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from aprender.codec.schemas import _lgbm_text

    if not orjson:
        monkeypatch.setattr(_lgbm_text, "_orjson", None)
    elif _lgbm_text._orjson is None:
        pytest.skip("orjson (the fast extra) is not installed")
    import lightgbm as lgb

    rows = np.random.default_rng(0).normal(size=(50, 2))
    lone = lgb.LGBMRegressor(n_estimators=2, verbose=-1).fit(rows, np.ones(50))  # one-leaf trees: no weights written
    assert lone.booster_.dump_model()["tree_info"][0]["num_leaves"] == 1
    for name, (model, X) in {"multiclass": models()["multiclass"], "lone-leaf": (lone, rows)}.items():
        aprender.save(model, tmp_path / f"{name}.apr")
        loaded = aprender.load(tmp_path / f"{name}.apr")
        assert tree_text(loaded) == tree_text(model)
        np.testing.assert_array_equal(loaded.predict(X, raw_score=True), model.predict(X, raw_score=True))


def test_numbers_are_written_back_exactly() -> None:
    from aprender.codec.schemas import _lgbm_text

    values = np.array([0.1, -0.0, 1e-35, 5e-324, -1.7976931348623157e308, 1e16, 1e-7, 2.0 / 3, 1.0], dtype=np.float64)
    pieces = _lgbm_text._pieces(values, np.array([0, 3, 3]), np.array([3, 3, 9]))
    assert pieces[1] == ""
    parsed = np.array([float(v) for piece in pieces for v in piece.split(" ") if piece])
    assert parsed.tobytes() == values.tobytes()
    # A strided or byte-swapped array (orjson formats only contiguous native ones itself) gives the same text.
    for other in (np.repeat(values, 2)[::2], values.astype(values.dtype.newbyteorder())):
        assert _lgbm_text._pieces(other, np.array([0, 3, 3]), np.array([3, 3, 9])) == pieces


def test_a_linear_tree_model_is_refused_at_save(tmp_path: Path) -> None:
    import lightgbm as lgb

    from aprender.exceptions import UnsupportedTypeError

    X = np.random.default_rng(0).normal(size=(200, 3))
    model = lgb.LGBMRegressor(n_estimators=2, linear_tree=True, verbose=-1).fit(X, X[:, 0])
    with pytest.raises(UnsupportedTypeError, match="linear trees"):
        aprender.save(model, tmp_path / "m.apr")
    assert not (tmp_path / "m.apr").exists()


def test_a_custom_objective_function_is_refused_at_save(tmp_path: Path) -> None:
    import lightgbm as lgb

    from aprender.exceptions import UnsupportedTypeError

    def squared(y: np.ndarray, pred: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return pred - y, np.ones_like(y)

    X = np.random.default_rng(0).normal(size=(200, 3))
    model = lgb.LGBMRegressor(n_estimators=2, objective=squared, verbose=-1).fit(X, X[:, 0])
    with pytest.raises(UnsupportedTypeError):
        aprender.save(model, tmp_path / "m.apr")


def test_loading_without_lightgbm_names_the_extra(tmp_path: Path) -> None:
    model, _ = models()["binary"]
    path = tmp_path / "m.apr"
    aprender.save(model, path)
    code = ("import sys; sys.modules['lightgbm'] = None\n"
            "import aprender\nfrom aprender.exceptions import MissingDependencyError\n"
            "try:\n    aprender.load(sys.argv[1])\nexcept MissingDependencyError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pip install 'aprender[lightgbm]'" in done.stdout


def test_the_documented_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = (Path(__file__).parent.parent / "docs" / "lightgbm.md").read_text()
    snippet = page.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "docs/lightgbm.md", "exec"), {})
    assert (tmp_path / "lgbm.apr").exists()


def test_keyword_arguments_on_the_table_round_trip(tmp_path: Path) -> None:
    import lightgbm as lgb

    X = np.random.default_rng(0).normal(size=(120, 3))
    kwargs = {"metric": ["l1", "l2"], "max_bin_by_feature": [10, 20, 30], "interaction_constraints": [[0, 1], [2]],
              "extra_trees": True, "path_smooth": 0.5, "data_sample_strategy": "goss", "seed": 7}
    model = lgb.LGBMRegressor(n_estimators=3, verbose=-1, n_jobs=1, **kwargs).fit(X, X[:, 0])
    aprender.save(model, tmp_path / "m.apr")
    loaded = aprender.load(tmp_path / "m.apr")
    assert {k: loaded.get_params()[k] for k in kwargs} == kwargs
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_category_strings_come_back_exactly(tmp_path: Path) -> None:
    """pandas ``category`` columns are matched to codes by their category lists: every string must survive."""
    import lightgbm as lgb
    import pandas as pd

    names = ["a b", "naïve", 'say "hi"', "line\nbreak", "1", "pandas_categorical:[]", "\u2603"]
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"c": pd.Categorical(rng.choice(names, size=300), categories=names),
                      "x": rng.normal(size=300)})
    y = (X["c"].cat.codes.to_numpy() % 2) + (X["x"].to_numpy() > 0)
    model = lgb.LGBMRegressor(n_estimators=3, verbose=-1, n_jobs=1, min_child_samples=5,
                              min_data_per_group=5, cat_smooth=1).fit(X, y)
    aprender.save(model, tmp_path / "m.safetensors")
    loaded = aprender.load(tmp_path / "m.safetensors")
    assert loaded.booster_.pandas_categorical == [names]
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


@pytest.mark.parametrize("params", [
    {"boosting_type": "dart"}, {"data_sample_strategy": "goss"}, {"objective": "tweedie"},
    {"objective": "quantile", "alpha": 0.3}, {"objective": "cross_entropy"}, {"objective": "gamma"},
    {"objective": "mae"}, {"zero_as_missing": True}, {"class_weight": "balanced"},
], ids=lambda p: "-".join(f"{k}={v}" for k, v in p.items()))
def test_objectives_and_boosting_modes_by_name(params: dict[str, Any], tmp_path: Path) -> None:
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    X[::5, 1] = np.nan
    if "class_weight" in params:
        model = lgb.LGBMClassifier(n_estimators=3, verbose=-1, n_jobs=1, **params).fit(X, X[:, 0] > 0.3)
    else:
        target = np.abs(X[:, 0]) + 0.1 if params.get("objective") != "cross_entropy" else (X[:, 0] > 0) * 1.0
        model = lgb.LGBMRegressor(n_estimators=3, verbose=-1, n_jobs=1, **params).fit(X, target)
    aprender.save(model, tmp_path / "m.gguf")
    loaded = aprender.load(tmp_path / "m.gguf")
    np.testing.assert_array_equal(loaded.predict(X, raw_score=True), model.predict(X, raw_score=True))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
