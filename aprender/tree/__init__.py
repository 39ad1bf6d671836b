"""Decision trees that save and load without pickle."""

from aprender.tree._classes import DecisionTreeClassifier, DecisionTreeRegressor
from aprender.tree._generated import ExtraTreeClassifier, ExtraTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
__all__ += ["ExtraTreeClassifier", "ExtraTreeRegressor"]
