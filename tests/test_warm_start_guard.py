"""A warm-start refit of a loaded model on data of another shape is refused, not run into compiled code.

Unguarded, ``MultiTaskElasticNet``/``MultiTaskLasso`` write past the stored ``coef_`` and
``HistGradientBoosting*`` reads past a narrower input (docs/threat-model.md, "Warm starts"),
so each refusal of a refit runs in a child process: a crash fails the test instead of killing pytest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sklearn_instances as si
from child import load_and_use
from sklearn import linear_model as sk
from sklearn.base import BaseEstimator

import aprender
from aprender.codec import from_state, to_state
from aprender.codec._warm_start import WARM_START_RULES, is_warm_start_guard, warm_starts
from aprender.exceptions import WarmStartMismatchError

#: One class per rule of the table and their namesake subclasses, with the targets each fits.
CLASSES = {"ElasticNet": 1, "Lasso": 1, "MultiTaskElasticNet": 2, "MultiTaskLasso": 2, "HuberRegressor": 1}

SETUP = """
from typing import Any

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


def _warm_start_instances() -> list[str]:
    """Every scikit-learn instance whose class takes ``warm_start`` and fits on a dense matrix."""
    return [key for key, est in si.instances().items() if warm_starts(type(est))]


def test_every_class_with_warm_start_is_guarded_against_another_width() -> None:
    """The width rule is by parameter: every such class gets the guard, and it refuses before fit runs."""
    keys, checked = _warm_start_instances(), 0
    assert len(keys) >= 30, keys
    for key in keys:
        est, rows = si.fitted(key)
        if not isinstance(rows, np.ndarray) or rows.ndim != 2 or rows.shape[1] < 2:
            continue
        loaded = from_state(to_state(est))
        assert is_warm_start_guard("fit", vars(loaded).get("fit")), key
        loaded.set_params(warm_start=True)
        with pytest.raises(WarmStartMismatchError, match=r"fitted on \d+ feature"):
            loaded.fit(rows[:, :-1], None)  # refused on the width alone, before scikit-learn's fit reads y
        checked += 1
    assert checked >= 25, checked


def test_hist_gradient_boosting_refit_on_narrower_data_is_refused(tmp_path) -> None:
    """Unguarded, the kept trees read the columns they split on past the end of the narrower input."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    X = np.random.RandomState(0).rand(60, 40)
    path = str(tmp_path / "hgb.safetensors")
    aprender.save(HistGradientBoostingRegressor(max_iter=3, warm_start=True).fit(X, X[:, 39]), path)
    use = "m.set_params(max_iter=4); m.fit(np.random.rand(50, 1), np.random.rand(50))"
    outcome = load_and_use({"narrower": (path, use)}, "import numpy as np")["narrower"]
    assert outcome.startswith("USED, raised WarmStartMismatchError: HistGradientBoostingRegressor(warm_start=True) "
                              "would continue a model fitted on 40 feature(s) with data of 1 feature(s)"), outcome
    loaded = aprender.load(path)
    assert loaded.set_params(max_iter=4).fit(X, X[:, 39]).n_iter_ == 4  # the same width continues


def test_hist_gradient_boosting_refit_with_other_categorical_features_is_refused(tmp_path) -> None:
    """Kept categorical splits would look their feature up in the new data's empty known-category table."""
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"c": pd.Categorical(rng.randint(0, 30, 120)), "x": rng.rand(120)})
    y = (frame["c"].cat.codes % 2).to_numpy() * 10.0
    path = str(tmp_path / "hgb.safetensors")
    aprender.save(HistGradientBoostingRegressor(max_iter=3, warm_start=True).fit(frame, y), path)
    loaded = aprender.load(path).set_params(max_iter=4)
    with pytest.raises(WarmStartMismatchError, match=r"categorical features \[0\], the data's are \[\]"):
        loaded.fit(frame.to_numpy(dtype=float), y)  # the same width, every column numeric
    assert loaded.fit(frame, y).n_iter_ == 4  # the same layout continues


class _RunningMean(BaseEstimator):
    """A registered class with ``warm_start`` whose ``fit`` takes no ``y``."""

    def __init__(self, warm_start: bool = False) -> None:
        self.warm_start = warm_start

    def fit(self, X: Any) -> _RunningMean:
        X = np.asarray(X, dtype=float)
        self.n_features_in_ = X.shape[1]
        self.mean_ = X.mean(axis=0)
        return self


def test_a_registered_class_keeps_its_own_fit_signature() -> None:
    aprender.register_estimator(_RunningMean, key="tests.warm_start_guard.RunningMean")
    loaded = from_state(to_state(_RunningMean().fit(np.ones((4, 3)))))
    assert is_warm_start_guard("fit", vars(loaded).get("fit"))
    assert loaded.fit(np.zeros((2, 5))).mean_.shape == (5,)  # no y passed on; warm_start off: any width
    loaded.set_params(warm_start=True)
    with pytest.raises(WarmStartMismatchError, match="fitted on 5 feature"):
        loaded.fit(X=np.zeros((2, 2)))
