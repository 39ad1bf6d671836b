"""Mixture of experts: a softmax gate routes each row to its top-k experts.

Training is expectation-maximisation. KMeans on X gives the initial partition; each
iteration fits every expert to its responsibilities (as ``sample_weight`` where the
expert accepts it, else to the rows it is most responsible for), fits the gate to the
responsibilities, and recomputes them from the gate prior and the expert likelihoods
(Gaussian with a per-expert noise variance for regression, the expert's
``predict_proba`` of the true class for classification). It stops when the training
loss improves by less than ``tol`` or after ``max_iter`` iterations.

EM fits the gate to soft responsibilities under a fixed penalty, which blurs the
boundaries that top-1 routing depends on. With ``top_k=1`` (and no load balancing) a
refinement follows: each row is assigned to its most probable expert (gate prior times
likelihood), each expert is refitted on its rows, and the gate is refitted to those
hard labels with its penalty chosen by cross-validating the held-out loss of the routed
prediction -- ``refine_iter`` times. ``n_init`` EM
runs start from different KMeans seeds (the regressor's later starts cluster X and y);
the one of lowest final EM loss is refined and kept.

Inference routes each row to the ``top_k`` experts of highest gate weight, renormalises
those weights to sum to one and sums the weighted expert outputs. docs/schema/moe.md
states the algorithm precisely, including the ``capacity_factor`` overflow rule.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.special import logsumexp
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context, clone
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, has_fit_parameter, validate_data

from aprender._warn import warn
from aprender.base import SerializableMixin
from aprender.ensemble._gating import SoftmaxGating, _single_threaded

__all__ = ["MixtureOfExperts", "MixtureOfExpertsClassifier", "MixtureOfExpertsRegressor", "route"]

#: Floor on a responsibility passed as ``sample_weight``: an expert no row belongs to
#: still gets a well-posed (uniformly down-weighted) fit instead of all-zero weights.
_MIN_WEIGHT = 1e-12
#: Floor on an expert's probability of the true class in the E-step, so that one
#: confident mistake gives a finite log-likelihood.
_MIN_PROB = 1e-12
#: Floor on a regression expert's noise variance, relative to var(y): an expert that
#: fits its rows exactly must not take all responsibility with an infinite likelihood.
_VAR_FLOOR = 1e-6
#: L-BFGS iterations of the gate in each EM step, warm-started from the previous step:
#: a partial M-step (generalised EM). Fitting the gate to convergence in every step cost
#: a third more time over 15 problems and gave the same mixtures after the refinement.
_EM_GATE_ITER = 10
#: scikit-learn settings for the expert fits after the first M-step: X was checked by
#: the mixture and each expert's parameters by its first fit, and repeating both checks
#: cost about 40% of a LinearRegression expert's fit.
_TRUSTED = {"assume_finite": True, "skip_parameter_validation": True}
#: The gate's penalty in the EM steps when its ``alpha`` is "auto" (the refinement then
#: cross-validates it): soft responsibilities need no sharp boundary yet.
_EM_ALPHA = 1e-4


def _queue_positions(experts: np.ndarray, priority: np.ndarray, n_experts: int) -> np.ndarray:
    """Place of each assignment in its expert's queue when assignments are served in ``priority`` order."""
    served = experts[priority]
    counts = np.bincount(served, minlength=n_experts)
    by_expert = np.argsort(served, kind="stable")
    position = np.empty(served.shape[0], dtype=np.int64)
    position[priority[by_expert]] = np.arange(served.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    return position


def _apply_capacity(gates: np.ndarray, order: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Enforce ``capacity`` rows per expert on the top-k choices ``order``; see :func:`route`."""
    n, top_k = order.shape
    n_experts = gates.shape[1]
    rows = np.arange(n)
    order = order.copy()
    keep = np.zeros(order.shape, dtype=bool)
    # Phase 1: first choices, the most confident rows first, then by row index.
    first = gates[rows, order[:, 0]]
    priority = np.lexsort((rows, -first))
    keep[:, 0] = _queue_positions(order[:, 0], priority, n_experts) < capacity
    load = np.bincount(order[keep[:, 0], 0], minlength=n_experts)
    for i in priority[~keep[priority, 0]]:
        # Overflow: the row's best expert with room (total room >= n, so one always exists).
        preference = np.argsort(-gates[i], kind="stable")
        expert = preference[np.argmax(load[preference] < capacity)]
        load[expert] += 1
        order[i, 0] = expert
        keep[i, 0] = True
    if top_k > 1:
        # Phase 2: the other choices by rank, then confidence, then row, into the room left.
        later = order[:, 1:]
        r, c = np.nonzero(later != order[:, :1])
        experts = later[r, c]
        priority = np.lexsort((r, -gates[r, experts], c))
        keep[r, c + 1] = _queue_positions(experts, priority, n_experts) < (capacity - load)[experts]
    return order, keep


def route(gates: np.ndarray, top_k: int, capacity_factor: float | None = None) -> np.ndarray:
    """Combination weights of the experts for each row: top-k of the gate, renormalised.

    Each row keeps the ``top_k`` experts of highest gate weight (the lower expert index
    first on ties) and their gate weights divided by their sum.

    With ``capacity_factor`` an expert takes at most
    ``capacity = max(ceil(capacity_factor * top_k * n / n_experts), ceil(n / n_experts))``
    rows of the ``n``-row batch (the second term guarantees room for every row):

    1. First choices are served by descending gate weight, then row index. A row whose
       first choice is full goes to its best expert (by gate weight) that still has
       room, in that same order; every row is therefore routed to exactly one expert
       in this phase, possibly one outside its top-k.
    2. The remaining top-k choices are served by rank (all second choices before third
       choices), then descending gate weight, then row index, into the room left; a
       choice that finds its expert full -- or that names the expert the row already
       has -- is dropped.
    3. Each row's kept gate weights are renormalised to sum to one.

    Parameters
    ----------
    gates : ndarray of shape (n_samples, n_experts)
        Gate routing weights.
    top_k : int
        Experts per row.
    capacity_factor : float, optional
        Capacity relative to a perfectly balanced batch; ``None`` means unlimited.

    Returns
    -------
    ndarray of shape (n_samples, n_experts)
        Rows sum to one; experts a row is not routed to have weight 0.

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.ensemble._moe import route
    >>> route(np.array([[0.5, 0.3, 0.2]]), top_k=2)
    array([[0.625, 0.375, 0.   ]])
    """
    n, n_experts = gates.shape
    top_k = min(top_k, n_experts)
    order = np.argsort(-gates, axis=1, kind="stable")[:, :top_k]
    keep = np.ones(order.shape, dtype=bool)
    if capacity_factor is not None and n:
        capacity = max(math.ceil(capacity_factor * top_k * n / n_experts), math.ceil(n / n_experts))
        order, keep = _apply_capacity(gates, order, capacity)
    chosen = np.where(keep, np.take_along_axis(gates, order, axis=1), 0.0)
    chosen /= chosen.sum(axis=1, keepdims=True)
    weights = np.zeros_like(gates, dtype=np.float64)
    rows = np.arange(n)
    for rank in range(top_k):
        weights[rows, order[:, rank]] += chosen[:, rank]
    return weights


class _Run(NamedTuple):
    """One start's fitted mixture: its EM loss curve ranks it among the ``n_init`` starts."""

    experts: list
    gate: SoftmaxGating
    losses: list[float]
    fitted: dict[str, Any]
    joint: np.ndarray  # the last E-step's log g[n, k] + log p_k(y[n] | X[n])


def _seed(expert: Any, seed: int) -> Any:
    """Give every unset ``random_state`` of ``expert`` (and of its parts) a seed drawn from the mixture's."""
    unset = {k: seed for k, v in expert.get_params(deep=True).items() if k.endswith("random_state") and v is None}
    return expert.set_params(**unset) if unset else expert


class _BaseMixtureOfExperts(BaseEstimator):
    """Shared parameters, EM training and routing of the two mixtures."""

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "experts": [list, None],
        "n_experts": [Interval(Integral, 1, None, closed="left")],
        "base_estimator": [HasMethods(["fit", "predict"]), None],
        "gating": [SoftmaxGating, None],
        "top_k": [Interval(Integral, 1, None, closed="left")],
        "capacity_factor": [Interval(Real, 0, None, closed="neither"), None],
        "load_balance_weight": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "refine_iter": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        experts: list | None = None,
        *,
        n_experts: int = 4,
        base_estimator: Any = None,
        gating: SoftmaxGating | None = None,
        top_k: int = 1,
        capacity_factor: float | None = None,
        load_balance_weight: float = 0.0,
        max_iter: int = 100,
        tol: float = 1e-3,
        n_init: int = 3,
        refine_iter: int = 2,
        random_state: Any = None,
    ):
        self.experts = experts
        self.n_experts = n_experts
        self.base_estimator = base_estimator
        self.gating = gating
        self.top_k = top_k
        self.capacity_factor = capacity_factor
        self.load_balance_weight = load_balance_weight
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.refine_iter = refine_iter
        self.random_state = random_state

    # -- what the two mixtures define ---------------------------------------------

    def _default_expert(self) -> Any:
        raise NotImplementedError

    def _validate_target(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validated X and the target the experts are fitted on."""
        raise NotImplementedError

    def _log_likelihood(
        self, experts: list, X: np.ndarray, target: np.ndarray, resp: np.ndarray
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """log p(y_i | x_i, expert k) of shape (n, K), and fitted attributes of the M-step."""
        raise NotImplementedError

    def _costs(self, experts: list, X: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Loss of each row under each expert alone, shape (n, K): what top-1 routing pays."""
        raise NotImplementedError

    # -- training ---------------------------------------------------------------------

    def _prototypes(self) -> list:
        if self.experts is None:
            base = self.base_estimator if self.base_estimator is not None else self._default_expert()
            return [base] * self.n_experts
        if self.base_estimator is not None:
            raise ValueError("give either experts or base_estimator (with n_experts), not both")
        if not self.experts:
            raise ValueError("experts must be a non-empty list of estimators")
        for i, expert in enumerate(self.experts):
            if not (hasattr(expert, "fit") and hasattr(expert, "predict")):
                raise TypeError(f"experts[{i}] must be an estimator with fit and predict, got {type(expert).__name__}")
        return list(self.experts)

    def _fit_expert(self, expert: Any, X: np.ndarray, target: np.ndarray, resp: np.ndarray, k: int) -> Any:
        """Fit ``expert`` (a seeded clone, refitted in place) as expert ``k`` of ``resp``."""
        if has_fit_parameter(expert, "sample_weight"):
            return expert.fit(X, target, sample_weight=np.maximum(resp[:, k], _MIN_WEIGHT))
        # No sample_weight: the rows the expert is most responsible for; if there are
        # none, its ceil(n / K) most responsible rows.
        rows = np.flatnonzero(resp.argmax(axis=1) == k)
        if rows.size == 0:
            rows = np.argsort(-resp[:, k], kind="stable")[: math.ceil(X.shape[0] / resp.shape[1])]
        return expert.fit(X[rows], target[rows])

    def _clustered(self, X: np.ndarray, target: np.ndarray, start: int) -> np.ndarray:
        """What the KMeans of start ``start`` clusters: ``X``."""
        return X

    def _initial_responsibilities(
        self, X: np.ndarray, target: np.ndarray, n_experts: int, rng: np.random.RandomState, start: int
    ) -> np.ndarray:
        resp = np.zeros((X.shape[0], n_experts))
        if n_experts == 1:
            resp[:, 0] = 1.0
            return resp
        seed = rng.randint(np.iinfo(np.int32).max)
        clustered = self._clustered(X, target, start)
        labels = KMeans(n_clusters=n_experts, n_init=1, random_state=seed).fit(clustered).labels_
        resp[np.arange(X.shape[0]), labels] = 1.0
        return resp

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: Any, y: Any) -> _BaseMixtureOfExperts:
        """Fit the experts and the gate: EM, then (top-1) the refinement, from ``n_init`` starts.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self

        Notes
        -----
        BLAS runs on one thread during fit: EM refits every expert on each iteration,
        and on such repeated solves BLAS threads cost more in hand-offs than they save.

        Examples
        --------
        >>> from sklearn.datasets import load_diabetes
        >>> from aprender.ensemble import MixtureOfExpertsRegressor
        >>> X, y = load_diabetes(return_X_y=True)
        >>> moe = MixtureOfExpertsRegressor(n_experts=2, tol=1e-2, random_state=0).fit(X, y)
        >>> moe.n_iter_ == len(moe.loss_curve_)
        True
        """
        X, target = self._validate_target(X, y)
        prototypes = self._prototypes()
        n_experts = len(prototypes)
        if self.top_k > n_experts:
            raise ValueError(f"top_k={self.top_k} exceeds the number of experts ({n_experts})")
        template = clone(self.gating) if self.gating is not None else SoftmaxGating()
        template._validate_params()
        rng = check_random_state(self.random_state)
        best = None
        with _single_threaded():
            for start in range(self.n_init):
                run = self._fit_from_start(X, target, prototypes, clone(template), rng, start)
                if best is None or run.losses[-1] < best.losses[-1]:
                    best = run
            best = self._refine(X, target, best)
        losses = best.losses
        self.converged_ = len(losses) > 1 and losses[-2] - losses[-1] < self.tol
        if not self.converged_ and self.max_iter > 1:
            warn(
                f"{type(self).__name__}: EM did not converge in {self.max_iter} iterations "
                f"(last improvement {losses[-2] - losses[-1]:.3g} >= tol={self.tol}); increase max_iter or tol",
                ConvergenceWarning,
            )
        self.experts_ = best.experts
        self.gating_ = best.gate
        self.n_iter_ = len(losses)
        self.loss_curve_ = losses
        for name, value in best.fitted.items():
            setattr(self, name, value)
        return self

    def _fit_from_start(
        self, X: np.ndarray, target: np.ndarray, prototypes: list, gate: SoftmaxGating, rng: np.random.RandomState,
        start: int,
    ) -> _Run:
        """EM from KMeans start number ``start``; ``gate`` is fitted in place."""
        resp = self._initial_responsibilities(X, target, len(prototypes), rng, start)
        seeds = rng.randint(np.iinfo(np.int32).max, size=len(prototypes))
        # cloned once per start: every M-step refits them, and cloning cost more than
        # fitting a linear expert
        experts = [_seed(clone(p), seed) for p, seed in zip(prototypes, seeds, strict=True)]
        losses, fitted, joint = self._expectation_maximisation(X, target, experts, gate, resp)
        return _Run(experts, gate, losses, fitted, joint)

    def _refine(self, X: np.ndarray, target: np.ndarray, run: _Run) -> _Run:
        """The top-1 refinement of an EM run (see ``refine_iter``); its experts and gate are refitted in place."""
        n_experts = len(run.experts)
        if self.top_k > 1 or self.refine_iter == 0 or n_experts == 1 or self.load_balance_weight > 0:
            # the refinement draws the boundaries of least routed loss, which is not what
            # a load-balancing term asks for
            return run
        experts, gate, fitted, joint = run.experts, run.gate, run.fitted, run.joint
        for i in range(self.refine_iter):
            labels = np.eye(n_experts)[joint.argmax(axis=1)]
            # each expert fitted on its labelled rows: a row the gate will misroute
            # would pull the expert of its route towards another regime's law
            with config_context(**_TRUSTED):
                for k, expert in enumerate(experts):
                    self._fit_expert(expert, X, target, labels, k)
            log_lik, fitted = self._log_likelihood(experts, X, target, labels)
            # An "auto" penalty is cross-validated in the last round, on the final
            # labels; the rounds before move the labels with EM's penalty, cheaply.
            alpha = _EM_ALPHA if gate.alpha == "auto" and i < self.refine_iter - 1 else None
            gate._fit_responsibilities(
                X, labels, costs=self._costs(experts, X, target), alpha=alpha, warm=i > 0, check_convergence=True
            )
            joint = gate.log_routing_weights(X) + log_lik
        return run._replace(fitted=fitted, joint=joint)

    def _expectation_maximisation(
        self, X: np.ndarray, target: np.ndarray, experts: list, gate: SoftmaxGating, resp: np.ndarray
    ) -> tuple[list[float], dict[str, Any], np.ndarray]:
        """Run EM from the responsibilities ``resp``; ``experts`` and ``gate`` are fitted in place.

        Returns the loss after each iteration, the M-step's attributes and the last
        E-step's log joint ``log g[n, k] + log p_k(y[n] | X[n])``. With ``alpha="auto"``
        the gate takes :data:`_EM_ALPHA` here: cross-validating every M-step would cost
        more than the rest of EM.
        """
        n_experts = len(experts)
        alpha = _EM_ALPHA if gate.alpha == "auto" else None
        usage = resp.mean(axis=0)
        losses: list[float] = []
        for iteration in range(self.max_iter):
            with config_context(**_TRUSTED if iteration > 0 else {}):
                for k, expert in enumerate(experts):
                    self._fit_expert(expert, X, target, resp, k)
            balance = self.load_balance_weight * n_experts * usage if self.load_balance_weight > 0 else None
            gate._fit_responsibilities(
                X, resp, balance=balance, warm=iteration > 0, alpha=alpha, max_iter=min(_EM_GATE_ITER, gate.max_iter)
            )
            log_gate = gate.log_routing_weights(X)
            log_lik, fitted = self._log_likelihood(experts, X, target, resp)
            joint = log_gate + log_lik
            log_evidence = logsumexp(joint, axis=1)
            resp = np.exp(joint - log_evidence[:, None])
            gates = np.exp(log_gate)
            usage = (route(gates, self.top_k) > 0).mean(axis=0)
            balance_loss = n_experts * float(usage @ gates.mean(axis=0))
            losses.append(float(-log_evidence.mean() + self.load_balance_weight * balance_loss))
            if len(losses) > 1 and losses[-2] - losses[-1] < self.tol:
                break
        return losses, fitted, joint

    # -- inference -------------------------------------------------------------------

    def _routed(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X, route(self.gating_.routing_weights(X), self.top_k, self.capacity_factor)

    def routing_weights(self, X: Any) -> np.ndarray:
        """The weight of each expert in each row's output (top-k, renormalised, capacity applied).

        The gate's full softmax, before top-k, is ``gating_.routing_weights(X)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_experts)
            Rows sum to one; zero for the experts a row is not routed to.

        Examples
        --------
        >>> import numpy as np
        >>> from aprender.ensemble import MixtureOfExpertsRegressor
        >>> X = np.linspace(-2, 2, 40).reshape(-1, 1)
        >>> moe = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, np.abs(X).ravel())
        >>> moe.routing_weights([[-1.5], [1.5]]).round(6).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        check_is_fitted(self)
        return self._routed(X)[1]

    def expert_usage(self, X: Any) -> np.ndarray:
        """Fraction of the rows of ``X`` routed to each expert.

        A row counts for every expert it is routed to, so the fractions sum to
        ``top_k`` (less when ``capacity_factor`` dropped some choices).

        Returns
        -------
        ndarray of shape (n_experts,)

        Examples
        --------
        >>> import numpy as np
        >>> from aprender.ensemble import MixtureOfExpertsRegressor
        >>> X = np.linspace(-2, 2, 40).reshape(-1, 1)
        >>> moe = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, np.abs(X).ravel())
        >>> moe.expert_usage(X)
        array([0.5, 0.5])
        """
        check_is_fitted(self)
        return (self.routing_weights(X) > 0).mean(axis=0)

    def load_balance_loss(self, X: Any) -> float:
        """Switch-Transformer load-balancing loss ``n_experts * sum_i f_i * P_i`` on ``X``.

        ``f_i`` is :meth:`expert_usage` and ``P_i`` the mean gate probability of expert
        ``i`` (the full softmax). With ``top_k=1`` it is 1.0 when routing is perfectly
        balanced and ``n_experts`` when one expert takes every row.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from aprender.ensemble import MixtureOfExpertsRegressor
        >>> X = np.linspace(-2, 2, 40).reshape(-1, 1)
        >>> moe = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, np.abs(X).ravel())
        >>> round(moe.load_balance_loss(X), 2)
        1.0
        """
        check_is_fitted(self)
        X, weights = self._routed(X)
        usage = (weights > 0).mean(axis=0)
        return float(len(self.experts_) * (usage @ self.gating_.routing_weights(X).mean(axis=0)))


class MixtureOfExpertsRegressor(SerializableMixin, RegressorMixin, _BaseMixtureOfExperts):
    """Mixture of experts for regression: a softmax gate routes each row to its top-k experts.

    The prediction is the sum of the routed experts' predictions weighted by their
    renormalised gate weights. Training is EM with a Gaussian likelihood per expert
    (see the module docstring and docs/schema/moe.md).

    Parameters
    ----------
    experts : list of estimators, optional
        Unfitted regressors, one per expert (cloned by fit). When given,
        ``n_experts`` is ignored and ``base_estimator`` must be None.
    n_experts : int, default=4
        Number of experts built from ``base_estimator`` when ``experts`` is None.
    base_estimator : estimator, optional
        Template of every expert; default :class:`~aprender.linear_model.LinearRegression`.
    gating : SoftmaxGating, optional
        The gate (cloned by fit); default ``SoftmaxGating()``, whose ``alpha="auto"``
        takes 1e-4 in the EM steps and is cross-validated in the refinement (the
        held-out loss of the routed prediction over 1e-2 .. 1e-8; the choice is
        ``gating_.alpha_``, the held-out losses ``gating_.cv_losses_``). A numeric
        ``alpha`` is used throughout.
    top_k : int, default=1
        Experts each row is routed to; at most the number of experts.
    capacity_factor : float, optional
        Limit each expert to ``max(ceil(capacity_factor * top_k * n / n_experts),
        ceil(n / n_experts))`` of the ``n`` rows of one inference call. Overflowing
        first choices go to the row's best expert with room; overflowing later
        choices are dropped and the kept weights renormalised (:func:`route` states
        the exact order). Predictions then depend on the batch. ``None``: unlimited.
        Applies at inference only.
    load_balance_weight : float, default=0.0
        Weight of the Switch-Transformer load-balancing loss added to the gate's
        objective in each M-step (usage held at its value from the previous step).
    max_iter : int, default=100
        Most EM iterations.
    tol : float, default=1e-3
        Stop when the training loss (mean negative log-likelihood plus the weighted
        load-balancing loss) improves by less than ``tol``.
    n_init : int, default=3
        EM runs from different KMeans initialisations (seeds drawn from
        ``random_state``): the first clusters ``X``, the others ``X`` and ``y`` (each
        column standardised), which follows the regimes of ``y`` more often. The run of
        lowest final EM loss is refined and kept.
    refine_iter : int, default=2
        With ``top_k=1`` (and no load balancing), rounds of refinement after EM: every
        row is labelled with its most probable expert (gate prior times likelihood),
        each expert is refitted on its labelled rows, and the gate is refitted to the
        labels (an ``alpha="auto"`` gate takes 1e-4 in the rounds before the last and
        cross-validates its penalty on the held-out routed loss in the last). EM's
        gate, fitted to soft responsibilities, blurs the boundaries top-1 routing
        depends on; the refined gate draws them sharply. 0 keeps the EM result.
        Skipped when ``top_k > 1`` and when ``load_balance_weight > 0`` (the refinement
        places the boundaries where the routed loss is least, whatever the balance).
    random_state : int, RandomState instance or None, default=None
        Seeds the KMeans initialisations and unset ``random_state`` of the experts; a
        given seed gives the same model.

    Attributes
    ----------
    experts_ : list of estimators
        The fitted experts.
    gating_ : SoftmaxGating
        The fitted gate.
    noise_variance_ : ndarray of shape (n_experts,)
        Each expert's Gaussian noise variance from the last M-step (of the refinement,
        when it ran: the mean squared residual on the expert's labelled rows).
    n_iter_ : int
        EM iterations of the kept run.
    loss_curve_ : list of float
        Training loss after each EM iteration of the kept run.
    converged_ : bool
        Whether the kept run's EM loss improvement fell below ``tol`` before ``max_iter``.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` had string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.ensemble import MixtureOfExpertsRegressor
    >>> X = np.linspace(-2, 2, 200).reshape(-1, 1)
    >>> y = np.abs(X).ravel()
    >>> moe = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, y)
    >>> bool(moe.score(X, y) > 0.99)
    True
    >>> moe.expert_usage(X)
    array([0.5, 0.5])
    """

    def _default_expert(self) -> Any:
        from aprender.linear_model import LinearRegression

        return LinearRegression()

    def _validate_target(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        return validate_data(self, X, y, dtype=np.float64, y_numeric=True)

    def _clustered(self, X: np.ndarray, target: np.ndarray, start: int) -> np.ndarray:
        """``X`` for the first start; then ``X`` and ``y``, each column standardised.

        Regimes are where ``y`` follows one law: KMeans on ``X`` alone cuts the space
        into blobs that may straddle them, and EM can keep two regimes in one expert.
        With ``y`` as a coordinate the clusters follow the law more often (on 8
        features, one problem's EM went from 0.87 of the oracle's R^2 to 0.97).
        """
        if start == 0:
            return X
        Z = np.column_stack([X, target])
        spread = Z.std(axis=0)
        return (Z - Z.mean(axis=0)) / np.where(spread > 0, spread, 1.0)

    def _costs(self, experts: list, X: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Squared error of each expert on each row."""
        pred = np.column_stack([np.asarray(e.predict(X), dtype=np.float64).reshape(-1) for e in experts])
        return (target[:, None] - pred) ** 2

    def _log_likelihood(
        self, experts: list, X: np.ndarray, target: np.ndarray, resp: np.ndarray
    ) -> tuple[np.ndarray, dict[str, Any]]:
        sq = self._costs(experts, X, target)
        spread = np.var(target)
        floor = _VAR_FLOOR * spread if spread > 0 else 1.0
        mass = resp.sum(axis=0)
        variance = np.maximum(np.divide((resp * sq).sum(axis=0), mass, out=np.zeros_like(mass), where=mass > 0), floor)
        return -0.5 * (np.log(2 * np.pi * variance) + sq / variance), {"noise_variance_": variance}

    def predict(self, X: Any) -> np.ndarray:
        """Weighted sum of the routed experts' predictions.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> import numpy as np
        >>> from aprender.ensemble import MixtureOfExpertsRegressor
        >>> X = np.linspace(-2, 2, 40).reshape(-1, 1)
        >>> moe = MixtureOfExpertsRegressor(n_experts=2, random_state=0).fit(X, np.abs(X).ravel())
        >>> moe.predict([[-1.5], [1.5]]).round(6).tolist()
        [1.5, 1.5]
        """
        check_is_fitted(self)
        X, weights = self._routed(X)
        out = np.zeros(X.shape[0])
        for k, expert in enumerate(self.experts_):
            rows = np.flatnonzero(weights[:, k])
            if rows.size:
                out[rows] += weights[rows, k] * np.asarray(expert.predict(X[rows]), dtype=np.float64).reshape(-1)
        return out


