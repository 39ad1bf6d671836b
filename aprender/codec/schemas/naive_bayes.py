"""Schemas of the naive Bayes classifiers: per-class arrays against ``classes_``.

Quantizable: GaussianNB's ``theta_`` (class means) only. ``var_`` is left exact
because block quantization rounds a small variance next to a large one in the same
block to zero, and a zero variance turns the likelihood into inf/NaN. The discrete
models' ``feature_log_prob_`` is left exact too: an absolute error in log space is a
relative error in probability, multiplied by every count of a sample.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import naive_bayes as sk

from aprender import naive_bayes as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, n_features
from aprender.codec.schemas._model_checks import class_labels


def _per_class(attrs: Mapping[str, Any], path: str, vectors: tuple[str, ...], matrices: tuple[str, ...]) -> None:
    n = n_features(attrs, path)
    k = class_labels(attrs, path)
    for name in vectors:
        array(attrs, name, path, ndim=(1,), shape={0: k})
    for name in matrices:
        array(attrs, name, path, ndim=(2,), shape={0: k, 1: n})


def check_gaussian_nb(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """theta_ and var_ are (n_classes, n_features); counts and priors are (n_classes,)."""
    _per_class(attrs, path, ("class_count_", "class_prior_"), ("theta_", "var_"))


def check_discrete_nb(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """feature counts and log-probabilities are (n_classes, n_features); class arrays (n_classes,)."""
    _per_class(attrs, path, ("class_count_", "class_log_prior_"), ("feature_count_", "feature_log_prob_"))


# One Spec object per class pair: sharing one would let from_state(expected=MultinomialNB)
# rebuild a BernoulliNB file as a MultinomialNB (registry.same_schema compares Specs).
SCHEMAS = [
    (
        (ap.GaussianNB, sk.GaussianNB),
        # Nothing quantizable: variances sit at the 1e-9 smoothing floor for constant
        # features, so a mean error of one Q8_0 step costs thousands of nats of
        # log-likelihood (measured: digits accuracy 77% -> 16%).
        Spec(ModelType.NAIVE_BAYES, validate=check_gaussian_nb),
    ),
    ((ap.MultinomialNB, sk.MultinomialNB), Spec(ModelType.NAIVE_BAYES, validate=check_discrete_nb)),
    ((ap.BernoulliNB, sk.BernoulliNB), Spec(ModelType.NAIVE_BAYES, validate=check_discrete_nb)),
]
