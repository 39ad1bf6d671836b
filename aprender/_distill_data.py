"""Transfer sets and soft targets for :func:`aprender.distill` (private).

* :func:`synthesize` grows the transfer set around the training rows with MUNGE
  (Bucilua, Caruana and Niculescu-Mizil, "Model compression", KDD 2006): each new row
  starts from a training row and, feature by feature with probability ``swap``, takes a
  value drawn around its nearest neighbour's, so the new rows stay inside the data's
  local structure (per-feature sampling between neighbours, not global noise).
* :func:`soft_targets` turns the teachers' class probabilities into the tempered,
  averaged distribution ``softmax(log p / T)`` and blends it with the one-hot labels.
* :func:`expand` rewrites soft targets as weighted hard-labelled rows, one per class
  of non-zero probability: the weighted cross-entropy of the expanded rows equals the
  soft-target cross-entropy of the original ones, term for term.
"""

from __future__ import annotations

import hashlib

import numpy as np
from sklearn.neighbors import NearestNeighbors

__all__ = ["expand", "sha256_of_arrays", "soft_targets", "synthesize", "tempered"]

#: Probability that MUNGE resamples a feature from around the neighbour's value.
SWAP = 0.5
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


def sha256_of_arrays(*arrays: np.ndarray) -> str:
    """sha256 over the arrays' float64 little-endian C-ordered bytes, in order."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    return digest.hexdigest()
