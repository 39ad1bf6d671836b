"""Step 2 of :func:`aprender.distill`: the transfer set and its soft targets (private).

* :func:`transfer_rows` is the training rows plus rows synthesized around them by
  :func:`synthesize`, MUNGE (Bucilua, Caruana and Niculescu-Mizil, "Model
  compression", KDD 2006): each new row starts from a training row and, feature by
  feature with probability ``SWAP``, takes a value drawn around its nearest
  neighbour's, so the new rows stay inside the data's local structure (per-feature
  sampling between neighbours, not global noise). :func:`synthesis_record` describes
  it for the provenance; :func:`auto_size` is ``transfer_size="auto"``.
* :func:`soft_targets` turns the teachers' class probabilities into the tempered,
  averaged distribution ``softmax(log p / T)`` and blends it with the one-hot labels.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from scipy import stats
from sklearn.neighbors import NearestNeighbors

from aprender.exceptions import DistillationError

__all__ = ["AUTO_MAX", "AUTO_MIN", "AUTO_PER_ROW", "RESIDUAL_LEVEL", "auto_size", "nearest_other", "regression_targets",
           "residual_structure", "sha256_of_arrays", "soft_targets", "synthesis_record", "synthesize", "tempered",
           "transfer_rows"]

#: ``transfer_size="auto"``: this many transfer rows per training row ...
AUTO_PER_ROW = 10
#: ... and at least / at most this many in all (never fewer than the training rows).
AUTO_MIN, AUTO_MAX = 20_000, 60_000

#: Probability that MUNGE resamples a feature from around the neighbour's value. The
#: paper's 0.5 moves a row in half its features at once; 0.2 keeps the new rows nearer
#: the data, where the student is used (docs/distill.md has the measurements).
SWAP = 0.2
#: Level of the one-sided test of :func:`residual_structure` that must find structure in the
#: teachers' residuals before a synthesized regression row carries its source row's one.
RESIDUAL_LEVEL = 0.05
#: MUNGE's local spread: the resampled value is Normal(neighbour, |a - b| / SPREAD).
SPREAD = 2.0


def nearest_other(X: np.ndarray) -> np.ndarray:
    """For each row of ``X`` (at least two), the index of its nearest other row."""
    neighbours = NearestNeighbors(n_neighbors=2).fit(X).kneighbors(X, return_distance=False)
    # Duplicates may put the row itself second.
    own = neighbours[:, 0] == np.arange(X.shape[0])
    return np.where(own, neighbours[:, 1], neighbours[:, 0])


def synthesize(X: np.ndarray, n: int, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """``n`` new rows drawn around the rows of ``X`` by MUNGE (see the module docstring), and the row of
    ``X`` each one started from."""
    if n <= 0 or X.shape[0] < 2:
        return np.empty((0, X.shape[1])), np.empty(0, dtype=np.intp)
    partner = nearest_other(X)
    base = rng.randint(X.shape[0], size=n)
    a, b = X[base], X[partner[base]]
    resampled = b + rng.standard_normal(a.shape) * np.abs(a - b) / SPREAD
    return np.where(rng.random_sample(a.shape) < SWAP, resampled, a), base


def auto_size(transfer_size: int | str, n_rows: int) -> int:
    """The number of transfer rows for ``n_rows`` training rows."""
    if transfer_size == "auto":
        return int(np.clip(AUTO_PER_ROW * n_rows, AUTO_MIN, max(AUTO_MAX, n_rows)))
    if isinstance(transfer_size, (int, np.integer)) and not isinstance(transfer_size, bool) and transfer_size >= 1:
        return int(transfer_size)
    raise DistillationError(f"transfer_size must be 'auto' or a positive int; got {transfer_size!r}")


def transfer_rows(X: np.ndarray, size: int, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """The first ``size`` rows of ``X`` followed by synthesized ones (``size`` rows in all), and for each
    the row of ``X`` it is or started from."""
    new, base = synthesize(X, size - X.shape[0], rng)
    return np.vstack([X, new])[:size], np.concatenate([np.arange(X.shape[0]), base])[:size]


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


def regression_targets(teacher: np.ndarray, X: np.ndarray, y: np.ndarray, source: np.ndarray,
                       alpha: float) -> tuple[np.ndarray, dict[str, Any]]:
    """``alpha * teacher + (1 - alpha) * y`` on the labelled rows; on a synthesized row, the teacher plus
    the blend's correction of the row it started from, when the corrections show structure.

    The first ``len(y)`` transfer rows are the labelled rows ``X``. A synthesized row
    ``x`` made from labelled row ``a`` gets ``teacher(x) + (1 - alpha) * (y_a - teacher(a))``:
    the teachers give the change from ``a`` to ``x``, the label keeps the level the
    teacher misses at ``a``. That carries a residual the teacher shares over a
    neighbourhood (a forest's flattened slopes and edges) to the synthesized rows, which
    otherwise learn the teacher alone; but it also copies one label's noise onto every
    row made from it. So it is applied only when the residuals of neighbouring labelled
    rows correlate (:func:`residual_structure`: a one-sided test at :data:`RESIDUAL_LEVEL`);
    pure noise is not carried. Returns the targets and the test's record.
    """
    n = len(y)
    y = np.asarray(y, dtype=np.float64)
    out = teacher.copy()
    out[:n] = alpha * teacher[:n] + (1.0 - alpha) * y
    residual = y - teacher[:n]
    correlation, p_value = residual_structure(X[:n], residual)
    carried = p_value < RESIDUAL_LEVEL and alpha < 1.0
    if carried:
        synthesized = slice(n, None)
        out[synthesized] += (1.0 - alpha) * residual[source[synthesized]]
    record = {"neighbour_correlation": correlation, "p_value": p_value, "level": RESIDUAL_LEVEL, "carried": carried}
    return out, record


def residual_structure(X: np.ndarray, residual: np.ndarray) -> tuple[float, float]:
    """Correlation of each row's residual with its nearest other row's, and the one-sided p-value that it is
    above zero (Pearson; the pairs are not independent, so read it as a guide, not an exact level)."""
    if len(residual) < 3:
        return 0.0, 1.0
    a, b = residual, residual[nearest_other(X)]
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0, 1.0
    result = stats.pearsonr(a, b, alternative="greater")
    return float(result.statistic), float(result.pvalue)


def sha256_of_arrays(*arrays: np.ndarray) -> str:
    """sha256 over the arrays' float64 little-endian C-ordered bytes, in order."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    return digest.hexdigest()
