"""An estimator whose calls take as long, and grow memory as much, as its hyperparameters and input say:
the stand-in for a valid model file that describes work without end (aprender serve's bounds).

Importing this module registers it (``tests.Stall``); ``aprender serve --trust stall_models:passthrough``
imports it in a server process.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

import aprender
from aprender.base import SerializableMixin


class Stall(SerializableMixin, RegressorMixin, BaseEstimator):
    """``predict`` takes ``delay`` seconds plus the largest value of the first column, growing the
    process by ``grow`` MiB every 10 ms meanwhile (in Python steps, so an abandoned call ends)."""

    def __init__(self, delay: float = 0.0, grow: int = 0) -> None:
        self.delay = delay
        self.grow = grow

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        end = time.monotonic() + self.delay + float(X[:, 0].max())
        held = []
        while time.monotonic() < end:
            time.sleep(0.01)
            if self.grow:
                held.append(np.ones(self.grow << 17))  # grow MiB of float64, written: resident
        return np.zeros(len(X))


def passthrough(X):
    """A function to name with ``--trust``, so that a server process imports this module."""
    return X


aprender.register_estimator(Stall, key="tests.Stall", model_type=aprender.ModelType.CUSTOM)
