"""scikit-learn's estimator contract, checked on text for NgramLm and ContentRecommender.

sklearn's own checks fit on generated numeric arrays, which a model of documents
cannot take (tests/support/cases_own_models.py lists them). These tests assert the same
contracts with the documents these models are made for.
"""

from __future__ import annotations

import joblib
import numpy as np
import pytest
from cases_own_models import CATALOGUE, CORPUS, HELD_OUT, QUERIES
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from zoo import outputs

from aprender.recommend import ContentRecommender
from aprender.text import NgramLm

MODELS = [(NgramLm(n=3), "score_samples"), (NgramLm(smoothing="add_k", n=2), "score_samples"),
          (ContentRecommender(ngram_range=(1, 2)), "transform")]


def _data(method: str) -> tuple[list[str], list[str]]:
    """Training documents and documents to run inference on."""
    return (CORPUS, HELD_OUT) if method == "score_samples" else (list(CATALOGUE.values()), QUERIES)


@pytest.fixture(params=MODELS, ids=lambda m: f"{type(m[0]).__name__}-{m[1]}")
def model(request):
    estimator, method = request.param
    return clone(estimator), method, *_data(method)


def test_fit_returns_self_and_keeps_params(model) -> None:
    est, _, train, _ = model
    params = joblib.hash(est.get_params())
    assert est.fit(train) is est
    assert joblib.hash(est.get_params()) == params
    check_is_fitted(est)
    assert all(name.endswith("_") for name in vars(est) if name not in est.get_params())


def test_unfitted_raises_not_fitted(model) -> None:
    est, method, _, X = model
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError):
        getattr(est, method)(X)


def test_inference_does_not_change_state(model) -> None:
    est, _, train, X = model
    est.fit(train)
    before = joblib.hash(vars(est))
    outputs(est, X)
    assert joblib.hash(vars(est)) == before


def test_fit_is_idempotent_and_clone_reproducible(model) -> None:
    est, method, train, X = model
    first = getattr(est.fit(train), method)(X)
    assert np.array_equal(getattr(est.fit(train), method)(X), first)
    assert np.array_equal(getattr(clone(est).fit(train), method)(X), first)


def test_subset_and_order_invariance(model) -> None:
    est, method, train, X = model
    full = getattr(est.fit(train), method)(X)
    order = np.random.default_rng(0).permutation(len(X))
    assert np.array_equal(getattr(est, method)([X[i] for i in order]), full[order])
    assert np.array_equal(getattr(est, method)(X[1:3]), full[1:3])


def test_fit_on_empty_data_raises(model) -> None:
    est, _, _, _ = model
    with pytest.raises(ValueError):
        est.fit([])
