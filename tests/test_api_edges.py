"""The edges of the public API give clear errors, not internal ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aprender
from aprender.cluster import KMeans
from aprender.codec import ModelType
from aprender.exceptions import FormatError, ModelTypeMismatch
from aprender.linear_model import LinearRegression


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("edges") / "km.apr"
    aprender.save(KMeans(n_clusters=2, n_init=1, random_state=0).fit(np.array([[0.0], [0.1], [5.0], [5.1]])), path)
    return path


@pytest.mark.parametrize("model_type", [KMeans, "KMeans", "aprender.cluster.KMeans", ModelType.KMEANS, 6, 0x0006])
def test_model_type_accepts_a_class_a_name_a_model_type_or_its_code(saved: Path, model_type: object) -> None:
    assert isinstance(aprender.load(saved, model_type=model_type), KMeans)


@pytest.mark.parametrize(("model_type", "expected"), [
    (LinearRegression, "expected LinearRegression"), ("LinearRegression", "expected LinearRegression"),
    (1, "expected LINEAR_REGRESSION"), (ModelType.PCA, "expected PCA"),
])
def test_model_type_mismatch_names_both(saved: Path, model_type: object, expected: str) -> None:
    with pytest.raises(ModelTypeMismatch, match=f"file contains KMeans.*, {expected}$"):
        aprender.load(saved, model_type=model_type)


def test_model_type_of_another_kind_says_what_is_allowed(saved: Path) -> None:
    with pytest.raises(TypeError, match="model_type must be an estimator class, a class name, a ModelType or its "
                                        "int code, got float"):
        aprender.load(saved, model_type=6.0)
    with pytest.raises(ValueError, match="model_type 0x7777 is not a known model type code; known: 0x0001"):
        aprender.load(saved, model_type=0x7777)


def test_saving_into_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    for suffix in (".apr", ".safetensors", ".gguf"):
        target = tmp_path / "nodir" / f"m{suffix}"
        with pytest.raises(FileNotFoundError, match=f"the folder '{tmp_path / 'nodir'}' does not exist"):
            aprender.save(model, target)
    with pytest.raises(IsADirectoryError, match="it is a directory; name a file in it"):
        model.save_apr(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_loading_a_directory_or_an_empty_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"'{tmp_path}' is a directory, not a model file"):
        aprender.load(tmp_path)
    empty = tmp_path / "empty.apr"
    empty.touch()
    with pytest.raises(FormatError, match="the file is empty \\(0 bytes\\)"):
        aprender.load(empty)


def test_an_unknown_compression_lists_the_valid_ones(tmp_path: Path) -> None:
    model = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    with pytest.raises(ValueError, match="'gzip' is not a valid compression; use one of 'none', 'zstd', 'zstd-max', "
                                         "'lz4'"):
        model.save_apr(tmp_path / "m.apr", compression="gzip")


def test_an_unsupported_sklearn_class_does_not_suggest_register_estimator() -> None:
    from sklearn.base import BaseEstimator

    from aprender.codec._registry import entry_for_class
    from aprender.exceptions import UnsupportedTypeError

    mine = type("Mine", (BaseEstimator,), {"__module__": "my_project.models"})
    with pytest.raises(UnsupportedTypeError, match=r"call aprender\.register_estimator"):
        entry_for_class(mine)
    fake_sklearn = type("Unlisted", (BaseEstimator,), {"__module__": "sklearn.unlisted"})
    with pytest.raises(UnsupportedTypeError, match="allow-list, and this one is not on it") as caught:
        entry_for_class(fake_sklearn)
    assert "register_estimator" not in str(caught.value)


def test_a_file_with_another_formats_suffix_still_loads(saved: Path, tmp_path: Path) -> None:
    """The suffix picks the backend first (one open); bytes of another format are sniffed and handed on."""
    apr_named_safetensors = tmp_path / "km.safetensors"
    apr_named_safetensors.write_bytes(saved.read_bytes())
    assert isinstance(aprender.load(apr_named_safetensors), KMeans)
    safetensors_named_apr = tmp_path / "km.apr"
    aprender.save(aprender.load(saved), tmp_path / "real.safetensors")
    safetensors_named_apr.write_bytes((tmp_path / "real.safetensors").read_bytes())
    assert isinstance(aprender.load(safetensors_named_apr, KMeans), KMeans)
