"""Bag-of-words vectorizers: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn.feature_extraction import text as _sk

from aprender.base import SerializableMixin

__all__ = ["CountVectorizer", "TfidfVectorizer"]


class CountVectorizer(SerializableMixin, _sk.CountVectorizer):
    """Token counts of text documents (:class:`sklearn.feature_extraction.text.CountVectorizer`).

    The vocabulary is stored in metadata as the list of terms in column order; there
    are no tensors. Callable ``tokenizer``, ``preprocessor`` or ``analyzer`` arguments
    cannot be saved (code is never stored in a model file).

    Examples
    --------
    >>> from aprender.feature_extraction.text import CountVectorizer
    >>> vec = CountVectorizer().fit(["the cat sat", "the dog sat"])
    >>> vec.get_feature_names_out()
    array(['cat', 'dog', 'sat', 'the'], dtype=object)
    >>> vec.transform(["the cat and the dog"]).toarray()
    array([[1, 1, 0, 2]])
    """


class TfidfVectorizer(SerializableMixin, _sk.TfidfVectorizer):
    """TF-IDF features of text documents (:class:`sklearn.feature_extraction.text.TfidfVectorizer`).

    The vocabulary is stored in metadata as the list of terms in column order and
    the inverse document frequencies as the float64 tensor ``idf`` (absent when
    ``use_idf=False``).

    Examples
    --------
    >>> from aprender.feature_extraction.text import TfidfVectorizer
    >>> vec = TfidfVectorizer().fit(["the cat sat", "the dog sat", "a bird"])
    >>> vec.idf_.round(3)
    array([1.693, 1.693, 1.693, 1.288, 1.288])
    >>> vec.transform(["bird"]).toarray().round(2)
    array([[1., 0., 0., 0., 0.]])
    """
