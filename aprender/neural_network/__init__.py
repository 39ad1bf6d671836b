"""Multi-layer perceptrons that save and load without pickle."""

from aprender.neural_network._generated import BernoulliRBM
from aprender.neural_network._mlp import MLPClassifier, MLPRegressor

__all__ = ["MLPClassifier", "MLPRegressor"]
__all__ += ["BernoulliRBM"]
