"""Probe rows for verifying an ONNX export: the caller's sample, or rows made from the fitted state.

Without a sample, rows are synthesized for a model fed one numeric matrix ``X``, from
what the fitted state says about its input, deterministically (a fixed seed):

- training rows the model keeps (KNN's ``_fit_X``, an SVM's ``support_vectors_``),
- per-feature centre and spread (a scaler's ``mean_`` / ``scale_``, ``data_min_`` /
  ``data_max_``, a Gaussian model's ``theta_`` / ``var_``), else standard normal rows,
- for trees (scikit-learn's, XGBoost's, LightGBM's, CatBoost's) and KBinsDiscretizer, every
  split threshold or inner bin edge and its float32 neighbours on either side, the values
  where a float32 graph and the estimator are most likely to part,
- for a model that answers on missing values, rows with each column missing and rows ~30% missing.

With a sample, ``_sample_probe`` adds rows made from the sample and these same pieces.

When the graph input is float32 the estimator is run on the same float32-rounded rows
the graph sees, so a difference measured is the graph's, not the rounding of the input.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["decision_points", "fitted_parts", "kept_rows", "missing_rows", "probe_rows", "reads_input",
           "rounded_like_graph", "threshold_rows"]

#: Rows of the synthesized probe (plus threshold rows, at most _MAX_THRESHOLD_ROWS).
_RANDOM_ROWS = 64
_MAX_THRESHOLD_ROWS = 192
_SEED = 20260129


def fitted_parts(model: Any) -> Iterator[Any]:
    """``model`` and every fitted estimator inside it (steps, fitted transformers, best estimator)."""
    yield model
    children = [step for _, step in getattr(model, "steps", [])]
    children += [t for _, t, _ in getattr(model, "transformers_", []) if hasattr(t, "fit")]
    children += [e for e in (getattr(model, "best_estimator_", None), getattr(model, "estimator_", None))
                 if hasattr(e, "fit")]
    for child in children:
        yield from fitted_parts(child)


def reads_input(model: Any) -> Any:
    """The estimator that reads the model's input (a Pipeline's first step, a search's best estimator)."""
    while True:
        if hasattr(model, "steps"):
            model = model.steps[0][1]
        elif hasattr(model, "best_estimator_"):
            model = model.best_estimator_
        else:
            return model


