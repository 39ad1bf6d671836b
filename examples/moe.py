"""Mixture of experts: linear experts and a softmax gate learn piecewise-linear problems.

The data has regimes, each with its own linear law. One linear model cannot follow
them; a mixture of linear experts, trained by EM and routing each row to its top-1
expert, can. How well? The table compares the mixture, with its default arguments, to
an oracle that routes every row to its true regime's expert, fitted on the true
partition: no routing can do better. The fitted mixture is then saved as one file
(experts under ``experts.{i}.``, the gate under ``gating.``) and loaded back.

Run with ``python examples/moe.py``; ``APRENDER_EXAMPLE_QUICK=1`` compares only the
two smallest problems (the test suite runs it that way). ``benchmarks/moe.py`` runs
every problem over more seeds.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import aprender
from aprender.ensemble import MixtureOfExpertsClassifier, MixtureOfExpertsRegressor
from aprender.format.safetensors import load_tensors
from aprender.linear_model import LinearRegression, LogisticRegression

QUICK = os.environ.get("APRENDER_EXAMPLE_QUICK") == "1"

#: (X, y, true regime of each row)
Sample = tuple[np.ndarray, np.ndarray, np.ndarray]

#: Regime boundaries on the first feature, which ranges over [-4, 4].
BOUNDARIES = [-2.0, 0.0, 2.0]


def _features(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = np.c_[rng.uniform(-4, 4, n), rng.uniform(-1, 1, n)]
    return X, np.digitize(X[:, 0], BOUNDARIES)


def zigzag(n: int, seed: int) -> Sample:
    """A zig-zag in x0 (slopes +3, -3, +3, -3) with a regime-dependent x1 term, plus noise."""
    rng = np.random.default_rng(seed)
    X, regime = _features(n, rng)
    slopes = np.array([[3.0, 1.0], [-3.0, 2.0], [3.0, -1.0], [-3.0, -2.0]])
    offsets = np.array([12.0, -6.0, -6.0, 12.0])
    y = np.sum(X * slopes[regime], axis=1) + offsets[regime] + rng.normal(0.0, 0.2, n)
    return X, y, regime


def regimes_regression(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The zig-zag's X and y."""
    X, y, _ = zigzag(n, seed)
    return X, y


def rotated_regimes(n_features: int, n_regimes: int) -> Callable[[int, int], Sample]:
    """Regimes in slabs along a random direction, each with random linear coefficients.

    ``X`` is uniform on ``[-2, 2]^n_features``; the slab boundaries are evenly spaced
    along the projection on a random unit vector, over +-1.6 standard deviations of
    it; each regime's coefficients and intercept are N(0, 2), the noise N(0, 0.1). The
    function is discontinuous at every boundary: a row routed to a neighbouring
    regime's expert costs about as much as the variance of y. ``seed // 2`` draws the
    direction and the coefficients, ``seed`` the rows: seeds ``2s`` and ``2s + 1`` are
    the training and test rows of one problem (see :func:`train_test`).
    """

    def sample(n: int, seed: int) -> Sample:
        law = np.random.default_rng(1000 + seed // 2)
        direction = law.normal(size=n_features)
        direction /= np.linalg.norm(direction)
        coefficients = law.normal(0.0, 2.0, size=(n_regimes, n_features))
        intercepts = law.normal(0.0, 2.0, size=n_regimes)
        rng = np.random.default_rng(seed)
        X = rng.uniform(-2.0, 2.0, size=(n, n_features))
        spread = np.sqrt(n_features / 3.0)  # the standard deviation of X @ direction
        regime = np.digitize(X @ direction, np.linspace(-1.6, 1.6, n_regimes + 1)[1:-1] * spread)
        y = np.sum(X * coefficients[regime], axis=1) + intercepts[regime] + rng.normal(0.0, 0.1, n)
        return X, y, regime

    return sample


#: name -> (sampler(n, seed), training rows); the test set has as many rows.
PROBLEMS: dict[str, tuple[Callable[[int, int], Sample], int]] = {
    "zig-zag, 4 regimes, 2 features": (zigzag, 600),
    "3 rotated regimes, 3 features": (rotated_regimes(3, 3), 600),
    "5 rotated regimes, 2 features": (rotated_regimes(2, 5), 1000),
    "5 rotated regimes, 4 features": (rotated_regimes(4, 5), 1000),
    "5 rotated regimes, 8 features": (rotated_regimes(8, 5), 2000),
}


def train_test(name: str, seed: int) -> tuple[Sample, Sample]:
    """Training and test rows of one instance of a problem (seeds ``2 * seed`` and ``2 * seed + 1``)."""
    sampler, n = PROBLEMS[name]
    return sampler(n, 2 * seed), sampler(n, 2 * seed + 1)


def oracle_r2(train: Sample, test: Sample) -> float:
    """Held-out R^2 when each row goes to its true regime's LinearRegression, fitted on that regime's rows."""
    (X, y, regime), (X_test, y_test, regime_test) = train, test
    pred = np.empty_like(y_test)
    for r in np.unique(regime_test):
        rows = regime_test == r
        pred[rows] = LinearRegression().fit(X[regime == r], y[regime == r]).predict(X_test[rows])
    return 1.0 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2)


def compare_to_oracle(name: str, seed: int, **params) -> dict[str, float]:
    """Oracle and mixture R^2 on one instance of a problem; the mixture has one expert per regime.

    ``params`` go to :class:`MixtureOfExpertsRegressor` (none: its defaults, top_k=1).
    """
    train, test = train_test(name, seed)
    n_regimes = len(np.unique(train[2]))
    start = time.perf_counter()
    moe = MixtureOfExpertsRegressor(n_experts=n_regimes, random_state=seed, **params).fit(train[0], train[1])
    seconds = time.perf_counter() - start
    oracle, mixed = oracle_r2(train, test), moe.score(test[0], test[1])
    return {"oracle": oracle, "moe": mixed, "ratio": mixed / oracle, "fit_seconds": seconds}


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


def oracle_table(seed: int = 0) -> list[str]:
    """One line per problem: oracle R^2, mixture R^2, their ratio and the mixture's fit time."""
    lines = [f"{'problem':34} {'oracle R^2':>10} {'MoE R^2':>8} {'ratio':>6} {'fit':>7}"]
    for name in list(PROBLEMS)[: 2 if QUICK else None]:
        r = compare_to_oracle(name, seed)
        lines.append(f"{name:34} {r['oracle']:10.4f} {r['moe']:8.4f} {r['ratio']:6.3f} {r['fit_seconds']:6.2f}s")
    return lines


def main() -> None:
    print("MixtureOfExpertsRegressor(n_experts=<regimes>), default arguments, against oracle routing:")
    print("\n".join(oracle_table()))
    print()
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
