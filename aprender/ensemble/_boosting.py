"""Gradient boosting: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn import ensemble as _sk

from aprender.base import SerializableMixin

__all__ = [
    "GradientBoostingClassifier",
    "GradientBoostingRegressor",
    "HistGradientBoostingClassifier",
    "HistGradientBoostingRegressor",
]


class GradientBoostingClassifier(SerializableMixin, _sk.GradientBoostingClassifier):
    """Gradient-boosted trees for classification (:class:`sklearn.ensemble.GradientBoostingClassifier`).

    The ``(n_estimators, n_trees_per_iteration)`` regression trees are stored packed
    (one tensor per node field plus offsets), the loss by name and the ``init_``
    estimator as a nested model; see docs/schema/trees.md.

    Examples
    --------
    >>> from aprender.ensemble import GradientBoostingClassifier
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> clf = GradientBoostingClassifier(n_estimators=5).fit(X, y)
    >>> clf.predict([[0.0], [3.0]])
    array([0, 1])
    """


class GradientBoostingRegressor(SerializableMixin, _sk.GradientBoostingRegressor):
    """Gradient-boosted trees for regression (:class:`sklearn.ensemble.GradientBoostingRegressor`).

    Stored packed like :class:`GradientBoostingClassifier`.

    Examples
    --------
    >>> from aprender.ensemble import GradientBoostingRegressor
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0.0, 0.0, 4.0, 4.0]
    >>> reg = GradientBoostingRegressor(n_estimators=50).fit(X, y)
    >>> reg.predict([[0.0], [3.0]]).round(1)
    array([0., 4.])
    """


class HistGradientBoostingClassifier(SerializableMixin, _sk.HistGradientBoostingClassifier):
    """Histogram-based gradient boosting classifier (:class:`sklearn.ensemble.HistGradientBoostingClassifier`).

    The tree predictors are stored packed (one tensor per node-record field plus
    offsets), with the bin thresholds, the loss and the baseline prediction named
    explicitly; see docs/schema/trees.md.

    Examples
    --------
    >>> from aprender.ensemble import HistGradientBoostingClassifier
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]] * 10, [0, 0, 1, 1] * 10
    >>> clf = HistGradientBoostingClassifier(max_iter=10, min_samples_leaf=2).fit(X, y)
    >>> clf.predict([[0.0], [3.0]])
    array([0, 1])
    """


class HistGradientBoostingRegressor(SerializableMixin, _sk.HistGradientBoostingRegressor):
    """Histogram-based gradient boosting regressor (:class:`sklearn.ensemble.HistGradientBoostingRegressor`).

    Stored like :class:`HistGradientBoostingClassifier`.

    Examples
    --------
    >>> from aprender.ensemble import HistGradientBoostingRegressor
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]] * 10, [0.0, 0.0, 4.0, 4.0] * 10
    >>> reg = HistGradientBoostingRegressor(max_iter=50, min_samples_leaf=2).fit(X, y)
    >>> reg.predict([[0.0], [3.0]]).round(1)
    array([0., 4.])
    """
