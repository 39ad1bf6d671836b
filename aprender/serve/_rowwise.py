"""Batching DataFrame pipelines exactly: the transforms once for a batch, the final estimator once
per request.

A DataFrame pipeline (a ``ColumnTransformer`` of scalers and encoders, then a model) spends nearly
all of a one-row call in scikit-learn's per-call work: column selection, validation, pandas
(~2 ms of ``ColumnTransformer.transform`` for one row, ~2.3 ms for 64). Merging concurrent
requests into one call pays that once per batch. But the final estimator's arithmetic is not
row-independent to the bit: a linear model's ``X @ coef_.T`` is a BLAS dot product for one row
and a matrix-vector product for several, which sum in different orders, so
``predict_proba(batch)[i]`` may differ from ``predict_proba(row i)`` in the last bit.

So a batch runs the pipeline's transforms once on all the rows, and the final estimator once per
request on that request's own rows: exactly the arithmetic of the request served alone, provided
the transforms are row-exact (row i of the output depends only on row i of the input, through
elementwise operations that give the same bits whatever the other rows). That holds only for the
transformers listed in ``_ROW_EXACT`` (scalers, encoders, imputers: per-element arithmetic with
fitted constants, or table look-ups), nested in pipelines and ``ColumnTransformer`` (whose
dense or sparse output is fixed at fit time, ``sparse_output_``). Anything else (PCA: a matrix
product; a ``FunctionTransformer``: unknown code) keeps batching off. At warm-up the split is also
checked against the pipeline's own method on probe requests, bit for bit (:func:`row_exact_split`).

A final estimator whose rows are predicted independently of each other, through arithmetic that
does not depend on the batch (the XGBoost and LightGBM estimators of ``_ROW_EXACT_FINALS``: each row
walks the trees and sums its leaves in tree order), runs once for the whole batch instead: its cost
per call (~0.3 ms of XGBoost's ``inplace_predict`` for one row, about as much as for 64) is then paid
once per batch too. The probe requests check that as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aprender.serve._fast import fast_method
from aprender.serve._inputs import Frame

__all__ = ["Split", "row_exact_split"]

#: scikit-learn transformers whose ``transform`` computes each output row from its input row alone,
#: per element with fitted constants (or by table look-up), so a row's bits do not depend on the batch.
_ROW_EXACT = frozenset({
    ("sklearn.preprocessing._data", "StandardScaler"), ("sklearn.preprocessing._data", "MinMaxScaler"),
    ("sklearn.preprocessing._data", "MaxAbsScaler"), ("sklearn.preprocessing._data", "RobustScaler"),
    ("sklearn.preprocessing._data", "Binarizer"),
    ("sklearn.preprocessing._encoders", "OneHotEncoder"), ("sklearn.preprocessing._encoders", "OrdinalEncoder"),
    ("sklearn.preprocessing._target_encoder", "TargetEncoder"),
    ("sklearn.preprocessing._discretization", "KBinsDiscretizer"),
    ("sklearn.impute._base", "SimpleImputer"), ("sklearn.impute._base", "MissingIndicator"),
})
_PIPELINE = ("sklearn.pipeline", "Pipeline")
#: Rows transformed per call of a large request.
_SLICE = 1 << 14
_COLUMN_TRANSFORMER = ("sklearn.compose._column_transformer", "ColumnTransformer")


def _sklearn_class(estimator: Any) -> tuple[str, str] | None:
    """The scikit-learn class an estimator is (aprender's namesakes are thin subclasses of it)."""
    for cls in type(estimator).__mro__:
        if cls.__module__.startswith("sklearn."):
            return cls.__module__, cls.__qualname__
    return None


def _own_method(estimator: Any, name: str) -> bool:
    """Whether ``estimator.<name>`` is scikit-learn's own (not overridden by a subclass)."""
    for cls in type(estimator).__mro__:
        if name in vars(cls):
            return cls.__module__.startswith("sklearn.")
    return False


def _row_exact(transformer: Any) -> bool:
    if isinstance(transformer, str):
        return transformer in ("passthrough", "drop")
    kind = _sklearn_class(transformer)
    if not _own_method(transformer, "transform"):
        return False
    if kind == _PIPELINE:
        return all(_row_exact(step) for _, step in transformer.steps)
    if kind == _COLUMN_TRANSFORMER:
        return all(_row_exact(part) for _, part, _ in transformer.transformers_)
    return kind in _ROW_EXACT


#: Final estimators (a class of their MRO, by module and name) whose answer for a row does not depend
#: on the other rows of the call, to the bit: called once per batch.
_ROW_EXACT_FINALS = frozenset({("xgboost.sklearn", "XGBModel"), ("lightgbm.sklearn", "LGBMModel")})


def _row_exact_final(final: Any) -> bool:
    return any((cls.__module__, cls.__qualname__) in _ROW_EXACT_FINALS for cls in type(final).__mro__)


@dataclass(frozen=True)
class Split:
    """A pipeline's transforms (``transform``, for the whole batch) and its final estimator's methods
    (``final[name]``, called once per request's block of transformed rows, or once for the whole
    batch if ``merged``)."""

    transform: Callable[[Any], Any]
    final: dict[str, Callable[[Any], Any]]
    merged: bool = False

    def run(self, X: Frame, names: tuple[str, ...]) -> dict[str, np.ndarray]:
        """``names`` of the pipeline on ``X``: each request of the batch gets its own final call, unless
        the final estimator is row-exact."""
        Xt = self._transformed(X.frame())
        if self.merged:
            return {name: np.asarray(self.final[name](Xt)) for name in names}
        blocks, start = [], 0
        for n in X.bounds:
            blocks.append(_rows(Xt, start, start + n))
            start += n
        return {name: _stack([np.asarray(self.final[name](block)) for block in blocks]) for name in names}


    def _transformed(self, frame: Any) -> Any:
        """The transforms of ``frame``; a large frame in slices of ``_SLICE`` rows (the same rows, as
        the transforms are row-exact), so that the thread running it gives the event loop the GIL
        back between them: the encoders' work on string columns holds the GIL for whole numpy calls
        (~0.5 s per call for a million rows)."""
        if len(frame) <= _SLICE:
            return self.transform(frame)
        first = self.transform(frame.iloc[:_SLICE])
        if not isinstance(first, np.ndarray):  # sparse or pandas output: at once
            return self.transform(frame)
        return np.concatenate([first, *(self.transform(frame.iloc[at:at + _SLICE])
                                        for at in range(_SLICE, len(frame), _SLICE))])


def _rows(Xt: Any, start: int, stop: int) -> Any:
    if hasattr(Xt, "iloc"):  # set_output(transform="pandas")
        return Xt.iloc[start:stop]
    if isinstance(Xt, np.ndarray):  # C-contiguous, as a request's own transform gives it
        return np.ascontiguousarray(Xt[start:stop])
    return Xt[start:stop]  # sparse rows


def _stack(parts: list[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _final_method(final: Any, name: str, width: int) -> Callable[[Any], Any]:
    """The final estimator's method, through its exact fast path for dense rows (the fast paths are
    checked on dense float64 rows only; sparse or pandas rows take the method)."""
    method = getattr(final, name)
    if hasattr(final, "feature_names_in_"):  # fitted on a DataFrame (set_output pandas): it gets one
        return method
    fast = fast_method(final, name, width)
    if fast is None:
        return method
    return lambda Xt: fast(Xt) if isinstance(Xt, np.ndarray) else method(Xt)


def row_exact_split(estimator: Any, names: tuple[str, ...], probe: Frame) -> Split | None:
    """The :class:`Split` of a pipeline whose transforms are row-exact, or None.

    ``probe`` is a few requests' rows merged (its ``bounds``): the split must give, for each of
    them, the same bits as the pipeline's own method called on that request alone, for every output
    in ``names``, or there is no split.
    """
    if _sklearn_class(estimator) != _PIPELINE or len(estimator.steps) < 2:
        return None
    if not all(_own_method(estimator, name) for name in names):
        return None
    if not all(_row_exact(step) for _, step in estimator.steps[:-1]):
        return None
    head, final = estimator[:-1], estimator.steps[-1][1]
    if not all(hasattr(final, name) for name in names):
        return None
    try:
        width = head.transform(probe.frame().iloc[:1]).shape[1]
        methods = {name: _final_method(final, name, width) for name in names}
        split = Split(head.transform, methods, _row_exact_final(final))
        got = split.run(probe, names)
        frame, start = probe.frame(), 0
        for n in probe.bounds:
            for name in names:
                alone = np.asarray(getattr(estimator, name)(frame.iloc[start:start + n].reset_index(drop=True)))
                mine = got[name][start:start + n]
                if alone.dtype != mine.dtype or alone.shape != mine.shape or not np.array_equal(
                        alone, mine, equal_nan=alone.dtype.kind == "f"):
                    return None
            start += n
    except Exception:  # a probe the model refuses: no batching, the pipeline's own method per request
        return None
    return split
