"""Step 3 of :func:`aprender.distill`: fit a student to the soft targets (private).

:func:`fit_classifier` picks, for the student at hand, the fit that learns the soft
targets exactly (docs/distill.md, step 4):

* an MLPClassifier learns the target matrix itself (:func:`soft_labels`): its loss
  (cross-entropy against a target matrix) and gradient (output minus target) are
  already those of soft targets; only its input check turns ``y`` into one-hot rows;
* a HistGradientBoostingClassifier boosts on a soft-target loss
  (:func:`aprender.distillation._students.soft_boosting`);
* any other student that takes ``sample_weight`` learns the rows of :func:`expand`,
  whose weighted cross-entropy equals the soft-target cross-entropy term for term (a
  LogisticRegression starts at the solution, :func:`~aprender.distillation._students.logistic_start`);
* the rest learn the argmax of the targets.

:func:`fit_regressor` fits ``alpha * teacher + (1 - alpha) * y`` as plain targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.validation import has_fit_parameter, validate_data

from aprender.distillation import _progressive as progressive
from aprender.distillation import _students as students

__all__ = ["expand", "fit_classifier", "fit_regressor", "learns_soft_labels", "soft_labels"]

#: Smallest probability the distillation loss takes the logarithm of.
_EPS = 1e-12


def expand(X: np.ndarray, targets: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per (row, class) of non-zero target probability, weighted by that probability."""
    rows, cols = np.nonzero(targets > 0)
    return X[rows], classes[cols], targets[rows, cols]


def learns_soft_labels(model: Any) -> bool:
    """Whether :func:`soft_labels` applies: an MLPClassifier without early stopping.

    Early stopping scores a validation split by accuracy against ``y``, which a
    matrix of probabilities is not.
    """
    from sklearn.neural_network import MLPClassifier

    return isinstance(model, MLPClassifier) and not model.early_stopping and hasattr(model, "_validate_input")


@contextmanager
def soft_labels(model: Any, targets: np.ndarray, classes: np.ndarray) -> Iterator[None]:
    """While active, ``model.fit(X, y)`` of an MLPClassifier learns ``targets`` in place of one-hot ``y``.

    ``targets`` holds one row of class probabilities per row of ``X`` (columns in the
    order of ``classes``); ``y`` is ignored. scikit-learn's MLP turns ``y`` into a
    one-hot matrix in ``_validate_input``, then minimises the cross-entropy of its
    output against that matrix with gradient ``output - matrix``: handing it the
    probabilities instead is the soft-target fit, exactly, with one row per row
    (where expanding rows per class multiplies the rows by up to the number of
    classes). Binary problems have one logistic output, the probability of
    ``classes[1]``. The fitted model has the ``classes_`` and label binarizer a fit on
    ``classes`` gives.
    """
    binarizer = LabelBinarizer().fit(classes)
    matrix = targets[:, 1:] if len(classes) == 2 else targets

    def validate(X: Any, y: Any, incremental: bool, reset: bool) -> tuple[Any, np.ndarray]:
        X = validate_data(model, X, accept_sparse=["csr", "csc"], dtype=(np.float64, np.float32), reset=reset)
        model._label_binarizer = binarizer
        model.classes_ = binarizer.classes_
        return X, matrix

    model._validate_input = validate  # an instance attribute shadows the method ...
    try:
        yield
    finally:
        del model._validate_input  # ... until removed: the saved model is a plain MLPClassifier


def _fit(model: Any, X: np.ndarray, y: np.ndarray, layers: list, **fit_params: Any) -> None:
    if layers:
        progressive.warm_fit(model, X, y, layers, **fit_params)
    else:
        model.fit(X, y, **fit_params)


def fit_classifier(model: Any, X: np.ndarray, targets: np.ndarray, classes: np.ndarray,
                   layers: list, evidence_rows: int | None = None) -> tuple[bool, float]:
    """Fit ``model`` to the soft ``targets`` of the rows of ``X``.

    ``evidence_rows`` is the number of real rows the transfer set was built around. A
    LogisticRegression student's rows are weighted so that their weights sum to it:
    its L2 penalty is ``1 / (C * sum of weights)`` per unit of mean loss, so the
    penalty is the one a fit on those real rows has, not one made weaker by every
    synthesized row (which adds no new evidence).

    Returns whether it learned the soft targets (false: their argmax) and its
    soft-target cross-entropy on ``X``.
    """
    labels = classes[targets.argmax(axis=1)]
    soft = True
    if learns_soft_labels(model):
        with soft_labels(model, targets, classes):
            _fit(model, X, labels, layers)
    elif students.boosts_soft_targets(model) and len(np.unique(labels)) == len(classes):
        with students.soft_boosting(model, targets):
            _fit(model, X, labels, layers)
    elif has_fit_parameter(model, "sample_weight"):
        Xe, ye, we = expand(X, targets, classes)
        if evidence_rows and students.is_logistic(model):
            we = we * (evidence_rows / len(X))
        if students.starts_logistic(model):
            with students.logistic_start(model, X, targets, evidence_rows or len(X)):
                _fit(model, Xe, ye, layers, sample_weight=we)
        else:
            _fit(model, Xe, ye, layers, sample_weight=we)
    else:
        _fit(model, X, labels, layers)
        soft = False
    proba = np.zeros_like(targets)
    proba[:, np.searchsorted(classes, model.classes_)] = model.predict_proba(X)
    return soft, float(-np.mean(np.sum(targets * np.log(np.maximum(proba, _EPS)), axis=1)))


def fit_regressor(model: Any, X: np.ndarray, targets: np.ndarray, layers: list) -> float:
    """Fit ``model`` to ``targets``; returns its mean squared error on them."""
    _fit(model, X, targets, layers)
    return float(np.mean((np.asarray(model.predict(X), dtype=np.float64) - targets) ** 2))
