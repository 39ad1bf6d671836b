"""k-nearest-neighbour estimators with aprender persistence.

The fitted search tree (KDTree/BallTree) is never stored: loading rebuilds it from
the stored training data with scikit-learn's public constructor, which gives the
same tree, so a file cannot smuggle in node arrays.
"""

from __future__ import annotations

from sklearn import neighbors as _sk

from aprender.base import SerializableMixin

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor"]


class KNeighborsClassifier(SerializableMixin, _sk.KNeighborsClassifier):
    """k-nearest-neighbours vote (:class:`sklearn.neighbors.KNeighborsClassifier`).

    Saved tensors: ``_fit_X`` (the training samples), ``_y`` (their class indices)
    and numeric ``classes_``. The search tree is rebuilt on load.

    Examples
    --------
    >>> from aprender.neighbors import KNeighborsClassifier
    >>> knn = KNeighborsClassifier(n_neighbors=1).fit([[0.0], [1.0], [5.0]], [0, 0, 1])
    >>> knn.predict([[4.0]])
    array([1])
    """


class KNeighborsRegressor(SerializableMixin, _sk.KNeighborsRegressor):
    """k-nearest-neighbours regression (:class:`sklearn.neighbors.KNeighborsRegressor`).

    Saved tensors: ``_fit_X`` (the training samples) and ``_y`` (their targets).
    The search tree is rebuilt on load.

    Examples
    --------
    >>> from aprender.neighbors import KNeighborsRegressor
    >>> knn = KNeighborsRegressor(n_neighbors=2).fit([[0.0], [1.0], [5.0]], [0.0, 1.0, 5.0])
    >>> knn.predict([[0.4]])
    array([0.5])
    """
