"""ColumnTransformer: scikit-learn's per-column transformers with aprender persistence."""

from __future__ import annotations

from typing import Any

from sklearn.compose import _column_transformer as _sk

from aprender.base import SerializableMixin

__all__ = ["ColumnTransformer", "make_column_transformer"]


class ColumnTransformer(SerializableMixin, _sk.ColumnTransformer):
    """Apply transformers to column subsets and join the results (:class:`sklearn.compose.ColumnTransformer`).

    The fitted transformers are stored under ``transformers_.{i}.{name}.``, column
    selections (names, indices, masks, slices) and ``output_indices_`` in metadata.
    Callable column selectors cannot be saved; their resolved columns are in
    ``_columns`` but the callable itself is code.

    Examples
    --------
    >>> import pandas as pd
    >>> from aprender.compose import ColumnTransformer
    >>> from aprender.preprocessing import OneHotEncoder, StandardScaler
    >>> df = pd.DataFrame({"city": ["a", "b", "a"], "size": [1.0, 2.0, 3.0]})
    >>> ct = ColumnTransformer([("city", OneHotEncoder(), ["city"]), ("size", StandardScaler(), ["size"])])
    >>> ct.fit_transform(df).shape
    (3, 3)
    """


def make_column_transformer(
    *transformers: tuple[Any, Any],
    remainder: Any = "drop",
    sparse_threshold: float = 0.3,
    n_jobs: int | None = None,
    verbose: bool = False,
    verbose_feature_names_out: bool = True,
) -> ColumnTransformer:
    """Build an aprender :class:`ColumnTransformer` from ``(transformer, columns)`` pairs.

    Like :func:`sklearn.compose.make_column_transformer`: each transformer is named
    after its class.

    Parameters
    ----------
    *transformers : tuples of (transformer, columns)
        Transformers (or ``"drop"`` / ``"passthrough"``) and the columns they take.
    remainder : {"drop", "passthrough"} or estimator, default="drop"
        What happens to the columns no transformer selects.
    sparse_threshold : float, default=0.3
        Density below which a stacked sparse result stays sparse.
    n_jobs : int, default=None
        Number of jobs to run in parallel.
    verbose : bool, default=False
        Print the time elapsed while fitting each transformer.
    verbose_feature_names_out : bool, default=True
        Prefix output feature names with the transformer name.

    Returns
    -------
    ColumnTransformer

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.compose import make_column_transformer
    >>> from aprender.preprocessing import StandardScaler
    >>> ct = make_column_transformer((StandardScaler(), [0]), remainder="passthrough")
    >>> ct.fit_transform(np.array([[0.0, 5.0], [2.0, 6.0]]))
    array([[-1.,  5.],
           [ 1.,  6.]])
    """
    return ColumnTransformer(
        _sk._get_transformer_list(transformers),
        remainder=remainder,
        sparse_threshold=sparse_threshold,
        n_jobs=n_jobs,
        verbose=verbose,
        verbose_feature_names_out=verbose_feature_names_out,
    )
