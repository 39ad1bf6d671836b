"""Transfer sets and soft targets for :func:`aprender.distill` (private).

* :func:`synthesize` grows the transfer set around the training rows with MUNGE
  (Bucilua, Caruana and Niculescu-Mizil, "Model compression", KDD 2006): each new row
  starts from a training row and, feature by feature with probability ``SWAP``, takes a
  value drawn around its nearest neighbour's, so the new rows stay inside the data's
  local structure (per-feature sampling between neighbours, not global noise).
  :func:`synthesis_record` describes it for the provenance.
* :func:`soft_targets` turns the teachers' class probabilities into the tempered,
  averaged distribution ``softmax(log p / T)`` and blends it with the one-hot labels.
* :func:`expand` rewrites soft targets as weighted hard-labelled rows, one per class
  of non-zero probability: the weighted cross-entropy of the expanded rows equals the
  soft-target cross-entropy of the original ones, term for term.
* :func:`soft_labels` lets an MLPClassifier learn the soft targets themselves: its loss
  (cross-entropy against a target matrix) and gradient (output minus target) are
  already those of soft targets; only its input check turns ``y`` into one-hot rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.validation import validate_data

__all__ = ["expand", "learns_soft_labels", "sha256_of_arrays", "soft_labels", "soft_targets", "synthesis_record",
           "synthesize", "tempered"]

#: Probability that MUNGE resamples a feature from around the neighbour's value. The
#: paper's 0.5 moves a row in half its features at once; 0.2 keeps the new rows nearer
#: the data, where the student is used (docs/distill.md has the measurements).
SWAP = 0.2
#: MUNGE's local spread: the resampled value is Normal(neighbour, |a - b| / SPREAD).
SPREAD = 2.0


def synthesize(X: np.ndarray, n: int, rng: np.random.RandomState) -> np.ndarray:
    """``n`` new rows drawn around the rows of ``X`` by MUNGE (see the module docstring)."""
    if n <= 0 or X.shape[0] < 2:
        return np.empty((0, X.shape[1]))
    neighbours = NearestNeighbors(n_neighbors=2).fit(X).kneighbors(X, return_distance=False)
    # The nearest other row: duplicates may put the row itself second.
    own = neighbours[:, 0] == np.arange(X.shape[0])
    partner = np.where(own, neighbours[:, 1], neighbours[:, 0])
    base = rng.randint(X.shape[0], size=n)
    a, b = X[base], X[partner[base]]
    resampled = b + rng.standard_normal(a.shape) * np.abs(a - b) / SPREAD
    return np.where(rng.random_sample(a.shape) < SWAP, resampled, a)


def synthesis_record() -> dict[str, float | str]:
    """How :func:`synthesize` makes rows, for ``provenance_["transfer_set"]["synthesis"]``."""
    return {"kind": "munge", "swap": SWAP, "spread": SPREAD}


def tempered(proba: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log(proba) / T)``: probability 0 (logit -inf) stays 0."""
    with np.errstate(divide="ignore"):
        logits = np.log(proba) / temperature
    logits -= logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=1, keepdims=True)


def soft_targets(
    probas: list[np.ndarray], temperature: float, alpha: float, onehot: np.ndarray | None
) -> np.ndarray:
    """Mean of the teachers' tempered probabilities, blended with ``onehot`` on its rows.

    ``onehot`` covers the first ``len(onehot)`` rows (the labelled ones); the rest keep
    the teachers' distribution alone.
    """
    target = np.mean([tempered(p, temperature) for p in probas], axis=0)
    if onehot is not None and len(onehot):
        n = onehot.shape[0]
        target[:n] = alpha * target[:n] + (1.0 - alpha) * onehot
    return target


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


def sha256_of_arrays(*arrays: np.ndarray) -> str:
    """sha256 over the arrays' float64 little-endian C-ordered bytes, in order."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    return digest.hexdigest()
