"""Tree ensembles that save and load without pickle."""

from aprender.ensemble._boosting import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from aprender.ensemble._forest import RandomForestClassifier, RandomForestRegressor

__all__ = [
    "GradientBoostingClassifier",
    "GradientBoostingRegressor",
    "HistGradientBoostingClassifier",
    "HistGradientBoostingRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
]
