"""What save writes, load accepts: every simple value a parameter's constraints allow round-trips.

For a sample of the instance generator's estimators, each parameter is set in turn to each
value its ``_parameter_constraints`` lists in simple form (every ``StrOptions`` value, both
bools, an int where an ``Interval`` of reals is allowed, a numpy integer where an
``Interval`` of ints is, ``None`` where allowed). Where the fit succeeds on small data, the
model is saved (SafeTensors) and must load and give bit-identical outputs: a refusal of a
file aprender wrote loses the user's model. ``SVC(gamma=2)`` was refused before
(``'_gamma' must be a float``).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
import pytest
import sklearn_instances as si
from sklearn.base import clone
from sklearn.utils import all_estimators
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils._test_common.instance_generator import _construct_instances

from aprender.codec import from_state, to_state
from aprender.format import safetensors

#: Generator ids sampled: the schema-checked families (libsvm, linear, SGD, trees, clusters,
#: neighbors, naive Bayes) whose validators type-check fitted scalars, plus common transformers.
SAMPLE = (
    "SVC", "SVR", "NuSVC", "NuSVR", "OneClassSVM", "LinearSVC", "LinearSVR",
    "Ridge", "Lasso", "ElasticNet", "LogisticRegression", "SGDClassifier", "SGDRegressor",
    "DecisionTreeClassifier", "ExtraTreeRegressor", "KMeans", "KNeighborsClassifier",
    "GaussianNB", "StandardScaler", "PCA", "SimpleImputer",
)


#: Combinations whose reloaded outputs differ by rounding only, each with its reason; the test
#: requires them to stay within a few ulps so a real regression still fails.
ROUNDING_ONLY = {
    ("PCA", "svd_solver", "arpack"): "arpack's components_ is a reversed view (negative strides); the "
                                     "file stores it contiguous, and BLAS then sums in another order (1 ulp)",
}


def _simple_values(constraint: Any) -> list[Any]:
    """The values ``constraint`` allows in simple form (empty for estimators, callables, arrays...)."""
    if isinstance(constraint, StrOptions):
        return sorted(v for v in constraint.options if v not in constraint.deprecated)
    if constraint == "boolean":
        return [True, False]
    if constraint is None:
        return [None]
    if isinstance(constraint, Interval):
        kind = np.int64 if constraint.type is numbers.Integral else int
        return [kind(v) for v in (2, 1, 3, 0, 10) if v in constraint][:1]
    if isinstance(constraint, Options):
        return sorted(constraint.options, key=repr)
    return []


def _instance(key: str) -> Any:
    """The generator's first instance of the class named ``key`` (as sklearn's own checks build it)."""
    return next(iter(_construct_instances(dict(all_estimators())[key])))


INSTANCES = {key: _instance(key) for key in SAMPLE}


def _combos() -> list[tuple[str, str, Any]]:
    out = []
    for key in SAMPLE:
        est = INSTANCES[key]
        params = est.get_params(deep=False)
        for name, constraints in est._parameter_constraints.items():
            if name in params:
                out += [(key, name, v) for c in constraints for v in _simple_values(c) if v is not params[name]]
    return out


COMBOS = _combos()


def test_the_sample_is_broad() -> None:
    """The sweep covers many (class, parameter, value) combinations, not a handful."""
    assert len(COMBOS) > 300, len(COMBOS)


@pytest.mark.parametrize("key", SAMPLE)
def test_every_simple_parameter_value_saves_and_loads(key: str) -> None:
    failures, fitted = [], 0
    for _, name, value in (c for c in COMBOS if c[0] == key):
        est = clone(INSTANCES[key]).set_params(**{name: value})
        try:
            est, rows = si.fit(est)
        except Exception:  # scikit-learn refuses this combination: nothing to save
            continue
        fitted += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                loaded = from_state(safetensors.state_from_bytes(safetensors.state_to_bytes(to_state(est))))
            except Exception as exc:
                failures.append(f"{name}={value!r}: {type(exc).__name__}: {exc}")
                continue
        expected, got = si.outputs(est, rows), si.outputs(loaded, rows)
        if (key, name, value) in ROUNDING_ONLY:
            assert all(np.allclose(expected[m], got[m], rtol=1e-12, atol=1e-12) for m in expected), name
        elif not all(si.same(expected[m], got[m]) for m in expected):
            failures.append(f"{name}={value!r}: outputs differ")
    assert fitted, f"no value of {key}'s parameters fitted"
    assert not failures, failures
