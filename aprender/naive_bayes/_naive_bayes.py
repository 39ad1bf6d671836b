"""Naive Bayes classifiers: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn import naive_bayes as _sk

from aprender.base import SerializableMixin

__all__ = ["BernoulliNB", "GaussianNB", "MultinomialNB"]


class GaussianNB(SerializableMixin, _sk.GaussianNB):
    """Gaussian naive Bayes (:class:`sklearn.naive_bayes.GaussianNB`).

    Saved tensors: ``theta_`` and ``var_`` (per-class feature means and variances),
    ``class_count_``, ``class_prior_`` and numeric ``classes_``.

    Examples
    --------
    >>> from aprender.naive_bayes import GaussianNB
    >>> clf = GaussianNB().fit([[0.0], [0.2], [5.0], [5.2]], [0, 0, 1, 1])
    >>> clf.predict([[0.1], [5.1]])
    array([0, 1])
    """


class MultinomialNB(SerializableMixin, _sk.MultinomialNB):
    """Multinomial naive Bayes for count features (:class:`sklearn.naive_bayes.MultinomialNB`).

    Saved tensors: ``feature_count_``, ``feature_log_prob_``, ``class_count_``,
    ``class_log_prior_`` and numeric ``classes_``.

    Examples
    --------
    >>> from aprender.naive_bayes import MultinomialNB
    >>> clf = MultinomialNB().fit([[3, 0], [2, 1], [0, 4], [1, 3]], ["a", "a", "b", "b"])
    >>> clf.predict([[4, 0]])
    array(['a'], dtype='<U1')
    """


class BernoulliNB(SerializableMixin, _sk.BernoulliNB):
    """Bernoulli naive Bayes for binary features (:class:`sklearn.naive_bayes.BernoulliNB`).

    Saved tensors: ``feature_count_``, ``feature_log_prob_``, ``class_count_``,
    ``class_log_prior_`` and numeric ``classes_``.

    Examples
    --------
    >>> from aprender.naive_bayes import BernoulliNB
    >>> clf = BernoulliNB().fit([[1, 0], [1, 0], [0, 1], [0, 1]], [0, 0, 1, 1])
    >>> clf.predict([[1, 0]])
    array([0])
    """
