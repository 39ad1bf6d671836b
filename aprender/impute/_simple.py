"""Univariate imputation with aprender persistence."""

from __future__ import annotations

from sklearn import impute as _sk

from aprender.base import SerializableMixin

__all__ = ["SimpleImputer"]


class SimpleImputer(SerializableMixin, _sk.SimpleImputer):
    """Replace missing values by a per-column statistic (:class:`sklearn.impute.SimpleImputer`).

    Saved tensors: ``statistics_`` (numeric statistics; string ones go into
    metadata). With ``add_indicator=True`` the fitted ``MissingIndicator`` is nested
    under ``indicator_.`` (tensor ``indicator_.features_``).

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.impute import SimpleImputer
    >>> SimpleImputer().fit([[1.0], [3.0]]).transform([[np.nan]])
    array([[2.]])
    """
