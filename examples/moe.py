"""Mixture of experts: four linear experts and a softmax gate learn a piecewise problem.

The data has four regimes along the first feature, each with its own linear law.
One linear model cannot follow them; a mixture of four linear experts, trained by
EM and routing each row to its top-1 expert, can. The fitted mixture is saved as one
file (experts under ``experts.{i}.``, the gate under ``gating.``) and loaded back.

Run with ``python examples/moe.py``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import aprender
from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor
from aprender.format.safetensors import load_tensors
from aprender.linear_model import LinearRegression, LogisticRegression

#: Regime boundaries on the first feature, which ranges over [-4, 4].
BOUNDARIES = [-2.0, 0.0, 2.0]


def _features(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = np.c_[rng.uniform(-4, 4, n), rng.uniform(-1, 1, n)]
    return X, np.digitize(X[:, 0], BOUNDARIES)


def regimes_regression(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A zig-zag in x0 (slopes +3, -3, +3, -3) with a regime-dependent x1 term, plus noise."""
    rng = np.random.default_rng(seed)
    X, regime = _features(n, rng)
    slopes = np.array([[3.0, 1.0], [-3.0, 2.0], [3.0, -1.0], [-3.0, -2.0]])
    offsets = np.array([12.0, -6.0, -6.0, 12.0])
    y = np.sum(X * slopes[regime], axis=1) + offsets[regime] + rng.normal(0.0, 0.2, n)
    return X, y


def regimes_classification(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Class 1 on one side of a tilted line; the tilt and the side flip from one regime to the next."""
    rng = np.random.default_rng(seed)
    X, regime = _features(n, rng)
    slopes = np.array([0.5, -0.5, 0.5, -0.5])[regime]
    centres = np.array([-3.0, -1.0, 1.0, 3.0])[regime]
    sides = np.array([1.0, -1.0, 1.0, -1.0])[regime]
    return X, (sides * (X[:, 1] - slopes * (X[:, 0] - centres)) > 0).astype(int)


def compare_regression() -> tuple[float, float, MixtureOfExpertsRegressor]:
    """Held-out R^2 of one LinearRegression and of a 4-expert top-1 mixture."""
    X, y = regimes_regression(600, seed=0)
    X_test, y_test = regimes_regression(600, seed=1)
    single = LinearRegression().fit(X, y).score(X_test, y_test)
    moe = MixtureOfExpertsRegressor([LinearRegression() for _ in range(4)], top_k=1, random_state=0).fit(X, y)
    return single, moe.score(X_test, y_test), moe


def compare_classification() -> tuple[float, float, MixtureOfExpertsClassifier]:
    """Held-out accuracy of one LogisticRegression and of a 4-expert top-1 mixture."""
    X, y = regimes_classification(600, seed=0)
    X_test, y_test = regimes_classification(600, seed=1)
    single = LogisticRegression().fit(X, y).score(X_test, y_test)
    moe = MixtureOfExpertsClassifier(n_experts=4, top_k=1, tol=1e-2, random_state=0).fit(X, y)
    return single, moe.score(X_test, y_test), moe


def main() -> None:
    single, mixed, moe = compare_regression()
    print(f"regression, held-out R^2: single LinearRegression {single:.3f}, mixture of 4 experts {mixed:.3f}")
    print(f"  EM iterations {moe.n_iter_}, loss {moe.loss_curve_[0]:.3f} -> {moe.loss_curve_[-1]:.3f}")
    X_test, _ = regimes_regression(600, seed=1)
    print(f"  expert usage {np.round(moe.expert_usage(X_test), 3).tolist()}, "
          f"load-balance loss {moe.load_balance_loss(X_test):.3f} (1.0 = perfectly balanced)")

    single_acc, mixed_acc, clf = compare_classification()
    print(f"classification, held-out accuracy: single LogisticRegression {single_acc:.3f}, "
          f"mixture of 4 experts {mixed_acc:.3f} ({clf.n_iter_} EM iterations)")

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "moe.safetensors"
        moe.save_safetensors(path)
        names = sorted(load_tensors(path))
        print(f"saved one file, {len(names)} tensors: {names[:3]} ... {names[-3:]}")
        loaded = aprender.load(path)
        same = np.array_equal(loaded.predict(X_test), moe.predict(X_test))
        print(f"loaded {type(loaded).__name__}; predictions bit-identical: {same}")
        if not same:
            raise SystemExit("roundtrip changed the predictions")


if __name__ == "__main__":
    main()
