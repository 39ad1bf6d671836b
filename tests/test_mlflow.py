"""The ``aprender`` MLflow flavor, with the real mlflow package and a file store under tmp_path."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
import sklearn.ensemble
import yaml
from mlflow.models import Model

import aprender
import aprender.mlflow
from aprender.ensemble import RandomForestClassifier
from aprender.exceptions import FormatError
from aprender.linear_model import LinearRegression, LogisticRegression


@pytest.fixture
def tracking(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A local file store under tmp_path as the tracking URI (nothing is written to the repo)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    yield tmp_path / "mlruns"
    if mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(previous)


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.normal(size=(200, 4)), columns=["age", "income", "tenure", "score"])
    y = (X["income"] + 0.5 * X["score"] > 0).to_numpy().astype(np.int64)
    return X, y


def no_unpickling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every unpickling entry point raise."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("unpickling on the aprender load path")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)


def test_log_load_by_runs_uri_and_predict(tracking: Path, data: tuple[pd.DataFrame, np.ndarray],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = data
    model = RandomForestClassifier(n_estimators=10, max_depth=5, random_state=0).fit(X, y)
    with mlflow.start_run() as run:
        info = aprender.mlflow.log_model(model, name="churn", input_example=X.head(5))
    uri = f"runs:/{run.info.run_id}/churn"
    with monkeypatch.context() as patched:
        no_unpickling(patched)
        pyfunc = mlflow.pyfunc.load_model(uri)
        loaded = aprender.mlflow.load_model(uri)
    np.testing.assert_array_equal(pyfunc.predict(X), model.predict(X))
    assert type(loaded) is RandomForestClassifier
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert type(pyfunc.get_raw_model()) is RandomForestClassifier

    assert info.signature.inputs.input_names() == ["age", "income", "tenure", "score"]
    assert info.flavors["python_function"]["loader_module"] == "aprender._mlflow_pyfunc"
    folder = Path(mlflow.artifacts.download_artifacts(uri, dst_path=str(tracking.parent / "download")))
    files = sorted(p.name for p in folder.rglob("*") if p.is_file())
    assert "model.apr" in files and "MLmodel" in files and "input_example.json" in files
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".joblib", ".cloudpickle"))]
    flavor = Model.load(str(folder / "MLmodel")).flavors["aprender"]
    assert flavor["format"] == "apr" and flavor["model_class"] == "aprender.ensemble.RandomForestClassifier"
    requirements = (folder / "requirements.txt").read_text().splitlines()
    assert f"aprender=={aprender.__version__}" in requirements
    assert any(r.startswith("scikit-learn==") for r in requirements)
    assert yaml.safe_load((folder / "python_env.yaml").read_text())["dependencies"] == ["-r requirements.txt"]


def test_safetensors_and_predict_proba_for_plain_sklearn(tmp_path: Path, data: tuple[pd.DataFrame, np.ndarray],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = data
    model = sklearn.ensemble.RandomForestClassifier(n_estimators=5, random_state=0).fit(X.to_numpy(), y)
    path = tmp_path / "m"
    aprender.mlflow.save_model(model, path, serialization_format="safetensors", pyfunc_predict_fn="predict_proba",
                               input_example=X.to_numpy()[:3])
    assert sorted(p.name for p in path.iterdir() if p.suffix in (".safetensors", ".apr")) == ["model.safetensors"]
    with monkeypatch.context() as patched:
        no_unpickling(patched)
        pyfunc = mlflow.pyfunc.load_model(str(path))
    np.testing.assert_array_equal(pyfunc.predict(X.to_numpy()), model.predict_proba(X.to_numpy()))
    assert pyfunc.metadata.signature.outputs.to_dict()[0]["tensor-spec"]["shape"] == (-1, 2)


def test_every_format_that_loads_is_a_serialization_format(tmp_path: Path) -> None:
    """The flavor's model files come from the format table: GGUF, which it did not list by hand, works too."""
    files = {"safetensors": "model.safetensors", "apr": "model.apr", "gguf": "model.gguf"}
    assert files == aprender.mlflow.MODEL_FILES
    model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    path = tmp_path / "m"
    aprender.mlflow.save_model(model, path, serialization_format="gguf", signature=False)
    assert (path / "model.gguf").read_bytes()[:4] == b"GGUF"
    assert aprender.mlflow.load_model(str(path)).predict([[2.0]]) == pytest.approx([5.0])
    with pytest.raises(ValueError, match="serialization_format"):
        aprender.mlflow.save_model(model, tmp_path / "o", serialization_format="onnx")


def test_signature_false_and_metadata(tmp_path: Path) -> None:
    model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    aprender.mlflow.save_model(model, tmp_path / "m", signature=False, input_example=np.array([[2.0]]),
                               metadata={"owner": "team"})
    mlmodel = Model.load(str(tmp_path / "m" / "MLmodel"))
    assert mlmodel.signature is None and mlmodel.metadata == {"owner": "team"}


