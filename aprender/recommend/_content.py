"""Content-based recommendation: TF-IDF item vectors ranked by cosine similarity."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, _fit_context
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils import TransformerTags
from sklearn.utils.validation import check_is_fitted

from aprender.base import SerializableMixin
from aprender.text._ngram import check_texts

__all__ = ["ContentRecommender"]

#: The TfidfVectorizer settings a recommender exposes (and validates the same way).
_VECTORIZER_PARAMS = ("lowercase", "stop_words", "ngram_range", "min_df", "max_df", "max_features", "sublinear_tf")


def _item_ids(item_ids: Any, n_items: int, start: int = 0) -> np.ndarray:
    """Item ids as a 1-d int64 or str array of ``n_items`` distinct values."""
    if item_ids is None:
        return np.arange(start, start + n_items, dtype=np.int64)
    ids = np.asarray(item_ids)
    if ids.dtype.kind == "O" and all(isinstance(i, str) for i in ids.ravel()):
        ids = ids.astype(str)
    if ids.dtype.kind in "iu":
        ids = ids.astype(np.int64)
    elif ids.dtype.kind != "U":
        raise ValueError(f"item ids must be all integers or all strings, got dtype {ids.dtype}")
    if ids.shape != (n_items,):
        raise ValueError(f"got {ids.size} item ids of shape {ids.shape} for {n_items} items")
    unique, counts = np.unique(ids, return_counts=True)
    if unique.size != ids.size:
        raise ValueError(f"item ids must be unique; {unique[counts > 1][0].item()!r} appears more than once")
    return ids


class ContentRecommender(SerializableMixin, BaseEstimator):
    """Recommend catalogue items whose text is most similar to an item or a query.

    Each item's text becomes an L2-normalised TF-IDF vector (scikit-learn's
    :class:`~sklearn.feature_extraction.text.TfidfVectorizer`), so the dot product of
    two vectors is their cosine similarity.

    Parameters
    ----------
    lowercase : bool, default=True
        Lowercase text before tokenizing.
    stop_words : {"english"}, list or None, default=None
        Words to ignore.
    ngram_range : tuple (min_n, max_n), default=(1, 1)
        Word n-grams used as terms.
    min_df, max_df : float or int, default=1, 1.0
        Ignore terms in fewer / more items than this (count or proportion).
    max_features : int or None, default=None
        Keep only the most frequent terms.
    sublinear_tf : bool, default=False
        Use ``1 + log(tf)`` instead of raw term frequencies.

    Attributes
    ----------
    vectorizer_ : sklearn.feature_extraction.text.TfidfVectorizer
        The fitted vectorizer (vocabulary and idf).
    item_matrix_ : scipy.sparse.csr_matrix of shape (n_items, n_terms)
        L2-normalised TF-IDF vector of each item.
    item_ids_ : ndarray of int64 or str, shape (n_items,)
        Id of each row of ``item_matrix_``.

    Examples
    --------
    >>> from aprender.recommend import ContentRecommender
    >>> catalogue = ["red apple pie", "green apple juice", "chocolate cake", "apple cake"]
    >>> rec = ContentRecommender().fit(catalogue, item_ids=["pie", "juice", "cake", "apple-cake"])
    >>> [item for item, _ in rec.recommend("pie", k=2)]
    ['apple-cake', 'juice']
    >>> rec.recommend_for_text("chocolate", k=1)[0][0]
    'cake'
    """

    _parameter_constraints: ClassVar[dict] = {
        name: TfidfVectorizer._parameter_constraints[name] for name in _VECTORIZER_PARAMS
    }

    def __init__(
        self,
        *,
        lowercase: bool = True,
        stop_words: str | list[str] | None = None,
        ngram_range: tuple[int, int] = (1, 1),
        min_df: float | int = 1,
        max_df: float | int = 1.0,
        max_features: int | None = None,
        sublinear_tf: bool = False,
    ) -> None:
        self.lowercase = lowercase
        self.stop_words = stop_words
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.max_df = max_df
        self.max_features = max_features
        self.sublinear_tf = sublinear_tf

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.transformer_tags = TransformerTags()  # transform: similarity to each item
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Iterable[str], item_ids: Iterable[Any] | None = None) -> ContentRecommender:
        """Learn the vocabulary and idf from the item texts and index every item.

        Parameters
        ----------
        X : iterable of str
            One text per item (title, description, tags...).
        item_ids : array-like of int or str, optional
            Distinct id of each item; defaults to ``0 .. n_items-1``.

        Returns
        -------
        self : ContentRecommender

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> ContentRecommender().fit(["tea pot", "tea cup"]).item_matrix_.shape
        (2, 3)
        """
        texts = check_texts(X)
        ids = _item_ids(item_ids, len(texts))
        params = {name: getattr(self, name) for name in _VECTORIZER_PARAMS}
        self.vectorizer_ = TfidfVectorizer(norm="l2", dtype=np.float64, **params)
        self.item_matrix_ = sp.csr_matrix(self.vectorizer_.fit_transform(texts))
        self.item_ids_ = ids
        return self

    def add_items(self, X: Iterable[str], item_ids: Iterable[Any] | None = None) -> ContentRecommender:
        """Index more items with the fitted vocabulary and idf (no refit).

        Terms the vocabulary does not know are ignored for the new items.

        Parameters
        ----------
        X : iterable of str
            Texts of the new items.
        item_ids : array-like of int or str, optional
            Their ids, distinct from the existing ones. Defaults to consecutive
            integers after the largest integer id (integer catalogues only).

        Returns
        -------
        self : ContentRecommender

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> rec = ContentRecommender().fit(["tea pot", "coffee cup"])
        >>> rec.add_items(["green tea"]).recommend_for_text("tea", k=3)[0][0]
        2
        """
        check_is_fitted(self)
        texts = check_texts(X)
        existing = self.item_ids_
        if item_ids is None and existing.dtype.kind != "i":
            raise ValueError("this catalogue has string ids: pass item_ids for the new items")
        ids = _item_ids(item_ids, len(texts), start=int(existing.max()) + 1 if item_ids is None else 0)
        if ids.dtype.kind != existing.dtype.kind:
            raise ValueError(f"new item ids are {ids.dtype}, the catalogue's are {existing.dtype}")
        clash = np.intersect1d(ids, existing)
        if clash.size:
            raise ValueError(f"item id {clash[0].item()!r} is already in the catalogue")
        rows = sp.csr_matrix(self.vectorizer_.transform(texts))
        self.item_matrix_ = sp.csr_matrix(sp.vstack([self.item_matrix_, rows], format="csr"))
        self.item_ids_ = np.concatenate([existing, ids])
        return self

    def _row(self, item_id: Any) -> int:
        rows = np.flatnonzero(self.item_ids_ == item_id)
        if rows.size == 0:
            raise KeyError(f"unknown item id {item_id!r}")
        return int(rows[0])

    def _top(self, scores: np.ndarray, k: int) -> list[tuple[Any, float]]:
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        candidates = np.flatnonzero(scores > 0)
        best = candidates[np.argsort(-scores[candidates], kind="stable")][:k]
        return [(self.item_ids_[i].item(), float(scores[i])) for i in best]

    def transform(self, X: Iterable[str]) -> np.ndarray:
        """Cosine similarity of each text to every catalogue item.

        Parameters
        ----------
        X : iterable of str
            Query texts.

        Returns
        -------
        ndarray of shape (n_texts, n_items)

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> rec = ContentRecommender().fit(["tea pot", "coffee cup"])
        >>> rec.transform(["tea"]).round(3)
        array([[0.707, 0.   ]])
        """
        check_is_fitted(self)
        queries = self.vectorizer_.transform(check_texts(X))
        return (queries @ self.item_matrix_.T).toarray()

    def predict(self, X: Iterable[str]) -> np.ndarray:
        """Id of the most similar item for each text (the first item on ties).

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> rec = ContentRecommender().fit(["tea pot", "coffee cup"], item_ids=["tea", "coffee"])
        >>> rec.predict(["a cup of coffee", "tea"]).tolist()
        ['coffee', 'tea']
        """
        check_is_fitted(self)
        similarity = self.transform(X)
        if similarity.shape[1] == 0:
            raise ValueError("the catalogue is empty")
        return self.item_ids_[np.argmax(similarity, axis=1)]

    def recommend(self, item_id: Any, k: int = 10) -> list[tuple[Any, float]]:
        """The ``k`` items most similar to catalogue item ``item_id`` (never itself).

        Items that share no term with it are not returned.

        Parameters
        ----------
        item_id : int or str
            An id in ``item_ids_``.
        k : int, default=10
            Largest number of recommendations.

        Returns
        -------
        list of (item id, float)
            Ids with their cosine similarity, most similar first.

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> rec = ContentRecommender().fit(["tea pot", "tea cup", "bike"])
        >>> [item for item, _ in rec.recommend(0)]
        [1]
        """
        check_is_fitted(self)
        row = self._row(item_id)
        scores = (self.item_matrix_ @ self.item_matrix_[row].T).toarray().ravel()
        scores[row] = 0.0
        return self._top(scores, k)

    def recommend_for_text(self, text: str, k: int = 10) -> list[tuple[Any, float]]:
        """The ``k`` items most similar to a free-text query.

        Examples
        --------
        >>> from aprender.recommend import ContentRecommender
        >>> rec = ContentRecommender().fit(["tea pot", "coffee cup"], item_ids=[10, 20])
        >>> [(item, round(score, 3)) for item, score in rec.recommend_for_text("coffee please")]
        [(20, 0.707)]
        """
        check_is_fitted(self)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self._top(self.transform([text])[0], k)
