"""Every scikit-learn estimator round-trips bit-identically through SafeTensors, .apr and GGUF.

The instances are the ones scikit-learn's own test suite builds
(``sklearn.utils._test_common.instance_generator``), fitted once per process on small
data (tests/support/sklearn_instances.py). Every inference method must give the same bits
after loading; an estimator whose outputs are random draws (DummyClassifier's
"stratified", BernoulliRBM's ``score_samples``) is compared by its fitted attributes.
The few classes still refused are listed in :data:`REFUSED` with the reason, and
must keep raising :class:`UnsupportedTypeError` (docs/codec.md lists them too).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn_instances as si

from aprender.codec import from_state, to_state
from aprender.exceptions import UnsupportedTypeError
from aprender.format import apr, gguf, safetensors

REFUSED = si.REFUSED

FORMATS = {
    "safetensors": (safetensors.state_to_bytes, safetensors.state_from_bytes),
    "apr": (apr.state_to_bytes, apr.state_from_bytes),
    "gguf": (gguf.state_to_bytes, gguf.state_from_bytes),
}

IDS = sorted(set(si.instances()) - set(REFUSED))


def _deterministic(est, rows) -> bool:
    return all(si.same(a, b) for a, b in zip(si.outputs(est, rows).values(), si.outputs(est, rows).values(),
                                               strict=True))


def _public_attrs(est) -> dict:
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _same_attrs(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return si.same(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_attrs(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_attrs, a, b))
    if isinstance(a, (str, int, float, np.generic)) or a is None:
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return type(a) is type(b)  # estimators and helper objects: their outputs were compared


@pytest.mark.parametrize("key", IDS)
def test_roundtrip_in_every_format(key: str) -> None:
    est, rows = si.fitted(key)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = to_state(est)
    expected = si.outputs(est, rows)
    deterministic = _deterministic(est, rows)
    for fmt, (dump, parse) in FORMATS.items():
        loaded = from_state(parse(dump(state)))
        assert type(loaded) is type(est), fmt
        if deterministic:
            got = si.outputs(loaded, rows)
            assert got.keys() == expected.keys()
            for method, value in expected.items():
                assert si.same(value, got[method]), f"{fmt}: {method} differs"
        a, b = _public_attrs(est), _public_attrs(loaded)
        assert a.keys() == b.keys(), fmt
        assert all(_same_attrs(a[k], b[k]) for k in a), fmt


def test_refused_estimators_say_so() -> None:
    """Each instance listed as refused is refused on save (the list is empty: every instance saves)."""
    for key in REFUSED:
        est, _ = si.fitted(key)
        with pytest.raises(UnsupportedTypeError):
            to_state(est)


def test_every_instance_is_covered() -> None:
    """Every estimator all_estimators() lists has an instance, but FrozenEstimator (it needs a fitted one)."""
    from sklearn.utils import all_estimators

    built = {key.rsplit("-", 1)[0] if key.rsplit("-", 1)[-1].isdigit() else key for key in si.instances()}
    # IterativeImputer is listed only once some import has enabled the experimental class; the generator
    # never builds it (tests/test_namesakes.py round-trips it).
    assert {name for name, _ in all_estimators()} - built - {"IterativeImputer"} == {"FrozenEstimator"}
    assert set(REFUSED) <= built
