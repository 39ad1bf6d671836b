"""Feature scalers with aprender persistence."""

from __future__ import annotations

from sklearn import preprocessing as _sk

from aprender.base import SerializableMixin

__all__ = ["StandardScaler"]


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
