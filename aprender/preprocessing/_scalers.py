"""Feature scalers with aprender persistence."""

from __future__ import annotations

from sklearn import preprocessing as _sk

from aprender.base import SerializableMixin

__all__ = ["MinMaxScaler", "StandardScaler"]


class StandardScaler(SerializableMixin, _sk.StandardScaler):
    """Standardise features to zero mean and unit variance (:class:`sklearn.preprocessing.StandardScaler`).

    Saved tensors: ``mean_``, ``var_``, ``scale_`` (and ``n_samples_seen_`` when it
    is per-feature).

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> StandardScaler().fit([[0.0], [2.0]]).transform([[4.0]])
    array([[3.]])
    """


class MinMaxScaler(SerializableMixin, _sk.MinMaxScaler):
    """Scale each feature to a given range (:class:`sklearn.preprocessing.MinMaxScaler`).

    Saved tensors: ``min_``, ``scale_``, ``data_min_``, ``data_max_``, ``data_range_``.

    Examples
    --------
    >>> from aprender.preprocessing import MinMaxScaler
    >>> MinMaxScaler().fit([[0.0], [4.0]]).transform([[1.0]])
    array([[0.25]])
    """
