"""aprender's warnings name the caller's line, not a line inside aprender."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import aprender
from aprender.ensemble import MixtureOfExpertsRegressor
from aprender.format import gguf
from aprender.linear_model import LinearRegression
from aprender.naive_bayes import GaussianNB


def _caught(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


def test_warnings_point_at_the_line_that_called_aprender(tmp_path: Path) -> None:
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    nb = GaussianNB().fit(X, [0, 0, 1, 1])
    calls = {
        "aprender.save": lambda: aprender.save(nb, tmp_path / "a.gguf", quantize="q8_0"),
        "gguf.save_file": lambda: gguf.save_file(nb, tmp_path / "b.gguf", quantize="q8_0"),
        "save_apr": lambda: nb.save_apr(tmp_path / "c.apr", quantize="q8_0"),
        "MoE.fit": lambda: MixtureOfExpertsRegressor([LinearRegression(), LinearRegression()], max_iter=2, tol=1e-300,
                                                     random_state=0).fit(np.arange(40.0).reshape(20, 2),
                                                                         np.arange(20.0) ** 2),
    }
    for name, call in calls.items():
        caught = _caught(call)
        assert caught, f"{name} warned nothing"
        assert {w.filename for w in caught} == {__file__}, (name, [(w.filename, str(w.message)) for w in caught])


def test_a_version_skew_warning_is_aprenders_own(tmp_path: Path) -> None:
    import sklearn

    from aprender.codec import ModelState, from_state, to_state
    from aprender.exceptions import VersionSkewWarning

    state = to_state(LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0]))
    meta = {**state.meta, "versions": {**state.meta["versions"], "sklearn": "1.6.1"}}
    caught = _caught(lambda: from_state(ModelState(state.tensors, meta)))
    assert [w.category for w in caught] == [VersionSkewWarning] and caught[0].filename == __file__
    message = str(caught[0].message)
    expected = f"this model was saved under scikit-learn 1.6.1 and is loaded under {sklearn.__version__}"
    assert message.startswith(expected)
    assert "nothing was unpickled" in message and "unpickle estimator" not in message
