from ._boosting import (
    GradientBoostingClassifier as GradientBoostingClassifier,
    GradientBoostingRegressor as GradientBoostingRegressor,
    HistGradientBoostingClassifier as HistGradientBoostingClassifier,
    HistGradientBoostingRegressor as HistGradientBoostingRegressor,
)
from ._forest import RandomForestClassifier as RandomForestClassifier, RandomForestRegressor as RandomForestRegressor
from ._gating import SoftmaxGating as SoftmaxGating
from ._generated import (
    AdaBoostClassifier as AdaBoostClassifier,
    AdaBoostRegressor as AdaBoostRegressor,
    BaggingClassifier as BaggingClassifier,
    BaggingRegressor as BaggingRegressor,
    ExtraTreesClassifier as ExtraTreesClassifier,
    ExtraTreesRegressor as ExtraTreesRegressor,
    IsolationForest as IsolationForest,
    RandomTreesEmbedding as RandomTreesEmbedding,
    StackingClassifier as StackingClassifier,
    StackingRegressor as StackingRegressor,
    VotingClassifier as VotingClassifier,
    VotingRegressor as VotingRegressor,
)
from ._moe import (
    MixtureOfExperts as MixtureOfExperts,
    MixtureOfExpertsClassifier as MixtureOfExpertsClassifier,
    MixtureOfExpertsRegressor as MixtureOfExpertsRegressor,
)
