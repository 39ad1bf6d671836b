"""A sample DataFrame made from a fitted ColumnTransformer, for exports without ``X``.

A model fitted on a DataFrame and fed through a ColumnTransformer is exported with one
graph input per column, and each input's type (string, float, integer) is the type of
its column. Without a sample from the caller, the fitted state still says what every
column held:

- a column an encoder reads (``OneHotEncoder``, ``OrdinalEncoder``, after an imputer or
  not) held values of its ``categories_``: strings for object categories, numbers
  otherwise; the sample draws from them,
- a column a text vectorizer reads held documents: the sample joins terms of its
  vocabulary,
- an imputer's ``statistics_`` of strings says the same without an encoder,
- any other column (a scaler's, passed through, dropped) held numbers, drawn around the
  first scaler's centre and spread when there is one.

The rows are deterministic (a fixed seed), so an export without a sample is
reproducible, and they are the probe rows the export is verified on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.format.onnx._probe import reads_input

__all__ = ["probe_frame", "read_columns"]

_ROWS = 64
_SEED = 20261129


def _column_transformer(model: Any) -> Any:
    """The ColumnTransformer that reads the model's input, or None."""
    from sklearn.compose import ColumnTransformer

    first = reads_input(model)
    return first if isinstance(first, ColumnTransformer) else None


def _chain(transformer: Any) -> list[Any]:
    return [step for _, step in transformer.steps] if hasattr(transformer, "steps") else [transformer]


def _strings(values: np.ndarray) -> bool:
    return values.dtype.kind in "OUS" and all(isinstance(v, str) for v in values.tolist())


def _documents(step: Any, rng: np.random.Generator) -> np.ndarray:
    """A text column: documents of known terms."""
    terms = sorted(step.vocabulary_) or ["text"]
    picks = rng.integers(0, len(terms), size=(_ROWS, 3))
    return np.array([" ".join(terms[i] for i in row) for row in picks], dtype=object)


def _categories(step: Any, position: int, rng: np.random.Generator) -> np.ndarray | None:
    """Values drawn from an encoder's known categories of the column (its missing values left out)."""
    categories = getattr(step, "categories_", None)
    if not isinstance(categories, list) or position >= len(categories):
        return None
    known = np.asarray([c for c in categories[position].tolist() if c is not None and c == c], dtype=object)
    if not len(known):
        return None
    values = known[rng.integers(0, len(known), size=_ROWS)]
    return values if _strings(known) else values.astype(np.float64)


def _encoded(step: Any, position: int, scalar_column: bool, rng: np.random.Generator) -> np.ndarray | None:
    if hasattr(step, "vocabulary_") and scalar_column:
        return _documents(step, rng)
    return _categories(step, position, rng)


def _imputed_string(step: Any, position: int) -> np.ndarray | None:
    """An imputer's string statistic of the column, repeated."""
    statistics = getattr(step, "statistics_", None)
    if statistics is not None and np.ndim(statistics) == 1 and position < len(statistics) \
            and isinstance(statistics[position], str):
        return np.full(_ROWS, statistics[position], dtype=object)
    return None


def _scaled(step: Any, position: int, rng: np.random.Generator) -> np.ndarray | None:
    """Numbers drawn around a scaler's centre and spread of the column."""
    centre, spread = getattr(step, "mean_", None), getattr(step, "scale_", None)
    if centre is None or spread is None or position >= np.size(centre):
        return None
    scale = float(np.ravel(spread)[position])
    return float(np.ravel(centre)[position]) + (scale if np.isfinite(scale) and scale > 0 else 1.0) * \
        rng.standard_normal(_ROWS)


def _column(transformer: Any, position: int, scalar_column: bool, rng: np.random.Generator) -> np.ndarray:
    """``_ROWS`` values of the ``position``-th column ``transformer`` reads.

    An encoder or vectorizer anywhere in the chain says the most (an imputer before it
    fills the same kind of values), then an imputer's string statistics, then a scaler.
    """
    steps = _chain(transformer)
    for step in steps:
        values = _encoded(step, position, scalar_column, rng)
        if values is not None:
            return values
    for step in steps:
        values = _imputed_string(step, position)
        if values is None:
            values = _scaled(step, position, rng)
        if values is not None:
            return values
    return rng.standard_normal(_ROWS)


def probe_frame(model: Any) -> Any:
    """A DataFrame of ``_ROWS`` rows shaped like the model's fitted input, or None.

    None when the model is not fed through a ColumnTransformer fitted on a DataFrame.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from aprender.format.onnx._frame_probe import probe_frame
    >>> X = pd.DataFrame({"size": [1.0, 2.0, 3.0, 4.0], "colour": ["red", "blue", "red", "green"]})
    >>> columns = make_column_transformer((StandardScaler(), ["size"]), (OneHotEncoder(), ["colour"]))
    >>> model = make_pipeline(columns, LogisticRegression()).fit(X, [0, 1, 0, 1])
    >>> sample = probe_frame(model)
    >>> list(sample.columns), sorted(set(sample["colour"])) == ["blue", "green", "red"]
    (['size', 'colour'], True)
    """
    import pandas as pd

    ct = _column_transformer(model)
    names = getattr(ct, "feature_names_in_", None)
    indices = getattr(ct, "_transformer_to_input_indices", None)
    if names is None or not isinstance(indices, dict):
        return None
    rng = np.random.default_rng(_SEED)
    columns: dict[int, np.ndarray] = {}
    by_name = {name: (transformer, spec) for name, transformer, spec in ct.transformers_}
    for name, positions in indices.items():
        transformer, spec = by_name.get(name, ("drop", None))
        if transformer == "drop":
            continue
        for position, index in enumerate(positions):
            if index in columns:  # a column two transformers read: the first one's values
                continue
            reader = transformer if hasattr(transformer, "fit") else None  # else passed through: numbers
            columns[index] = (_column(reader, position, isinstance(spec, str), rng) if reader is not None
                              else rng.standard_normal(_ROWS))
    # a dropped column's type is unknown and unused: no graph input is made for it (read_columns)
    frame = pd.DataFrame({str(names[i]): columns.get(i, np.full(_ROWS, "", dtype=object)) for i in range(len(names))})
    frame.attrs["aprender.read_columns"] = [str(names[i]) for i in sorted(columns)]
    return frame


def read_columns(sample: Any) -> list[str] | None:
    """The columns of a :func:`probe_frame` sample that the model reads (None for a caller's sample)."""
    return getattr(sample, "attrs", {}).get("aprender.read_columns")
