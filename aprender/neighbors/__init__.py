"""Nearest-neighbour estimators that save and load without pickle."""

from aprender.neighbors._neighbors import KNeighborsClassifier, KNeighborsRegressor

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor"]
