"""Ensembles that save and load without pickle: tree ensembles and the mixture of experts."""

from aprender._lazy import lazy_attributes
from aprender.ensemble._forest import RandomForestClassifier, RandomForestRegressor

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

#: The boosting models, the mixture of experts and its gate come in on first use: a forest's
#: load should not define them.
_HAND_LAZY = {
    "_boosting": [
        "GradientBoostingClassifier",
        "GradientBoostingRegressor",
        "HistGradientBoostingClassifier",
        "HistGradientBoostingRegressor",
    ],
    "_gating": ["SoftmaxGating"],
    "_moe": ["MixtureOfExperts", "MixtureOfExpertsClassifier", "MixtureOfExpertsRegressor"],
}

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
__getattr__, __dir__ = lazy_attributes(__name__, {**_HAND_LAZY, "_generated": _GENERATED})
__all__ += _GENERATED
