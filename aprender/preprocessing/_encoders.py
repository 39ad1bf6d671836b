"""Categorical and label encoders with aprender persistence."""

from __future__ import annotations

from sklearn import preprocessing as _sk

from aprender.base import SerializableMixin

__all__ = ["LabelEncoder", "OneHotEncoder"]


class OneHotEncoder(SerializableMixin, _sk.OneHotEncoder):
    """Encode categorical features as one-hot columns (:class:`sklearn.preprocessing.OneHotEncoder`).

    ``categories_`` is stored per feature: numeric categories as tensors
    ``categories_.{i}``, string (object) categories in metadata.

    Examples
    --------
    >>> from aprender.preprocessing import OneHotEncoder
    >>> enc = OneHotEncoder(sparse_output=False).fit([["a"], ["b"]])
    >>> enc.transform([["b"]])
    array([[0., 1.]])
    """


class LabelEncoder(SerializableMixin, _sk.LabelEncoder):
    """Encode target labels as integers 0..n_classes-1 (:class:`sklearn.preprocessing.LabelEncoder`).

    ``classes_`` is a tensor for numeric labels and a metadata string array otherwise.

    Examples
    --------
    >>> from aprender.preprocessing import LabelEncoder
    >>> enc = LabelEncoder().fit(["b", "a", "b"])
    >>> enc.transform(["b"])
    array([1])
    >>> enc.inverse_transform([0])
    array(['a'], dtype='<U1')
    """
