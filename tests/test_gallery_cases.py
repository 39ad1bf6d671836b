"""What scikit-learn's own example gallery fits, and a load once refused: each saved file loads.

benchmarks/gallery.py runs the gallery (scikit-learn 1.9.1's examples, offline) and saves
every estimator a script fits. A refusal at load of a file aprender wrote itself loses the
user's model; each one the gallery found is fitted here as the example fits it, saved in
every format that loads back, loaded, and compared bit for bit. The checks the fix added
are then shown a file that lies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder
from state_edit import find, hostile

import aprender

#: Five categories, three of them infrequent (release highlights 1.3: OrdinalEncoder's max_categories).
WORDS = np.array([["a"] * 10 + ["b"] * 8 + ["c"] * 3 + ["d"] * 2 + ["e"]], dtype=object).T


def _iris() -> tuple[np.ndarray, np.ndarray]:
    return load_iris(return_X_y=True)


CASES: dict[str, Any] = {
    "ordinal-max-categories": lambda: (OrdinalEncoder(max_categories=3).fit(WORDS), WORDS),
    "ordinal-min-frequency": lambda: (OrdinalEncoder(min_frequency=3).fit(WORDS), WORDS),
    "one-hot-infrequent": lambda: (OneHotEncoder(max_categories=3, handle_unknown="infrequent_if_exist",
                                                 sparse_output=False).fit(WORDS), WORDS),
    # release highlights 1.8: temperature scaling fits one calibrator for all three classes
    "calibrated-temperature": lambda: (CalibratedClassifierCV(LogisticRegression(max_iter=500),
                                                              method="temperature").fit(*_iris()), _iris()[0]),
}


def _outputs(model: Any, X: Any) -> dict[str, np.ndarray]:
    out = {}
    for method in ("transform", "predict", "predict_proba"):
        if hasattr(model, method):
            out[method] = np.asarray(getattr(model, method)(X))
    return out


@pytest.mark.parametrize("suffix", [".apr", ".safetensors", ".gguf"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_what_the_gallery_fits_loads_and_answers_the_same(case: str, suffix: str, tmp_path: Path) -> None:
    model, X = CASES[case]()
    aprender.save(model, tmp_path / f"m{suffix}")
    loaded = aprender.load(tmp_path / f"m{suffix}")
    want, got = _outputs(model, X), _outputs(loaded, X)
    assert want and want.keys() == got.keys()
    for method in want:
        np.testing.assert_array_equal(got[method], want[method], err_msg=method)


def test_an_ordinal_grouping_that_is_not_the_infrequent_one_is_refused(tmp_path: Path) -> None:
    model, _ = CASES["ordinal-max-categories"]()

    def regroup(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        name = next(n for n in tensors if n.endswith("_default_to_infrequent_mappings.0"))
        tensors[name] = np.array([0, 1, 2, 2, 2**40], dtype=tensors[name].dtype)

    assert "is not the grouping" in str(hostile(model, regroup, tmp_path))


def test_an_ordinal_grouping_without_its_infrequent_indices_is_refused(tmp_path: Path) -> None:
    model, _ = CASES["ordinal-max-categories"]()

    def drop(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        node = meta["model"]
        node["attrs"]["_infrequent_indices"] = [None]
        for name in [n for n in tensors if "_infrequent_indices" in n]:
            del tensors[name]

    assert "must be given together" in str(hostile(model, drop, tmp_path))


def test_a_calibrator_of_another_method_is_refused(tmp_path: Path) -> None:
    """A sigmoid calibrator under method='temperature' answered probabilities of another model."""
    model = CalibratedClassifierCV(LogisticRegression(max_iter=500), method="sigmoid", cv=2).fit(*_iris())

    def retag(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        for calibrated in find(meta, "CalibratedClassifierCV")["attrs"]["calibrated_classifiers_"]:
            calibrated["state"]["method"] = "temperature"
            calibrated["state"]["calibrators"] = calibrated["state"]["calibrators"][:1]

    assert "method='temperature' fits a _TemperatureScaling" in str(hostile(model, retag, tmp_path))
