"""Zoo cases of the mixture of experts and its gate: every format's generic roundtrip tests cover them.

Small and fast: a few experts and a loose tol (a few EM iterations) on diabetes and iris.
"""

from __future__ import annotations

import numpy as np
from zoo import Case, diabetes, iris

from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor, SoftmaxGating
from aprender.linear_model import LinearRegression, Ridge

_NAMES = np.array(["setosa", "versicolor", "virginica"])


def _regressor():
    X, y = diabetes()
    moe = MixtureOfExpertsRegressor([LinearRegression(), Ridge(alpha=0.1), LinearRegression()], top_k=2,
                                    tol=1e-2, max_iter=10, random_state=0)
    return moe.fit(X, y), X


def _classifier():
    X, y = iris()
    return MixtureOfExpertsClassifier(n_experts=2, tol=1e-2, max_iter=10, random_state=0).fit(X, _NAMES[y]), X


CASES = [
    Case("SoftmaxGating", lambda: (SoftmaxGating(temperature=0.5).fit(*iris()), iris()[0])),
    Case("MixtureOfExpertsRegressor-top2", _regressor),
    Case("MixtureOfExpertsClassifier-strings", _classifier),
]