def _centre_spread(first: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = (("mean_", "scale_"), ("theta_", "var_"), ("center_", "scale_"))
    for centre, spread in pairs:
        c, s = getattr(first, centre, None), getattr(first, spread, None)
        if c is not None and s is not None:
            c, s = np.asarray(c, dtype=np.float64), np.asarray(s, dtype=np.float64)
            if centre == "theta_":  # per class: the classes' centres and their spread
                c, s = c.mean(axis=0), np.sqrt(s.max(axis=0)) + c.std(axis=0)
            if c.shape == (n,) and s.shape == (n,):
                return c, np.where(np.isfinite(s) & (s > 0), s, 1.0)
    lo, hi = getattr(first, "data_min_", None), getattr(first, "data_max_", None)
    if lo is not None and hi is not None and np.shape(lo) == (n,):
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        return (lo + hi) / 2, np.maximum((hi - lo) / 4, 1e-3)
    splits = _thresholds(first)
    if splits:  # the range the trees split: where their decisions are
        by_feature = [[t for f, t in splits if f == j] for j in range(n)]
        lo = np.array([min(ts) if ts else 0.0 for ts in by_feature])
        hi = np.array([max(ts) if ts else 0.0 for ts in by_feature])
        return (lo + hi) / 2, np.maximum((hi - lo) / 2, 1.0 * (hi == lo) + 1e-3)
    return np.zeros(n), np.ones(n)


def kept_rows(first: Any, n: int) -> np.ndarray:
    """Training rows the model keeps (KNN's ``_fit_X``, an SVM's ``support_vectors_``), at most ``_RANDOM_ROWS``."""
    for name in ("_fit_X", "support_vectors_"):
        rows = getattr(first, name, None)
        if rows is not None and not hasattr(rows, "toarray") and np.ndim(rows) == 2 and np.shape(rows)[1] == n:
            rows = np.asarray(rows, dtype=np.float64)
            return rows[:: max(1, len(rows) // _RANDOM_ROWS)][:_RANDOM_ROWS]
    return np.empty((0, n))


def _thresholds(first: Any) -> list[tuple[int, float]]:
    """(feature, threshold) of every split of the trees that read the input directly."""
    found: list[tuple[int, float]] = []
    members = getattr(first, "estimators_", [])
    trees = [first, *(np.ravel(np.asarray(members, dtype=object)) if isinstance(members, (list, np.ndarray)) else [])]
    for est in trees:
        tree = getattr(est, "tree_", None)
        if tree is not None:
            inner = tree.feature >= 0
            found += zip(tree.feature[inner].tolist(), tree.threshold[inner].tolist(), strict=True)
    for predictor in (p for iteration in getattr(first, "_predictors", []) for p in iteration):
        nodes = predictor.nodes[~predictor.nodes["is_leaf"].astype(bool)]
        found += zip(nodes["feature_idx"].tolist(), nodes["num_threshold"].tolist(), strict=True)
    from aprender.format.onnx._boosters import booster_splits

    return found + booster_splits(first)


def decision_points(first: Any) -> list[tuple[int, float]]:
    """(feature, value) where the model reading the input decides: tree splits and KBinsDiscretizer bin edges.

    A float32 graph compares the input rounded to float32 with rounded split points: a value
    between a point and its rounding goes the other way (a bin edge rounded across moved a
    gallery value to the next bin).
    """
    edges = getattr(first, "bin_edges_", None)
    inner = [(j, float(e)) for j, column in enumerate(edges) for e in np.ravel(column)[1:-1]] \
        if isinstance(edges, np.ndarray) and edges.dtype == object else []
    return _thresholds(first) + inner


def threshold_rows(base: np.ndarray, splits: list[tuple[int, float]], rng: np.random.Generator) -> np.ndarray:
    """Rows of ``base`` with one value set to a split point, or to its float32 neighbour on either side."""
    if not splits:
        return np.empty((0, base.shape[1]))
    picked = [splits[i] for i in rng.permutation(len(splits))[: _MAX_THRESHOLD_ROWS // 3]]
    rows = []
    for i, (feature, threshold) in enumerate(picked):
        t32 = np.float32(threshold)
        for value in (t32, np.nextafter(t32, np.float32(-np.inf)), np.nextafter(t32, np.float32(np.inf))):
            row = base[i % len(base)].copy()
            row[feature] = value
            rows.append(row)
    return np.asarray(rows)


def probe_rows(model: Any) -> np.ndarray | None:
    """Rows synthesized from the fitted state for a model fed ``n_features_in_`` numbers, or None."""
    n = getattr(model, "n_features_in_", None)
    if not isinstance(n, (int, np.integer)) or n < 1 or getattr(model, "feature_names_in_", None) is not None:
        return None
    first = reads_input(model)
    rng = np.random.default_rng(_SEED)
    centre, spread = _centre_spread(first, int(n))
    base = centre + spread * rng.standard_normal((_RANDOM_ROWS, int(n)))
    rows = np.vstack([kept_rows(first, int(n)), base, threshold_rows(base, decision_points(first), rng)])
    rows = rows[np.isfinite(rows).all(axis=1)]
    return np.vstack([rows, missing_rows(model, base, rng)])


def missing_rows(model: Any, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rows of ``base`` with missing values, for a model that answers on them.

    A model fed missing values computes them on another path (an imputer's statistics or donors,
    a tree's missing-value branch); rows without any never check it. A KNNImputer graph passed
    verification on 122 complete rows and imputed 130 of 2,000 new rows with a missing value
    otherwise; a lone ExtraTree's graph sent them the wrong way. Here: each column missing in
    turn, then ~30% of the values; none when the estimator refuses them (its own error).
    """
    single = base[np.arange(base.shape[1]) % len(base)].copy()
    single[np.arange(base.shape[1]), np.arange(base.shape[1])] = np.nan
    scattered = base[: _RANDOM_ROWS // 2].copy()
    scattered[rng.random(scattered.shape) < 0.3] = np.nan
    rows = np.vstack([single, scattered])
    method = getattr(model, "predict", None) or getattr(model, "transform", None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            method(rows)  # type: ignore[misc]  # a model with neither: the TypeError is caught below
    except Exception:  # scikit-learn's "Input X contains NaN": not rows the model can be asked about
        return np.empty((0, base.shape[1]))
    return rows


def rounded_like_graph(X: Any, float32: bool) -> Any:
    """``X`` as the graph sees it: floats rounded to float32 when the graph input is float32."""
    if not float32:
        return X
    if hasattr(X, "columns") and hasattr(X, "dtypes"):
        out = X.copy()
        for column, dtype in zip(X.columns, X.dtypes, strict=True):
            if getattr(dtype, "kind", "O") == "f":
                out[column] = X[column].astype(np.float32).astype(dtype)
        return out
    if hasattr(X, "toarray") and getattr(X, "dtype", None) is not None and X.dtype.kind == "f":
        return X.astype(np.float32).astype(X.dtype)
    arr = np.asarray(X) if not isinstance(X, list) else None
    if arr is not None and arr.dtype.kind == "f":
        return arr.astype(np.float32).astype(arr.dtype)
    return X
