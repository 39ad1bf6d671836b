"""Linear models: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn import linear_model as _sk

from aprender.base import SerializableMixin

__all__ = ["ElasticNet", "Lasso", "LinearRegression", "LogisticRegression", "Ridge"]


class LinearRegression(SerializableMixin, _sk.LinearRegression):
    """Ordinary least squares (:class:`sklearn.linear_model.LinearRegression`).

    Saved tensors: ``coefficients`` (``coef_``) and ``intercept`` (``intercept_``,
    shape ``[1]`` when scalar).

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]).predict([[2.0]])
    array([5.])
    """


class LogisticRegression(SerializableMixin, _sk.LogisticRegression):
    """Logistic regression classifier (:class:`sklearn.linear_model.LogisticRegression`).

    Saved tensors: ``coefficients`` (``coef_``), ``intercept`` (``intercept_``) and
    ``classes_`` (numeric labels; string labels go into metadata).

    Examples
    --------
    >>> from aprender.linear_model import LogisticRegression
    >>> clf = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> clf.predict([[0.2], [2.8]])
    array([0, 1])
    """


class Ridge(SerializableMixin, _sk.Ridge):
    """Linear least squares with L2 regularisation (:class:`sklearn.linear_model.Ridge`).

    Examples
    --------
    >>> from aprender.linear_model import Ridge
    >>> Ridge(alpha=0.0).fit([[0.0], [1.0]], [1.0, 3.0]).coef_
    array([2.])
    """


class Lasso(SerializableMixin, _sk.Lasso):
    """Linear model with L1 regularisation (:class:`sklearn.linear_model.Lasso`).

    Examples
    --------
    >>> from aprender.linear_model import Lasso
    >>> Lasso(alpha=0.1).fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0]).coef_.shape
    (1,)
    """


class ElasticNet(SerializableMixin, _sk.ElasticNet):
    """Linear model with combined L1 and L2 priors (:class:`sklearn.linear_model.ElasticNet`).

    Examples
    --------
    >>> from aprender.linear_model import ElasticNet
    >>> ElasticNet(alpha=0.1).fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0]).coef_.shape
    (1,)
    """
