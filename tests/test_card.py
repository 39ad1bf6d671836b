"""Model folders (save_pretrained / from_pretrained), model cards and ``apr card``.

The folder and the card are checked with huggingface_hub's own card parser and
metadata classes, offline.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn.linear_model
from huggingface_hub import ModelCard, ModelCardData
from huggingface_hub.repocard import metadata_load

import aprender
from aprender.card import Card
from aprender.cli import main
from aprender.cluster import KMeans
from aprender.ensemble import RandomForestClassifier
from aprender.exceptions import FormatError, ModelTypeMismatch
from aprender.format._io import sha256_file
from aprender.linear_model import LinearRegression, LogisticRegression


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.RandomState(0)
    X = pd.DataFrame(rng.normal(size=(90, 4)), columns=["sepal", "petal", "stem", "leaf"])
    kind = (X["petal"] > 0).to_numpy().astype(int) + (X["leaf"] > 0.5).to_numpy()
    y = np.array(["setosa", "versicolor", "virginica"])[kind]
    return X, y


@pytest.fixture(scope="module")
def forest(data: tuple[pd.DataFrame, np.ndarray]) -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(*data)


def full_card(model: RandomForestClassifier, data: tuple[pd.DataFrame, np.ndarray]) -> Card:
    X, y = data
    return (Card(model, model_id="flowers-rf", license="apache-2.0", tags=["flowers"], datasets=["scikit-learn/iris"],
                 description="A small forest.", intended_use="Examples only.")
            .add_metrics(accuracy=0.9, f1_macro=0.85)
            .add_evaluation("accuracy", 0.875, dataset="Iris", dataset_type="scikit-learn/iris", split="test")
            .add_confusion_matrix(X, y)
            .add_feature_importances()
            .add(**{"Training procedure": "Five trees, depth 4."}))


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_folder_round_trip_predicts_identically(tmp_path: Path, forest: RandomForestClassifier,
                                                data: tuple[pd.DataFrame, np.ndarray]) -> None:
    X, _ = data
    folder = forest.save_pretrained(tmp_path / "rf", license="mit")
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    loaded = aprender.from_pretrained(folder)
    assert type(loaded) is RandomForestClassifier
    np.testing.assert_array_equal(loaded.predict_proba(X), forest.predict_proba(X))
    config = json.loads((folder / "config.json").read_text())
    assert config["class"] == "aprender.ensemble.RandomForestClassifier"
    assert config["hyperparameters"]["n_estimators"] == 5
    assert config["feature_names"] == ["sepal", "petal", "stem", "leaf"]
    assert config["classes"] == ["setosa", "versicolor", "virginica"]
    assert config["tensor_schema_version"] == 1
    assert set(config["versions"]) == {"aprender", "numpy", "sklearn"}
    assert config["n_features_in"] == 4
    assert "created_at" not in config


def test_function_form_takes_plain_sklearn_estimators(tmp_path: Path) -> None:
    X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1])
    model = sklearn.linear_model.LogisticRegression().fit(X, y)
    folder = aprender.save_pretrained(model, tmp_path / "plain")
    config = json.loads((folder / "config.json").read_text())
    assert config["class"] == "sklearn.linear_model.LogisticRegression"
    assert config["classes"] == [0, 1] and config["feature_names"] is None
    loaded = aprender.from_pretrained(folder)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    with pytest.raises(ModelTypeMismatch):
        aprender.from_pretrained(folder, KMeans)


def test_same_model_same_folder_bytes(tmp_path: Path, forest: RandomForestClassifier,
                                      data: tuple[pd.DataFrame, np.ndarray]) -> None:
    a = aprender.save_pretrained(forest, tmp_path / "a", card=full_card(forest, data))
    b = aprender.save_pretrained(forest, tmp_path / "b", card=full_card(forest, data))
    assert folder_bytes(a) == folder_bytes(b)
    assert set(folder_bytes(a)) == {"README.md", "config.json", "model.safetensors", "confusion-matrix.png",
                                    "feature-importances.png"}
    assert folder_bytes(a)["confusion-matrix.png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_provenance_honours_source_date_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    a = model.save_pretrained(tmp_path / "a", provenance={"git_commit": "abc123"})
    b = model.save_pretrained(tmp_path / "b", provenance={"git_commit": "abc123"})
    config = json.loads((a / "config.json").read_text())
    assert config["created_at"] == "2023-11-14T22:13:20Z"
    assert config["provenance"]["git_commit"] == "abc123"
    assert folder_bytes(a) == folder_bytes(b)
    assert aprender.from_pretrained(a).predict([[2.0]]) == model.predict([[2.0]])


def test_card_passes_huggingface_hub_parsing_and_validation(tmp_path: Path, forest: RandomForestClassifier,
                                                            data: tuple[pd.DataFrame, np.ndarray]) -> None:
    card = full_card(forest, data)
    folder = aprender.save_pretrained(forest, tmp_path / "rf", card=card)
    hub = ModelCard.load(folder / "README.md")
    assert hub.data.library_name == "aprender"
    assert hub.data.license == "apache-2.0"
    assert hub.data.tags == ["aprender", "scikit-learn", "tabular-classification", "flowers"]
    assert hub.data.datasets == ["scikit-learn/iris"]
    assert hub.data.metrics == ["accuracy", "f1_macro"]
    assert hub.data.pipeline_tag == "tabular-classification"
    assert hub.data.model_name == "flowers-rf"
    [result] = hub.data.eval_results
    assert (result.task_type, result.dataset_type, result.dataset_name, result.dataset_split,
            result.metric_type, result.metric_value) == (
        "tabular-classification", "scikit-learn/iris", "Iris", "test", "accuracy", 0.875)
    assert metadata_load(folder / "README.md") == card.metadata()
    # huggingface_hub's validation of the metadata (it raises on malformed eval results)
    rebuilt = ModelCardData(**hub.data.to_dict())
    assert rebuilt.to_dict() == hub.data.to_dict()
    digest = json.loads((folder / "config.json").read_text())["sha256"]
    text = hub.text
    assert f"| `model.safetensors` | SafeTensors | `{digest}` |" in text
    assert 'aprender.from_pretrained("path/to/folder")' in text
    assert "![Confusion matrix](confusion-matrix.png)" in text
    assert "## Training procedure\n\nFive trees, depth 4." in text
    assert "| `n_estimators` | `5` |" in text


def test_plots_need_the_right_model() -> None:
    regressor = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    with pytest.raises(TypeError, match="needs a classifier"):
        Card(regressor).add_confusion_matrix([[0.0]], [1.0])
    kmeans = KMeans(n_clusters=1, n_init=1).fit([[0.0], [1.0]])
    with pytest.raises(TypeError, match="neither feature_importances_ nor coef_"):
        Card(kmeans).add_feature_importances()
    with pytest.raises(TypeError, match="Markdown text"):
        Card(regressor).add(Notes=3)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    model = LogisticRegression().fit([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]], [0, 0, 1, 1])
    return model.save_pretrained(tmp_path / "lr")


def edit_config(folder: Path, **changes: object) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


@pytest.mark.parametrize(("key", "value"), [
    ("class", "aprender.linear_model.Ridge"),
    ("hyperparameters", {"C": 2.0}),
    ("classes", [0, 2]),
    ("feature_names", ["a", "b"]),
    ("tensor_schema_version", 2),
    ("tensors", {}),
    ("versions", {"aprender": "0.0.1"}),
])
def test_config_disagreeing_with_tensors_is_refused(folder: Path, key: str, value: object) -> None:
    edit_config(folder, **{key: value})
    with pytest.raises(FormatError, match=rf"disagrees with model\.safetensors on '{key}'"):
        aprender.from_pretrained(folder)


def test_replaced_tensors_file_is_refused(folder: Path, tmp_path: Path) -> None:
    LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).save_safetensors(folder / "model.safetensors")
    with pytest.raises(FormatError, match="sha256"):
        aprender.from_pretrained(folder)
    # even with a matching digest, the config still names another model
    edit_config(folder, sha256=sha256_file(folder / "model.safetensors"))
    with pytest.raises(FormatError, match="on 'class'"):
        aprender.from_pretrained(folder)


def test_malformed_or_missing_folders(folder: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such model folder"):
        aprender.from_pretrained(tmp_path / "nowhere")
    (folder / "config.json").write_text("{not json")
    with pytest.raises(FormatError, match=r"config\.json' is not valid JSON"):
        aprender.from_pretrained(folder)
    (folder / "config.json").write_text('{"library_name": "transformers"}')
    with pytest.raises(FormatError, match="library_name 'transformers'"):
        aprender.from_pretrained(folder)
    (folder / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"has no config\.json"):
        aprender.from_pretrained(folder)


def test_cli_card(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    path = tmp_path / "model.apr"
    model.save_apr(path)
    out = tmp_path / "README.md"
    assert main(["card", str(path), "--output", str(out), "--license", "mit", "--name", "toy", "--tag", "demo",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sha256"] == sha256_file(path)
    expected = Card(model, model_id="toy", license="mit", tags=["demo"]).for_file(path).render()
    assert out.read_text() == expected
    hub = ModelCard.load(out)
    assert (hub.data.library_name, hub.data.license, hub.data.tags) == (
        "aprender", "mit", ["aprender", "scikit-learn", "tabular-classification", "demo"])
    assert 'aprender.load("model.apr")' in hub.text
    assert main(["card", str(path), "--output", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
