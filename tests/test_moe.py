"""MixtureOfExperts and SoftmaxGating: learning, routing, capacity, diagnostics, sklearn integration.

Persistence in every format is in test_moe_formats.py; the zoo cases (cases_moe.py)
also run through every format's generic tests.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import check_grad
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
from sklearn.utils._param_validation import InvalidParameterError

from aprender.ensemble import MixtureOfExperts, MixtureOfExpertsClassifier, MixtureOfExpertsRegressor, SoftmaxGating
from aprender.ensemble._gating import ALPHA_GRID, _folds, _objective
from aprender.ensemble._moe import route
from aprender.linear_model import LinearRegression, LogisticRegression, Ridge
from aprender.preprocessing import StandardScaler

EXAMPLE = Path(__file__).parent.parent / "examples" / "moe.py"


@pytest.fixture(scope="module")
def example():
    """examples/moe.py as a module: the quality bar is asserted on what the example prints."""
    spec = importlib.util.spec_from_file_location("moe_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regression(example):
    return example.compare_regression()


@pytest.fixture(scope="module")
def regimes(example):
    return example.regimes_regression(300, seed=2)


# -- the quality bar ----------------------------------------------------------------------


def test_four_linear_experts_learn_four_regimes(regression) -> None:
    single, mixed, moe = regression
    assert single <= 0.6
    assert mixed >= 0.95
    assert moe.top_k == 1 and len(moe.experts_) == 4
    assert all(type(e) is LinearRegression for e in moe.experts_)


@pytest.mark.parametrize(("problem", "seed"), [
    ("zig-zag, 4 regimes, 2 features", 2),
    ("3 rotated regimes, 3 features", 0),
    ("3 rotated regimes, 3 features", 4),
])
def test_default_mixture_routes_almost_as_well_as_the_oracle(example, problem, seed) -> None:
    # the oracle routes every test row to its true regime's expert, fitted on the true partition
    result = example.compare_to_oracle(problem, seed)
    assert result["oracle"] > 0.99
    assert result["ratio"] >= 0.98


def test_refinement_is_what_closes_the_gap_to_the_oracle(example) -> None:
    # EM alone routes with a gate blurred by soft responsibilities and a fixed penalty
    em_only = example.compare_to_oracle("zig-zag, 4 regimes, 2 features", 4, refine_iter=0)
    refined = example.compare_to_oracle("zig-zag, 4 regimes, 2 features", 4)
    assert em_only["ratio"] < 0.985
    assert refined["ratio"] - em_only["ratio"] >= 0.01


def test_what_remains_of_the_gap_to_the_oracle_is_routing(example) -> None:
    # The instance where the default mixture is furthest below the oracle among the 3-D
    # problem's seeds 0-9 (0.961): its experts, routed by each test row's true regime,
    # do as well as the oracle's, so the whole gap is rows the gate misroutes.
    (X, y, regime), (X_test, y_test, regime_test) = train, test = example.train_test("3 rotated regimes, 3 features", 3)
    moe = MixtureOfExpertsRegressor(n_experts=3, random_state=3).fit(X, y)
    routed = moe.routing_weights(X).argmax(axis=1)
    owner = np.array([np.bincount(routed[regime == r], minlength=3).argmax() for r in range(3)])
    assert sorted(owner) == [0, 1, 2]
    pred = np.column_stack([e.predict(X_test) for e in moe.experts_])[np.arange(len(y_test)), owner[regime_test]]
    true_routed = 1.0 - np.sum((y_test - pred) ** 2) / np.sum((y_test - y_test.mean()) ** 2)
    oracle = example.oracle_r2(train, test)
    assert true_routed / oracle >= 0.9999


def test_n_init_keeps_the_start_of_lowest_em_loss_and_is_deterministic(regimes) -> None:
    X, y = regimes
    one = MixtureOfExpertsRegressor(n_init=1, refine_iter=0, random_state=5).fit(X, y)
    three = MixtureOfExpertsRegressor(n_init=3, refine_iter=0, random_state=5).fit(X, y)
    again = MixtureOfExpertsRegressor(n_init=3, refine_iter=0, random_state=5).fit(X, y)
    # the first of the three starts is the single start: the kept one is at least as good
    assert three.loss_curve_[-1] <= one.loss_curve_[-1]
    assert three.loss_curve_ == again.loss_curve_
    np.testing.assert_array_equal(three.predict(X), again.predict(X))
    np.testing.assert_array_equal(three.gating_.weights_, again.gating_.weights_)


def test_refined_gate_records_its_cross_validated_penalty(regression) -> None:
    _, _, moe = regression
    gate = moe.gating_
    assert gate.alpha == "auto"
    assert gate.cv_losses_.shape == (len(ALPHA_GRID),)
    assert gate.alpha_ == ALPHA_GRID[int(np.argmin(gate.cv_losses_))]
    # sharp regime boundaries: the held-out routed loss prefers a weak penalty
    assert gate.alpha_ <= 1e-4


def test_each_expert_owns_one_regime(regression, regimes) -> None:
    _, _, moe = regression
    X, _ = regimes
    experts = moe.routing_weights(X).argmax(axis=1)
    regime = np.digitize(X[:, 0], [-2.0, 0.0, 2.0])
    inside = np.abs(X[:, 0] - np.round(X[:, 0] / 2) * 2) > 0.25  # away from the boundaries
    # every regime is served by one expert, and different regimes by different experts
    owners = [np.bincount(experts[(regime == r) & inside], minlength=4).argmax() for r in range(4)]
    assert sorted(owners) == [0, 1, 2, 3]
    assert np.mean(experts[inside] == np.array(owners)[regime[inside]]) == 1.0


def test_classification_mixture_clearly_beats_a_single_expert(example) -> None:
    single, mixed, moe = example.compare_classification()
    assert mixed >= 0.9
    assert mixed - single >= 0.3
    assert moe.top_k == 1 and len(moe.experts_) == 4


def test_training_records_iterations_and_a_falling_loss(regression) -> None:
    _, _, moe = regression
    assert moe.converged_
    assert moe.n_iter_ == len(moe.loss_curve_) >= 2
    assert all(isinstance(v, float) for v in moe.loss_curve_)
    assert moe.loss_curve_[-1] < moe.loss_curve_[0]
    assert moe.loss_curve_[-2] - moe.loss_curve_[-1] < moe.tol
    assert moe.noise_variance_.shape == (4,) and np.all(moe.noise_variance_ > 0)


def test_max_iter_stops_early_with_a_convergence_warning(regimes) -> None:
    X, y = regimes
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 iterations"):
        moe = MixtureOfExpertsRegressor(max_iter=2, tol=0.0, random_state=0).fit(X, y)
    assert moe.n_iter_ == 2 and not moe.converged_


def test_same_random_state_same_model(regimes) -> None:
    X, y = regimes
    a = MixtureOfExpertsRegressor(random_state=3).fit(X, y)
    b = MixtureOfExpertsRegressor(random_state=3).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))
    assert a.loss_curve_ == b.loss_curve_


def test_seed_name_is_the_regressor() -> None:
    assert MixtureOfExperts is MixtureOfExpertsRegressor


# -- inference: top-k and renormalisation -----------------------------------------------


def test_route_keeps_top_k_and_renormalises() -> None:
    gates = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
    np.testing.assert_array_equal(route(gates, 1), [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    two = route(gates, 2)
    np.testing.assert_array_equal(two[0], [0.5 / (0.5 + 0.3), 0.3 / (0.5 + 0.3), 0.0])
    np.testing.assert_array_equal(two[1], [0.0, 0.6 / (0.6 + 0.3), 0.3 / (0.6 + 0.3)])
    # a tie for second place goes to the lower expert index
    np.testing.assert_array_equal(two[2], [0.25 / (0.5 + 0.25), 0.0, 0.5 / (0.5 + 0.25)])
    np.testing.assert_allclose(route(gates, 3), gates, rtol=1e-15)


def test_regressor_predicts_the_weighted_sum_of_routed_experts(regimes) -> None:
    X, y = regimes
    moe = MixtureOfExpertsRegressor(n_experts=3, top_k=2, random_state=0).fit(X, y)
    weights = moe.routing_weights(X)
    assert np.all((weights > 0).sum(axis=1) == 2)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(weights, route(moe.gating_.routing_weights(X), 2))
    expected = sum(weights[:, k] * e.predict(X) for k, e in enumerate(moe.experts_))
    np.testing.assert_allclose(moe.predict(X), expected, rtol=1e-12)


def test_classifier_sums_aligned_expert_probabilities() -> None:
    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = MixtureOfExpertsClassifier(n_experts=3, top_k=2, tol=1e-2, random_state=0).fit(X, labels)
    proba = clf.predict_proba(X)
    weights = clf.routing_weights(X)
    expected = np.zeros_like(proba)
    for k, expert in enumerate(clf.experts_):
        expected[:, expert.classes_] += weights[:, [k]] * expert.predict_proba(X)
    np.testing.assert_allclose(proba, expected, rtol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    np.testing.assert_array_equal(clf.predict_log_proba(X), np.log(proba))
    assert clf.score(X, labels) > 0.95


def test_expert_that_saw_only_some_classes_gets_zero_for_the_others() -> None:
    # KNeighborsClassifier takes no sample_weight: each expert is fitted on its own rows,
    # and with classes separated along x0 an expert sees only some of them.
    rng = np.random.default_rng(0)
    X = np.c_[np.r_[rng.uniform(-5, -3, 60), rng.uniform(3, 5, 60)], rng.uniform(-1, 1, 120)]
    y = np.where(X[:, 0] > 0, 2, (X[:, 1] > 0).astype(int))
    clf = MixtureOfExpertsClassifier([KNeighborsClassifier(3), KNeighborsClassifier(3)], random_state=0).fit(X, y)
    seen = sorted(tuple(e.classes_.tolist()) for e in clf.experts_)
    assert seen == [(0, 1), (2,)]
    assert sum(e.n_samples_fit_ for e in clf.experts_) == len(X)
    proba = clf.predict_proba(X)
    assert proba.shape == (120, 3)
    np.testing.assert_array_equal(proba[X[:, 0] > 0], np.tile([0.0, 0.0, 1.0], (60, 1)))
    assert clf.score(X, y) >= 0.95


def test_experts_without_sample_weight_fit_on_their_partition(regimes) -> None:
    X, y = regimes
    moe = MixtureOfExpertsRegressor([KNeighborsRegressor(5), Ridge()], random_state=0).fit(X, y)
    assert 0 < moe.experts_[0].n_samples_fit_ < len(X)
    assert moe.score(X, y) > 0.75  # a single linear model explains nothing here (R^2 ~ 0)


# -- capacity -------------------------------------------------------------------------


def test_capacity_reroutes_overflowing_first_choices_to_the_best_expert_with_room() -> None:
    # four rows all prefer expert 0; with 2 experts and factor 1.0 each takes ceil(1 * 4 / 2) = 2 rows
    gates = np.array([[0.9, 0.1], [0.6, 0.4], [0.8, 0.2], [0.7, 0.3]])
    weights = route(gates, top_k=1, capacity_factor=1.0)
    # the two most confident rows (0 and 2) keep expert 0; rows 1 and 3 move to expert 1, weight 1
    np.testing.assert_array_equal(weights, [[1, 0], [0, 1], [1, 0], [0, 1]])


def test_capacity_drops_later_choices_that_find_their_expert_full() -> None:
    gates = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.2, 0.5, 0.3]])
    # capacity = ceil(1.0 * 2 * 4 / 3) = 3 rows per expert
    weights = route(gates, top_k=2, capacity_factor=1.0)
    # first choices: expert 0 <- rows 0, 1; expert 1 <- rows 2, 3. Second choices in order
    # of confidence, then row: rows 0, 1 want expert 1 (room for one: row 0 gets it),
    # rows 2, 3 want expert 2 (both fit).
    expected = np.array([
        [0.5 / 0.8, 0.3 / 0.8, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 0.5 / 0.8, 0.3 / 0.8],
        [0.0, 0.5 / 0.8, 0.3 / 0.8],
    ])
    np.testing.assert_array_equal(weights, expected)


def test_capacity_never_leaves_a_row_without_an_expert() -> None:
    rng = np.random.default_rng(0)
    for n, k, top_k, factor in [(50, 4, 1, 0.1), (50, 4, 2, 0.5), (37, 5, 3, 1.0), (9, 3, 1, 2.0), (1, 4, 2, 0.3)]:
        gates = rng.dirichlet(np.full(k, 0.3), size=n)
        gates[: n // 2] = gates[0]  # many identical rows compete for the same expert
        weights = route(gates, top_k, capacity_factor=factor)
        capacity = max(math.ceil(factor * top_k * n / k), math.ceil(n / k))
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all((weights > 0).sum(axis=1) >= 1)
        assert np.all((weights > 0).sum(axis=1) <= top_k)
        assert np.all((weights > 0).sum(axis=0) <= capacity)


def test_generous_capacity_changes_nothing() -> None:
    gates = np.random.default_rng(1).dirichlet(np.ones(4), size=40)
    np.testing.assert_array_equal(route(gates, 2, capacity_factor=4.0), route(gates, 2))


def test_capacity_applies_per_inference_batch(regimes) -> None:
    X, y = regimes
    free = MixtureOfExpertsRegressor(random_state=0).fit(X, y)
    capped = clone(free).set_params(capacity_factor=1.0).fit(X, y)
    assert free.expert_usage(X).max() > 0.27  # the gate is not perfectly balanced
    usage = capped.expert_usage(X)
    assert usage.max() <= math.ceil(len(X) / 4) / len(X)
    np.testing.assert_allclose(usage.sum(), 1.0)
    # a row's prediction depends on the batch it comes in: alone it always gets its first choice
    one = X[:1]
    assert np.array_equal(capped.predict(one), free.predict(one))
    weights = capped.routing_weights(X)
    expected = sum(weights[:, k] * e.predict(X) for k, e in enumerate(capped.experts_))
    np.testing.assert_allclose(capped.predict(X), expected, rtol=1e-12)


# -- diagnostics ----------------------------------------------------------------------


def test_expert_usage_and_load_balance_loss(regression, regimes) -> None:
    _, _, moe = regression
    X, _ = regimes
    usage = moe.expert_usage(X)
    np.testing.assert_array_equal(usage, (moe.routing_weights(X) > 0).mean(axis=0))
    assert usage.sum() == pytest.approx(1.0)
    gates = moe.gating_.routing_weights(X)
    assert moe.load_balance_loss(X) == pytest.approx(4 * usage @ gates.mean(axis=0), rel=1e-12)
    assert 0.95 < moe.load_balance_loss(X) < 1.1  # four regimes of equal width: nearly balanced


def test_top_k_usage_sums_to_k(regimes) -> None:
    X, y = regimes
    moe = MixtureOfExpertsRegressor(n_experts=4, top_k=3, random_state=0).fit(X, y)
    assert moe.expert_usage(X).sum() == pytest.approx(3.0)


def test_load_balance_weight_evens_out_the_routing() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (300, 1))
    # two regimes, one covering 85% of the range
    y = np.where(X[:, 0] < 2.1, 2 * X[:, 0], -5 * X[:, 0] + 15) + rng.normal(0, 0.1, 300)
    free = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, y)
    balanced = MixtureOfExpertsRegressor(n_experts=2, load_balance_weight=5.0, random_state=0).fit(X, y)
    assert balanced.load_balance_loss(X) < free.load_balance_loss(X) - 0.2
    assert balanced.expert_usage(X).min() > free.expert_usage(X).min() + 0.1


# -- SoftmaxGating ----------------------------------------------------------------------


def test_gating_routes_by_a_linear_softmax() -> None:
    X = np.array([[-2.0, 0.0], [-1.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.5]])
    gate = SoftmaxGating().fit(X, ["left", "left", "right", "right", "right"])
    assert gate.weights_.shape == (2, 2) and gate.bias_.shape == (2,)
    assert gate.bias_.sum() == pytest.approx(0.0, abs=1e-12)
    logits = X @ gate.weights_ + gate.bias_
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(gate.routing_weights(X), expected / expected.sum(axis=1, keepdims=True), rtol=1e-12)
    assert gate.predict(X).tolist() == ["left", "left", "right", "right", "right"]
    assert gate.n_iter_ >= 1


def test_temperature_sharpens_or_flattens_without_changing_the_choice() -> None:
    X, y = load_iris(return_X_y=True)
    gate = SoftmaxGating(alpha=1e-4).fit(X, y)
    cold = SoftmaxGating(temperature=0.25, alpha=1e-4).fit(X, y)
    hot = SoftmaxGating(temperature=4.0, alpha=1e-4).fit(X, y)
    # the logits are fitted at temperature 1: only routing changes
    np.testing.assert_array_equal(cold.weights_, gate.weights_)
    np.testing.assert_array_equal(hot.bias_, gate.bias_)

    def entropy(p: np.ndarray) -> float:
        return float(-(p * np.log(np.maximum(p, 1e-300))).sum(axis=1).mean())
    assert entropy(cold.routing_weights(X)) < entropy(gate.routing_weights(X)) < entropy(hot.routing_weights(X))
    np.testing.assert_array_equal(cold.predict(X), gate.predict(X))
    np.testing.assert_allclose(cold.log_routing_weights(X), np.log(cold.routing_weights(X)), atol=1e-9)


def test_fit_soft_on_one_hot_targets_equals_fit_on_labels() -> None:
    X, y = load_iris(return_X_y=True)
    soft = SoftmaxGating(alpha=1e-4).fit_soft(X, np.eye(3)[y])
    hard = SoftmaxGating(alpha=1e-4).fit(X, y)
    np.testing.assert_array_equal(soft.weights_, hard.weights_)
    np.testing.assert_array_equal(soft.classes_, [0, 1, 2])


def test_fit_soft_follows_soft_targets() -> None:
    X = np.linspace(-3, 3, 61).reshape(-1, 1)
    right = 1 / (1 + np.exp(-2 * X[:, 0]))
    gate = SoftmaxGating(alpha=0.0, tol=1e-10).fit_soft(X, np.c_[1 - right, right])
    np.testing.assert_allclose(gate.routing_weights(X)[:, 1], right, atol=1e-4)
    with pytest.raises(ValueError, match="non-negative array of shape"):
        SoftmaxGating().fit_soft(X, np.c_[-right, right])


def test_auto_alpha_is_weak_for_a_sharp_boundary_and_strong_for_noise() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 2))
    sharp = SoftmaxGating().fit(X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int))
    noise = SoftmaxGating().fit(X, rng.integers(0, 3, 300))
    for gate in (sharp, noise):
        assert gate.cv_losses_.shape == (len(ALPHA_GRID),)
        assert gate.alpha_ == ALPHA_GRID[int(np.argmin(gate.cv_losses_))]
    assert sharp.alpha_ <= 1e-6
    assert noise.alpha_ == ALPHA_GRID[0]
    # the search stops once the held-out loss rises: weaker penalties are not fitted
    assert np.isinf(noise.cv_losses_[2:]).all() and np.isfinite(noise.cv_losses_[:2]).all()
    fixed = SoftmaxGating(alpha=1e-3).fit(X, (X[:, 0] > 0).astype(int))
    assert fixed.alpha_ == 1e-3 and fixed.cv_losses_ is None


def test_cross_validation_folds_hash_the_rows() -> None:
    X = np.random.default_rng(0).normal(size=(900, 3))
    folds = _folds(X)
    assert set(np.bincount(folds)) <= set(range(270, 331))  # about a third each
    # equal rows share a fold, whatever their position: a weight of 2 is two copies
    np.testing.assert_array_equal(_folds(X[::-1]), folds[::-1])
    np.testing.assert_array_equal(_folds(np.vstack([X, X])), np.r_[folds, folds])


def test_gate_that_stops_at_max_iter_warns() -> None:
    X = np.linspace(-1, 1, 40).reshape(-1, 1)
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=3"):
        SoftmaxGating(alpha=0.0, max_iter=3).fit(X, X[:, 0] > 0)


def test_gate_gradient_matches_its_loss_with_load_balancing() -> None:
    rng = np.random.default_rng(0)
    X, targets = rng.normal(size=(30, 3)), rng.dirichlet(np.ones(4), size=30)
    weights = rng.uniform(size=30)
    weights /= weights.sum()
    balance = np.array([0.5, 2.0, 0.0, 1.0])
    theta = rng.normal(size=3 * 4 + 4)
    error = check_grad(lambda t: _objective(t, X, targets, weights, 0.1, balance)[0],
                       lambda t: _objective(t, X, targets, weights, 0.1, balance)[1], theta)
    assert error < 1e-6


# -- parameters and sklearn integration ---------------------------------------------------


@pytest.mark.parametrize(("params", "error", "message"), [
    ({"experts": [LinearRegression()], "base_estimator": Ridge()}, ValueError, "either experts or base_estimator"),
    ({"experts": []}, ValueError, "non-empty list"),
    ({"experts": [LinearRegression(), "ridge"]}, TypeError, r"experts\[1\] must be an estimator"),
    ({"n_experts": 2, "top_k": 3}, ValueError, "top_k=3 exceeds the number of experts"),
    ({"gating": LinearRegression()}, InvalidParameterError, "'gating' parameter"),
    ({"capacity_factor": 0.0}, InvalidParameterError, "'capacity_factor' parameter"),
    ({"n_init": 0}, InvalidParameterError, "'n_init' parameter"),
    ({"refine_iter": -1}, InvalidParameterError, "'refine_iter' parameter"),
    ({"gating": SoftmaxGating(alpha="sharp")}, InvalidParameterError, "'alpha' parameter"),
])
def test_invalid_parameters_are_refused_at_fit(params, error, message, regimes) -> None:
    X, y = regimes
    with pytest.raises(error, match=message):
        MixtureOfExpertsRegressor(**params).fit(X, y)


def test_classifier_needs_probabilities_and_two_classes() -> None:
    X, y = load_iris(return_X_y=True)
    with pytest.raises(TypeError, match=r"expert 0 \(SVC\) has no predict_proba"):
        MixtureOfExpertsClassifier([SVC(), SVC()], random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        MixtureOfExpertsClassifier(n_experts=2).fit(X, np.zeros(len(X)))


@pytest.mark.parametrize("method", ["predict", "routing_weights", "expert_usage", "load_balance_loss"])
def test_unfitted_mixture_raises_not_fitted(method) -> None:
    with pytest.raises(NotFittedError):
        getattr(MixtureOfExpertsRegressor(), method)([[0.0, 1.0]])


def test_params_are_cloned_not_fitted(regimes) -> None:
    X, y = regimes
    experts, gate = [LinearRegression(), Ridge()], SoftmaxGating(temperature=0.5)
    moe = MixtureOfExpertsRegressor(experts, gating=gate, random_state=0).fit(X, y)
    assert not hasattr(experts[0], "coef_") and not hasattr(gate, "weights_")
    assert moe.experts_[0] is not experts[0] and moe.gating_.temperature == 0.5
    assert clone(moe).get_params()["experts"][1].get_params() == Ridge().get_params()


def test_pipeline_and_grid_search(regimes) -> None:
    X, y = regimes
    pipe = make_pipeline(StandardScaler(), MixtureOfExpertsRegressor(random_state=0)).fit(X, y)
    alone = MixtureOfExpertsRegressor(random_state=0).fit(StandardScaler().fit_transform(X), y)
    np.testing.assert_array_equal(pipe.predict(X), alone.predict(pipe[0].transform(X)))
    search = GridSearchCV(
        MixtureOfExpertsRegressor(random_state=0, tol=1e-2), {"n_experts": [1, 4], "top_k": [1]}, cv=2,
    ).fit(X, y)
    assert search.best_params_ == {"n_experts": 4, "top_k": 1}
    assert search.best_estimator_.score(X, y) > 0.9


def test_default_experts_are_aprender_estimators(regimes) -> None:
    X, y = regimes
    reg = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, y)
    assert all(type(e) is LinearRegression for e in reg.experts_)
    Xi, yi = load_iris(return_X_y=True)
    clf = MixtureOfExpertsClassifier(n_experts=2, tol=1e-2, random_state=0).fit(Xi, yi)
    assert all(type(e) is LogisticRegression and e.max_iter == 1000 for e in clf.experts_)