def test_changed_model_file_is_refused(tmp_path: Path) -> None:
    model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    path = tmp_path / "m"
    aprender.mlflow.save_model(model, path)
    LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 1, 1, 1]).save_apr(path / "model.apr")
    with pytest.raises(FormatError, match="changed after it was saved"):
        aprender.mlflow.load_model(str(path))
    with pytest.raises(FormatError, match="changed after it was saved"):
        mlflow.pyfunc.load_model(str(path))


def test_mlmodel_naming_another_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m"
    aprender.mlflow.save_model(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    mlmodel = yaml.safe_load((path / "MLmodel").read_text())
    mlmodel["flavors"]["aprender"]["model_file"] = "../elsewhere.apr"
    (path / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    with pytest.raises(FormatError, match=r"must name format .*'apr' with model\.apr"):
        aprender.mlflow.load_model(str(path))
    del mlmodel["flavors"]["aprender"]
    (path / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    with pytest.raises(FormatError, match="has no 'aprender' flavor"):
        aprender.mlflow.load_model(str(path))


def test_save_refuses_bad_requests(tmp_path: Path) -> None:
    model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(FileExistsError, match="not an empty folder"):
        aprender.mlflow.save_model(model, tmp_path / "full")
    with pytest.raises(ValueError, match="serialization_format"):
        aprender.mlflow.save_model(model, tmp_path / "a", serialization_format="pickle")
    with pytest.raises(ValueError, match="no method 'predict_proba'"):
        aprender.mlflow.save_model(model, tmp_path / "b", pyfunc_predict_fn="predict_proba")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_mlmodel_naming_another_method_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m"
    aprender.mlflow.save_model(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    mlmodel = yaml.safe_load((path / "MLmodel").read_text())
    mlmodel["flavors"]["aprender"]["pyfunc_predict_fn"] = "__class__"
    (path / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    with pytest.raises(FormatError, match="'__class__' is not a prediction method"):
        mlflow.pyfunc.load_model(str(path))


def test_the_docs_snippet_runs_as_written_with_the_default_store(tmp_path: Path) -> None:
    import os
    import re
    import subprocess
    import sys

    page = (Path(__file__).parent.parent / "docs" / "integrations.md").read_text()
    section = page[page.index("## MLflow without pickle"):]
    snippet = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}  # MLflow's own defaults
    run = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "mlflow.db").is_file()  # the default store, SQLite
    assert {p.name for p in (tmp_path / "folder").iterdir()} >= {"MLmodel", "model.safetensors"}


def test_a_category_column_keeps_its_own_example_predictable(tracking: Path) -> None:
    from aprender.ensemble import HistGradientBoostingClassifier

    rng = np.random.RandomState(0)
    X = pd.DataFrame({"amount": rng.normal(size=120), "city": pd.Categorical(rng.choice(["Lyon", "Nice"], 120))})
    y = (X["amount"] > 0).to_numpy().astype(np.int64) ^ (X["city"] == "Lyon").to_numpy()
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    with mlflow.start_run() as run:
        aprender.mlflow.log_model(model, name="m", input_example=X.head(5))
    pyfunc = mlflow.pyfunc.load_model(f"runs:/{run.info.run_id}/m")
    assert np.array_equal(pyfunc.predict(X), model.predict(X))  # the category column, as the user has it
    assert np.array_equal(pyfunc.predict(X.astype({"city": str})), model.predict(X))
    spec = {c.name: str(c.type) for c in pyfunc.metadata.get_input_schema().inputs}
    assert spec["amount"] == "DataType.double" and spec["city"] == "Any"


def test_a_users_function_is_trusted_by_the_caller_never_by_model_config(tmp_path: Path) -> None:
    """load_model(trusted=[func]) rebuilds a model naming a function of the user's; a pyfunc's model_config,
    which MLflow merges with what the folder records, grants nothing, whether the caller or the MLmodel says it."""
    import user_funcs
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from aprender.exceptions import UntrustedFunctionError

    X = np.abs(np.random.RandomState(0).normal(size=(20, 2)))
    model = make_pipeline(FunctionTransformer(user_funcs.shifted_log), LinearRegression()).fit(X, X[:, 0])
    path = tmp_path / "m"
    aprender.mlflow.save_model(model, path)
    with pytest.raises(UntrustedFunctionError, match="shifted_log"):
        aprender.mlflow.load_model(str(path))
    loaded = aprender.mlflow.load_model(str(path), trusted=[user_funcs.shifted_log])
    assert np.array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(UntrustedFunctionError):
        mlflow.pyfunc.load_model(str(path), model_config={"trusted": ["user_funcs:shifted_log"]})
    mlmodel = yaml.safe_load((path / "MLmodel").read_text())
    mlmodel["flavors"]["python_function"]["model_config"] = {"trusted": ["user_funcs:shifted_log"]}
    (path / "MLmodel").write_text(yaml.safe_dump(mlmodel))
    with pytest.raises(UntrustedFunctionError):
        mlflow.pyfunc.load_model(str(path))
