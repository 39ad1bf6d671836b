"""The parameters, EM training and routing the two mixtures of experts share.

The training (expectation-maximisation from KMeans starts, then a top-1 refinement) is
described in ``aprender.ensemble._moe``'s docstring and in docs/schema/moe.md.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy.special import logsumexp
from sklearn import config_context
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, has_fit_parameter, validate_data

from aprender._warn import warn
from aprender.ensemble._gating import SoftmaxGating, _single_threaded
from aprender.ensemble._routing import route

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
