"""A warm-start refit of a loaded model on data of another shape is refused, not run into compiled code.

Unguarded, ``MultiTaskElasticNet``/``MultiTaskLasso`` write past the stored ``coef_``
(docs/threat-model.md, "Warm starts"), so each refusal runs in a child process: a crash
fails the test instead of killing pytest.
"""

from __future__ import annotations

import numpy as np
import pytest
from child import load_and_use
from sklearn import linear_model as sk

import aprender
from aprender.codec._warm_start import WARM_START_RULES
from aprender.exceptions import WarmStartMismatchError

#: One class per rule of the table and their namesake subclasses, with the targets each fits.
CLASSES = {"ElasticNet": 1, "Lasso": 1, "MultiTaskElasticNet": 2, "MultiTaskLasso": 2, "HuberRegressor": 1}

SETUP = """
import numpy as np
rng = np.random.RandomState(0)
def data(width, targets):
    X = rng.normal(size=(40, width))
    y = X[:, 0] + 1 if targets == 1 else np.stack([X[:, 0] + k for k in range(targets)], axis=1)
    return X, y
"""


def _saved(tmp_path, name: str) -> str:
    X = np.random.RandomState(1).normal(size=(40, 3))
    targets = CLASSES[name]
    y = X[:, 0] if targets == 1 else np.stack([X[:, 0], -X[:, 1]], axis=1)
    path = str(tmp_path / f"{name}.safetensors")
    aprender.save(getattr(sk, name)(warm_start=True, alpha=0.01).fit(X, y), path)
    return path


def test_every_rule_class_is_covered() -> None:
    assert {c.__name__ for c in WARM_START_RULES} <= set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_refit_of_another_shape_is_refused(tmp_path, name: str) -> None:
    path, targets = _saved(tmp_path, name), CLASSES[name]
    shapes = {"wider": (6, targets), "narrower": (2, targets), "more_targets": (3, targets + 2)}
    cases = {case: (path, f"m.fit(*data{shape})") for case, shape in shapes.items()}
    for case, outcome in load_and_use(cases, SETUP).items():
        assert outcome.startswith("USED, raised WarmStartMismatchError"), (case, outcome)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_refit_of_the_same_shape_matches_scikit_learn(tmp_path, name: str) -> None:
    path, targets = _saved(tmp_path, name), CLASSES[name]
    rng = np.random.RandomState(2)
    X = rng.normal(size=(40, 3))
    y = X[:, 1] if targets == 1 else np.stack([X[:, 1], X[:, 2]], axis=1)
    loaded = aprender.load(path)
    reference = aprender.load(path)
    vars(reference).pop("fit")  # the bare scikit-learn method, for comparison
    assert loaded.fit(X, y).coef_.tobytes() == reference.fit(X, y).coef_.tobytes()
    with pytest.raises(WarmStartMismatchError, match="warm_start=False"):
        loaded.fit(X[:, :2], y)
    loaded.set_params(warm_start=False).fit(X[:, :2], y)  # the way out the message names
    assert loaded.coef_.shape[-1] == 2


def test_a_loaded_guarded_model_saves_again(tmp_path) -> None:
    """The guard is not fitted state: a loaded model saves and loads again, guarded again."""
    loaded = aprender.load(_saved(tmp_path, "MultiTaskLasso"))
    path = str(tmp_path / "again.safetensors")
    aprender.save(loaded, path)
    again = aprender.load(path)
    assert again.coef_.tobytes() == loaded.coef_.tobytes()
    with pytest.raises(WarmStartMismatchError):
        again.fit(np.ones((5, 4)), np.ones((5, 2)))
