"""Every value LightGBM's parameter tables accept at load, LightGBM accepts at predict.

LightGBM checks an estimator's whole configuration (its constructor parameters and keyword
arguments) at every ``predict``. A value that aprender's tables (``schemas/_lgbm_params.py``)
let through but LightGBM's own bounds refuse would load and then fail every prediction (a
file with ``subsample=0.0`` or ``cat_smooth=-1``), and ``num_class`` sizes LightGBM's buffers
at every ``predict`` whatever the booster holds (a file with ``num_class=2**31 - 1`` asked
gigabytes for six rows). So each check is swept over edge values here: every one it accepts
must predict, and a fitted estimator's ``num_class`` must be its booster's.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

lightgbm = pytest.importorskip("lightgbm", reason="LightGBM is an optional extra: pip install 'aprender[lightgbm]'")

from sklearn.datasets import make_classification  # noqa: E402

from aprender.codec import to_state  # noqa: E402
from aprender.codec.schemas._lgbm_params import CONSTRUCTOR, KWARGS, MAX_NUM_CLASS  # noqa: E402
from aprender.codec.trust import PARAM_RULES  # noqa: E402
from aprender.exceptions import FormatError  # noqa: E402
from aprender.format import safetensors  # noqa: E402

_X, _Y = make_classification(60, 4, n_informative=2, random_state=0)
#: Edge values of every kind of bound: signs, zero, one, fractions, 2 (Tweedie's open end), the
#: class bound and past it, int32's ends, huge floats, a flag.
_EDGES = (-(2**31), -1e300, -1, -0.5, 0, 0.0, 1e-300, 0.5, 1, 1.0, 1.5, 2, 2.0, MAX_NUM_CLASS, MAX_NUM_CLASS + 1,
          2**31 - 1, 1e300, True, False)


@pytest.fixture(scope="module")
def binary() -> lightgbm.LGBMClassifier:
    return lightgbm.LGBMClassifier(n_estimators=2, num_leaves=4, verbose=-1).fit(_X, _Y)


def _accepted(name: str) -> list:
    check = CONSTRUCTOR.get(name) or KWARGS[name]
    rule = PARAM_RULES.get(name)
    return [v for v in _EDGES if check(v) and (rule is None or rule[0](v))]


@pytest.mark.parametrize("name", sorted(set(CONSTRUCTOR) | set(KWARGS)))
def test_every_accepted_value_predicts(binary: lightgbm.LGBMClassifier, name: str) -> None:
    refused = {}
    for value in _accepted(name):
        if name == "num_class" and value != 1:
            continue  # a fitted estimator's num_class is its booster's (test below)
        model = copy.copy(binary)
        model._other_params = dict(binary._other_params)
        model.set_params(**{name: value})
        try:
            model.predict_proba(_X[:3])
        except lightgbm.basic.LightGBMError as exc:
            refused[value] = str(exc)[:120]
    assert not refused, f"{name}: the table accepts values LightGBM refuses at predict: {refused}"


@pytest.fixture(scope="module")
def stated() -> lightgbm.LGBMClassifier:
    # num_class=1 is what LightGBM takes for a binary model: the keyword as a user may pass it.
    return lightgbm.LGBMClassifier(n_estimators=2, num_leaves=4, verbose=-1, num_class=1).fit(_X, _Y)


@pytest.mark.parametrize("value", [2, MAX_NUM_CLASS, 2**31 - 1])
def test_num_class_is_the_boosters(stated: lightgbm.LGBMClassifier, value: int) -> None:
    state = to_state(stated)
    state.meta["model"]["params"]["num_class"] = value
    items = state.meta["model"]["attrs"]["_other_params"]["items"]
    items[[name for name, _ in items].index("num_class")][1] = value
    with pytest.raises(FormatError, match="num_class"):
        safetensors.loads(safetensors.state_to_bytes(state))


def test_the_booster_count_loads(stated: lightgbm.LGBMClassifier) -> None:
    loaded = safetensors.loads(safetensors.state_to_bytes(to_state(stated)))
    np.testing.assert_array_equal(loaded.predict_proba(_X), stated.predict_proba(_X))
