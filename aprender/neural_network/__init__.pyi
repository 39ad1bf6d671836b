from ._generated import BernoulliRBM as BernoulliRBM
from ._mlp import MLPClassifier as MLPClassifier, MLPRegressor as MLPRegressor
