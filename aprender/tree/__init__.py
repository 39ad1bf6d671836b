"""Decision trees that save and load without pickle."""

from aprender.tree._classes import DecisionTreeClassifier, DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
