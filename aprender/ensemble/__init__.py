"""Ensembles that save and load without pickle: tree ensembles and the mixture of experts."""

from aprender.ensemble._boosting import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from aprender.ensemble._forest import RandomForestClassifier, RandomForestRegressor
from aprender.ensemble._gating import SoftmaxGating
from aprender.ensemble._generated import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggingClassifier,
    BaggingRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    IsolationForest,
    RandomTreesEmbedding,
    StackingClassifier,
    StackingRegressor,
    VotingClassifier,
    VotingRegressor,
)
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
__all__ += [
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
