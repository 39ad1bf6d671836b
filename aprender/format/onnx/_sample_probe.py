"""The rows an ONNX export is verified on: the caller's sample and rows made around it (private).

A few sample rows alone let wrong graphs through (issue 38: five rows of scikit-learn's
gallery passed where the full data was 1.4e-3 off), so a sample is joined by rows made
from it and from the fitted state, deterministically (a fixed seed):

- per column the sample's minimum, maximum, midpoint and values just beyond both ends,
- :data:`_BATCH` rows drawn within the sample's per-column ranges (whole numbers for columns
  of whole numbers, missing values where the sample has them); columns an encoder reads draw from
  the sample's values and the fitted categories,
- the training rows the model keeps and its decision points (tree thresholds, bin edges)
  with their float32 neighbours (:mod:`._probe`, as without a sample),
- for a regressor, rows where its prediction crosses 0 (where a float32 graph's absolute
  error is largest relative to the output).

A DataFrame sample gets the same per column: numbers within the column's range, strings
and categories from the sample and from what the fitted encoders learned
(:mod:`._frame_probe`). Rows the estimator itself refuses (an unknown category under
``handle_unknown="error"``) are left out block by block: they test nothing. Without a
sample the rows are the synthesized ones alone. Texts, sparse matrices and other inputs
are verified on the sample as given.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from aprender.format.onnx._frame_probe import probe_frame
from aprender.format.onnx._probe import decision_points, kept_rows, probe_rows, reads_input, threshold_rows

__all__ = ["probe"]

#: Rows drawn within the sample's ranges (the extremes and decision points come on top).
_BATCH = 128
_SEED = 20261130
#: How far beyond the sample's range the "just beyond" values lie, as a fraction of the range.
_BEYOND = 0.1
_MISSING = 0.1
#: At most this many rows where a regressor's prediction crosses 0.
_CROSSINGS = 32


def probe(model: Any, X: Any) -> tuple[Any, str]:
    """The probe rows for ``model`` and where they come from.

    Parameters
    ----------
    model : estimator
        The fitted estimator being exported.
    X : array-like or DataFrame or None
        The caller's sample.

    Returns
    -------
    rows : array or DataFrame or None
        The sample followed by the rows made around it; without a sample, the rows made
        from the fitted state (None when none can be made).
    source : str
        ``"synthesized"``, ``"sample"`` (the sample alone) or ``"sample+synthesized"``.
    """
    if X is None:
        rows = probe_rows(model)
        return (probe_frame(model) if rows is None else rows), "synthesized"
    grown = _around_frame(model, X) if hasattr(X, "columns") and hasattr(X, "dtypes") else _around_matrix(model, X)
    return (X, "sample") if grown is None else (grown, "sample+synthesized")


def _accepted(model: Any, rows: Any) -> bool:
    """The estimator answers on ``rows`` (else they are not rows it can be asked about)."""
    method = getattr(model, "predict", None) or getattr(model, "transform", None)
    if method is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method(rows)
    except Exception:  # an unknown category, a value out of a fitted domain: not rows to verify on
        return False
    return True


def _keep(model: Any, blocks: list[Any], join: Any) -> Any:
    """The blocks the estimator answers on, joined (all at once first: one call when all are fine)."""
    blocks = [b for b in blocks if len(b)]
    if not blocks:
        return None
    whole = join(blocks)
    if _accepted(model, whole):
        return whole
    kept = [b for b in blocks if _accepted(model, b)]
    return join(kept) if kept else None


def _range(values: np.ndarray) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if finite.size else None


def _extremes(lo: float, hi: float, integer: bool) -> np.ndarray:
    """min, max, midpoint and just beyond either end (whole steps for integer columns)."""
    step = _BEYOND * (hi - lo) or _BEYOND * max(abs(lo), 1.0)
    if integer:
        step = max(1.0, np.ceil(step))
    return np.array([lo, hi, (lo + hi) / 2, lo - step, hi + step])


def _numbers(values: np.ndarray, integer: bool, pool: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """A column of the made rows: 5 extremes, then :data:`_BATCH` values within the sample's range."""
    bounds = _range(values)
    if pool is not None and pool.size:
        drawn = rng.choice(pool, size=_BATCH + 5)
    elif bounds is None:
        drawn = np.full(_BATCH + 5, np.nan)
    else:
        drawn = np.concatenate([_extremes(*bounds, integer), rng.uniform(bounds[0], bounds[1], _BATCH)])
    if integer:
        drawn = np.rint(drawn)
    if np.isnan(values).any():
        drawn[5:][rng.random(_BATCH) < _MISSING] = np.nan
    return drawn


def _whole(values: np.ndarray) -> bool:
    """A float column of whole numbers (counts, prices): drawn as whole numbers, which tie as the data's do.

    Distances between whole numbers tie exactly; a float32 graph breaks such ties otherwise
    than scikit-learn (a KNN on unscaled wine data took another 20th neighbour).
    """
    finite = values[np.isfinite(values)]
    return finite.size > 1 and bool(np.all(finite == np.rint(finite))) and np.ptp(finite) > 1


