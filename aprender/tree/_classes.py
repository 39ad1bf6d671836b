"""Decision trees: scikit-learn's algorithms with aprender persistence."""

from __future__ import annotations

from sklearn import tree as _sk

from aprender.base import SerializableMixin

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]


class DecisionTreeClassifier(SerializableMixin, _sk.DecisionTreeClassifier):
    """A decision tree classifier (:class:`sklearn.tree.DecisionTreeClassifier`).

    Saved tensors: one per node field of ``tree_`` (``tree_.left_child``,
    ``tree_.right_child``, ``tree_.feature``, ``tree_.threshold``, ...) plus
    ``tree_.values``; see docs/schema/trees.md. Loading checks that the nodes form a
    proper tree before scikit-learn sees them.

    Examples
    --------
    >>> from aprender.tree import DecisionTreeClassifier
    >>> clf = DecisionTreeClassifier(random_state=0).fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> clf.predict([[0.5], [2.5]])
    array([0, 1])
    """


class DecisionTreeRegressor(SerializableMixin, _sk.DecisionTreeRegressor):
    """A decision tree regressor (:class:`sklearn.tree.DecisionTreeRegressor`).

    Saved tensors: the node fields of ``tree_`` and ``tree_.values`` (the leaf means);
    see docs/schema/trees.md.

    Examples
    --------
    >>> from aprender.tree import DecisionTreeRegressor
    >>> reg = DecisionTreeRegressor(max_depth=1).fit([[0.0], [1.0], [2.0], [3.0]], [1.0, 1.0, 5.0, 5.0])
    >>> reg.predict([[0.5], [2.5]])
    array([1., 5.])
    """
