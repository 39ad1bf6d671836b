"""Ensembles that save and load without pickle: tree ensembles and the mixture of experts."""

from aprender._lazy import lazy_attributes
from aprender.ensemble._boosting import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from aprender.ensemble._forest import RandomForestClassifier, RandomForestRegressor
from aprender.ensemble._gating import SoftmaxGating
from aprender.ensemble._moe import MixtureOfExperts, MixtureOfExpertsClassifier, MixtureOfExpertsRegressor

__all__ = [
    "GradientBoostingClassifier",
    "GradientBoostingRegressor",
    "HistGradientBoostingClassifier",
    "HistGradientBoostingRegressor",
    "MixtureOfExperts",
    "MixtureOfExpertsClassifier",
    "MixtureOfExpertsRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "SoftmaxGating",
]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = [
    "AdaBoostClassifier",
    "AdaBoostRegressor",
    "BaggingClassifier",
    "BaggingRegressor",
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "IsolationForest",
    "RandomTreesEmbedding",
    "StackingClassifier",
    "StackingRegressor",
    "VotingClassifier",
    "VotingRegressor",
]
__getattr__, __dir__ = lazy_attributes(__name__, "_generated", _GENERATED)
__all__ += _GENERATED