def _zero_crossings(model: Any, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows where a regressor's prediction crosses 0, on segments between rows it predicts apart.

    A float32 graph's error is a few float32 units of the terms it sums, whatever the output;
    where the output is near 0 that error is all there is, and the relative tolerance cannot
    hide it (a weighted ElasticNet on large-scale inputs: 3.7e-4 off at predictions near 0).
    Exact for linear models; one secant step toward the crossing for others.
    """
    from sklearn.base import is_regressor

    if not is_regressor(model) or len(rows) < 2:
        return np.empty((0, rows.shape[1]))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            predicted = np.asarray(model.predict(rows), dtype=np.float64)
    except Exception:  # not rows the model answers on: _keep leaves them out
        return np.empty((0, rows.shape[1]))
    if predicted.shape != (len(rows),):
        return np.empty((0, rows.shape[1]))
    order = rng.permutation(len(rows))
    a, b = order[:-1], order[1:]
    apart = np.sign(predicted[a]) * np.sign(predicted[b]) < 0
    a, b = a[apart][:_CROSSINGS], b[apart][:_CROSSINGS]
    t = (predicted[a] / (predicted[a] - predicted[b]))[:, None]
    return rows[a] + t * (rows[b] - rows[a])


def _pools(first: Any, sample: np.ndarray) -> list[np.ndarray | None]:
    """Per column, the values an encoder reading it knows (its categories and the sample's), else None."""
    categories = getattr(first, "categories_", None)
    if not isinstance(categories, list) or len(categories) != sample.shape[1]:
        return [None] * sample.shape[1]
    pools: list[np.ndarray | None] = []
    for j, known in enumerate(categories):
        known = np.asarray(known)
        if known.dtype.kind not in "fiu":
            pools.append(None)
            continue
        values = np.concatenate([known.astype(np.float64), sample[:, j]])
        pools.append(np.unique(values[np.isfinite(values)]))
    return pools


def _around_matrix(model: Any, X: Any) -> np.ndarray | None:
    """The numeric sample followed by rows made around it, or None (not a numeric matrix)."""
    if hasattr(X, "toarray"):
        return None
    sample = np.asarray(X)
    if sample.ndim != 2 or sample.dtype.kind not in "fiu" or not len(sample) or not sample.shape[1]:
        return None
    values = sample.astype(np.float64)
    first = reads_input(model)
    rng = np.random.default_rng(_SEED)
    integer = sample.dtype.kind in "iu"
    columns = [_numbers(values[:, j], integer or _whole(values[:, j]), pool, rng)
               for j, pool in enumerate(_pools(first, values))]
    made = np.column_stack(columns)
    blocks = [made, kept_rows(first, sample.shape[1]), threshold_rows(made[5:], decision_points(first), rng),
              _zero_crossings(model, made[5:].astype(sample.dtype), rng)]
    if integer:  # decision points between integers say nothing of an integer input
        blocks = [blocks[0], blocks[1]]
    blocks = [b[~np.isinf(b).any(axis=1)] for b in blocks if len(b)]
    made_rows = _keep(model, [b.astype(sample.dtype) for b in blocks], np.vstack)
    return None if made_rows is None else np.vstack([sample, made_rows])


def _frame_column(column: Any, fitted: Any, rng: np.random.Generator) -> Any:
    """:data:`_BATCH` + 5 values of a DataFrame column, of its dtype, or None (a kind not drawn)."""
    import pandas as pd

    dtype = column.dtype
    kind = getattr(dtype, "kind", "O")
    if isinstance(dtype, pd.CategoricalDtype):
        pool = np.asarray(dtype.categories, dtype=object)
    elif kind in "fiu" and not pd.api.types.is_bool_dtype(dtype):
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        drawn = _numbers(values, kind in "iu", None, rng)
        if kind in "iu" and np.isnan(drawn).any():
            return None  # a plain integer column cannot hold the missing values the sample has
        return pd.Series(drawn).astype(dtype)
    elif kind in "bO" or pd.api.types.is_string_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        seen = [v for v in column.tolist() if not pd.isna(v)]
        learned = [v for v in (fitted.tolist() if fitted is not None else []) if isinstance(v, str)]
        pool = np.asarray(list(dict.fromkeys(seen + (learned if all(isinstance(v, str) for v in seen) else []))),
                          dtype=object)
    else:  # dates, periods, intervals: the sample's own values only
        return None
    if not len(pool):
        return None
    drawn = pd.Series(pool[rng.integers(0, len(pool), size=_BATCH + 5)], dtype=object)
    if column.isna().any():
        drawn[rng.random(_BATCH + 5) < _MISSING] = column[column.isna()].iloc[0]
    return drawn.astype(dtype)


def _around_frame(model: Any, X: Any) -> Any:
    """The DataFrame sample followed by rows made around it, column by column, or None."""
    import pandas as pd

    if not len(X) or not X.columns.is_unique:
        return None
    fitted = probe_frame(model)
    rng = np.random.default_rng(_SEED)
    columns = {}
    for name in X.columns:
        known = fitted[str(name)] if fitted is not None and str(name) in fitted.columns else None
        column = _frame_column(X[name], known, rng)
        if column is None:
            return None
        columns[name] = column
    made = pd.DataFrame(columns, columns=X.columns)
    made_rows = _keep(model, [made.iloc[:5], made.iloc[5:]], lambda parts: pd.concat(parts, ignore_index=True))
    return None if made_rows is None else pd.concat([X, made_rows], ignore_index=True)
