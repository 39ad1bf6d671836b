"""Random forests: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn import ensemble as _sk

from aprender.base import SerializableMixin

__all__ = ["RandomForestClassifier", "RandomForestRegressor"]


class RandomForestClassifier(SerializableMixin, _sk.RandomForestClassifier):
    """A random forest classifier (:class:`sklearn.ensemble.RandomForestClassifier`).

    The trees are stored packed: one tensor per node field for all trees plus
    ``estimators_.tree_.node_offsets``, so the number of tensors does not grow with
    ``n_estimators``; see docs/schema/trees.md.

    Examples
    --------
    >>> from aprender.ensemble import RandomForestClassifier
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]
    >>> clf = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)
    >>> clf.predict([[0.0], [3.0]])
    array([0, 1])
    """


class RandomForestRegressor(SerializableMixin, _sk.RandomForestRegressor):
    """A random forest regressor (:class:`sklearn.ensemble.RandomForestRegressor`).

    Stored packed like :class:`RandomForestClassifier`.

    Examples
    --------
    >>> from aprender.ensemble import RandomForestRegressor
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0.0, 0.0, 4.0, 4.0]
    >>> reg = RandomForestRegressor(n_estimators=5, bootstrap=False).fit(X, y)
    >>> reg.predict([[0.0], [3.0]])
    array([0., 4.])
    """