class MixtureOfExpertsClassifier(SerializableMixin, ClassifierMixin, _BaseMixtureOfExperts):
    """Mixture of experts for classification: routed experts' probabilities, gate-weighted.

    ``predict_proba`` is the sum of the routed experts' ``predict_proba`` (aligned to
    ``classes_``; a class an expert never saw has probability 0 for it) weighted by
    the renormalised gate weights. Experts are fitted on the class indices
    ``0 .. n_classes-1``. Training is EM with the experts' probability of the true
    class as likelihood.

    Parameters
    ----------
    experts : list of estimators, optional
        Unfitted classifiers with ``predict_proba``, one per expert (cloned by fit).
        When given, ``n_experts`` is ignored and ``base_estimator`` must be None.
    n_experts : int, default=4
        Number of experts built from ``base_estimator`` when ``experts`` is None.
    base_estimator : estimator, optional
        Template of every expert; default
        :class:`~aprender.linear_model.LogisticRegression` with ``max_iter=1000``.
    gating, top_k, capacity_factor, load_balance_weight, max_iter, tol, n_init, refine_iter, random_state
        As in :class:`MixtureOfExpertsRegressor`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    experts_ : list of estimators
        The fitted experts (their ``classes_`` are indices into ``classes_``).
    gating_ : SoftmaxGating
        The fitted gate.
    n_iter_ : int
        EM iterations of the kept run.
    loss_curve_ : list of float
        Training loss after each EM iteration of the kept run.
    converged_ : bool
        Whether the kept run's EM loss improvement fell below ``tol`` before ``max_iter``.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` had string column names.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from aprender.ensemble import MixtureOfExpertsClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MixtureOfExpertsClassifier(n_experts=2, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:2]).shape
    (2, 3)
    """

    def _default_expert(self) -> Any:
        from aprender.linear_model import LogisticRegression

        return LogisticRegression(max_iter=1000)

    def _validate_target(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, encoded = np.unique(y, return_inverse=True)
        if self.classes_.shape[0] < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes; got one class")
        return X, encoded.astype(np.int64)

    def _aligned_proba(self, expert: Any, X: np.ndarray) -> np.ndarray:
        proba = np.zeros((X.shape[0], self.classes_.shape[0]))
        proba[:, expert.classes_] = expert.predict_proba(X)
        return proba

    def _log_likelihood(
        self, experts: list, X: np.ndarray, target: np.ndarray, resp: np.ndarray
    ) -> tuple[np.ndarray, dict[str, Any]]:
        rows = np.arange(X.shape[0])
        columns = []
        for i, expert in enumerate(experts):
            if not hasattr(expert, "predict_proba"):
                raise TypeError(f"expert {i} ({type(expert).__name__}) has no predict_proba")
            columns.append(self._aligned_proba(expert, X)[rows, target])
        return np.log(np.maximum(np.column_stack(columns), _MIN_PROB)), {}

    def _costs(self, experts: list, X: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Log loss of each expert on each row (its probability of the true class floored at 1e-12)."""
        return -self._log_likelihood(experts, X, target, np.empty(0))[0]

    def predict_proba(self, X: Any) -> np.ndarray:
        """Gate-weighted sum of the routed experts' class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from aprender.ensemble import MixtureOfExpertsClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = MixtureOfExpertsClassifier(n_experts=2, tol=1e-2, random_state=0).fit(X, y)
        >>> clf.predict_proba(X[:1]).sum().round(12)
        np.float64(1.0)
        """
        check_is_fitted(self)
        X, weights = self._routed(X)
        proba = np.zeros((X.shape[0], self.classes_.shape[0]))
        for k, expert in enumerate(self.experts_):
            rows = np.flatnonzero(weights[:, k])
            if rows.size:
                proba[np.ix_(rows, expert.classes_)] += weights[rows, k, None] * expert.predict_proba(X[rows])
        return proba

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`predict_proba` (``-inf`` where it is 0).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from aprender.ensemble import MixtureOfExpertsClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = MixtureOfExpertsClassifier(n_experts=2, tol=1e-2, random_state=0).fit(X, y)
        >>> bool((clf.predict_log_proba(X[:1]) <= 0).all())
        True
        """
        check_is_fitted(self)
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The class of highest :meth:`predict_proba` (the first on ties).

        Returns
        -------
        ndarray of shape (n_samples,)

        Examples
        --------
        >>> from sklearn.datasets import load_iris
        >>> from aprender.ensemble import MixtureOfExpertsClassifier
        >>> X, y = load_iris(return_X_y=True)
        >>> clf = MixtureOfExpertsClassifier(n_experts=2, tol=1e-2, random_state=0).fit(X, y)
        >>> clf.predict(X[[0, 149]])
        array([0, 2])
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


#: The seed's name: a mixture of experts for regression.
MixtureOfExperts = MixtureOfExpertsRegressor
