"""SoftmaxGating: the linear softmax gate that routes rows to experts.

The gate is a multinomial logistic model: ``softmax((X @ weights_ + bias_) / temperature)``.
It is fitted to hard labels (``fit``) or to soft targets such as the responsibilities
of an EM step (``fit_soft``) by minimising the weighted cross-entropy plus an L2
penalty with scipy's L-BFGS -- the optimisation scikit-learn's LogisticRegression uses,
extended to soft targets and to the Switch-Transformer load-balancing term.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from aprender.base import SerializableMixin

__all__ = ["SoftmaxGating"]

_threadpools: list[ThreadpoolController] = []


def _single_threaded_blas() -> Any:
    """A context with BLAS limited to one thread, for many small sequential solves.

    The gate's L-BFGS iterations and the mixture's EM (every expert refitted on every
    iteration) run many small vector and matrix operations one after the other: BLAS
    threads gain nothing there, while their hand-offs dominate when other processes
    compete for the cores (measured: a LogisticRegression expert fit 20x slower, an
    L-BFGS iteration milliseconds instead of microseconds). scikit-learn's KMeans limits
    BLAS the same way around its Lloyd iterations. The controller is built once:
    building one scans the loaded libraries.
    """
    if not _threadpools:
        _threadpools.append(ThreadpoolController())
    return _threadpools[0].limit(limits=1, user_api="blas")


def _objective(
    theta: np.ndarray, X: np.ndarray, targets: np.ndarray, weights: np.ndarray, alpha: float,
    balance: np.ndarray | None,
) -> tuple[float, np.ndarray]:
    """Loss and gradient of the gate at ``theta`` (weights then bias, flattened).

    loss = sum_i w_i CE(targets_i, p_i) + alpha/2 |W|^2 [+ sum_k balance_k mean_w(p_k)],
    with ``weights`` summing to one, so the data term is a weighted mean.
    """
    n_features, n_out = X.shape[1], targets.shape[1]
    W = theta[: n_features * n_out].reshape(n_features, n_out)
    log_p = log_softmax(X @ W + theta[n_features * n_out :], axis=1)
    p = np.exp(log_p)
    loss = -weights @ (targets * log_p).sum(axis=1) + 0.5 * alpha * np.vdot(W, W)
    # d CE / d logits = p * sum_k(targets) - targets (targets need not sum to one)
    grad_z = weights[:, None] * (p * targets.sum(axis=1, keepdims=True) - targets)
    if balance is not None:
        loss += weights @ (p @ balance)
        grad_z += weights[:, None] * p * (balance - (p @ balance)[:, None])
    grad = np.concatenate([(X.T @ grad_z + alpha * W).ravel(), grad_z.sum(axis=0)])
    return float(loss), grad


class SoftmaxGating(SerializableMixin, ClassifierMixin, BaseEstimator):
    """Linear softmax gate: routing weights ``softmax((X @ weights_ + bias_) / temperature)``.

    Used by :class:`MixtureOfExpertsRegressor` / :class:`MixtureOfExpertsClassifier`
    to route rows to experts, and usable alone as a multinomial classifier whose
    classes are the experts. The logits are fitted at temperature 1; ``temperature``
    only rescales them when routing, so it sharpens (< 1) or flattens (> 1) the
    routing of a fitted gate without refitting.

    Parameters
    ----------
    temperature : float, default=1.0
        Divides the logits before the softmax.
    alpha : float, default=1e-4
        L2 penalty on ``weights_`` (the bias is not penalised). The data term is a
        weighted mean over rows, so ``alpha`` does not scale with the row count.
    max_iter : int, default=200
        Most L-BFGS iterations.
    tol : float, default=1e-6
        L-BFGS stops when every gradient component is below ``tol``.

    Attributes
    ----------
    weights_ : ndarray of shape (n_features, n_experts)
        Logit coefficients, one column per expert.
    bias_ : ndarray of shape (n_experts,)
        Logit offsets, centred to sum to zero (the softmax ignores a common shift).
    classes_ : ndarray of shape (n_experts,)
        Labels of the columns: expert indices ``0 .. n_experts-1`` after
        :meth:`fit_soft`, the sorted labels of ``y`` after :meth:`fit`.
    n_features_in_ : int
        Number of features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features, when ``X`` had string column names.
    n_iter_ : int
        L-BFGS iterations of the last fit.

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.ensemble import SoftmaxGating
    >>> X = np.array([[-2.0], [-1.0], [1.0], [2.0]])
    >>> gate = SoftmaxGating().fit(X, [0, 0, 1, 1])
    >>> gate.weights_.shape
    (1, 2)
    >>> gate.routing_weights([[-3.0], [3.0]]).argmax(axis=1)
    array([0, 1])
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, temperature: float = 1.0, *, alpha: float = 1e-4, max_iter: int = 200, tol: float = 1e-6):
        self.temperature = temperature
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> SoftmaxGating:
        """Fit the gate to hard labels: one softmax column per distinct label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            The expert (or class) of each row.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> SoftmaxGating().fit([[0.0], [1.0], [5.0]], ["a", "a", "b"]).classes_.tolist()
        ['a', 'b']
        """
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, encoded = np.unique(y, return_inverse=True)
        targets = np.zeros((X.shape[0], self.classes_.shape[0]))
        targets[np.arange(X.shape[0]), encoded] = 1.0
        return self._fit_targets(X, targets, sample_weight, warn=True)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_soft(self, X: Any, responsibilities: Any, sample_weight: Any = None) -> SoftmaxGating:
        """Fit the gate to soft targets: row ``i`` belongs to expert ``k`` with weight ``R[i, k]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        responsibilities : array-like of shape (n_samples, n_experts)
            Non-negative target weights, usually rows summing to one (an EM step's
            posterior over experts).
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        self

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> R = [[0.9, 0.1], [0.8, 0.2], [0.1, 0.9]]
        >>> SoftmaxGating().fit_soft([[0.0], [1.0], [5.0]], R).classes_.tolist()
        [0, 1]
        """
        X, targets = validate_data(self, X, responsibilities, dtype=np.float64, multi_output=True)
        if targets.ndim != 2 or targets.shape[1] < 1 or np.any(targets < 0):
            raise ValueError("responsibilities must be a non-negative array of shape (n_samples, n_experts)")
        self.classes_ = np.arange(targets.shape[1])
        return self._fit_targets(X, targets, sample_weight, warn=True)

    def _fit_responsibilities(
        self, X: np.ndarray, responsibilities: np.ndarray, *, balance: np.ndarray | None, warm: bool
    ) -> SoftmaxGating:
        """:meth:`fit_soft` on data the mixture already validated, with its load-balancing term."""
        self.n_features_in_ = X.shape[1]
        self.classes_ = np.arange(responsibilities.shape[1])
        return self._fit_targets(X, responsibilities, balance=balance, warm=warm)

    def _fit_targets(
        self,
        X: np.ndarray,
        targets: np.ndarray,
        sample_weight: Any = None,
        *,
        balance: np.ndarray | None = None,
        warm: bool = False,
        warn: bool = False,
    ) -> SoftmaxGating:
        """Minimise the gate objective on validated data (shared by fit, fit_soft and the MoE).

        ``balance`` is the per-expert load-balancing coefficient ``c_k`` of the term
        ``sum_k c_k * mean(p_k)``; ``warm`` starts from the current weights.
        """
        weights = _check_sample_weight(sample_weight, X, dtype=np.float64)
        total = weights.sum()
        weights = weights / total if total > 0 else np.full_like(weights, 1.0 / len(weights))
        n_features, n_out = X.shape[1], targets.shape[1]
        start = np.zeros(n_features * n_out + n_out)
        if warm and getattr(self, "weights_", None) is not None and self.weights_.shape == (n_features, n_out):
            start = np.concatenate([self.weights_.ravel(), self.bias_])
        with _single_threaded_blas():
            result = minimize(
                _objective, start, args=(X, targets, weights, float(self.alpha), balance), jac=True,
                method="L-BFGS-B",
                options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 64 * np.finfo(float).eps, "maxls": 50},
            )
        if warn and not result.success:
            warn(f"SoftmaxGating did not converge: {result.message}", ConvergenceWarning)
        self.weights_ = result.x[: n_features * n_out].reshape(n_features, n_out).copy()
        bias = result.x[n_features * n_out :]
        self.bias_ = bias - bias.mean()
        self.n_iter_ = int(result.nit)
        return self

    def _logits(self, X: Any) -> np.ndarray:
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X @ self.weights_ + self.bias_) / self.temperature

    def routing_weights(self, X: Any) -> np.ndarray:
        """Softmax routing weights of each row over the experts (rows sum to one).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_experts)

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> gate = SoftmaxGating().fit([[0.0], [1.0], [4.0], [5.0]], [0, 0, 1, 1])
        >>> gate.routing_weights([[0.0], [4.5]]).sum(axis=1).round(12).tolist()
        [1.0, 1.0]
        """
        check_is_fitted(self)
        return np.exp(self.log_routing_weights(X))

    def log_routing_weights(self, X: Any) -> np.ndarray:
        """Logarithm of :meth:`routing_weights`, computed stably from the logits.

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> gate = SoftmaxGating().fit([[0.0], [1.0], [4.0], [5.0]], [0, 0, 1, 1])
        >>> bool(gate.log_routing_weights([[0.0]])[0, 0] < 0)
        True
        """
        check_is_fitted(self)
        return log_softmax(self._logits(X), axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Same as :meth:`routing_weights` (the probability of each expert).

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> SoftmaxGating().fit([[0.0], [1.0]], [0, 1]).predict_proba([[0.5]]).shape
        (1, 2)
        """
        return self.routing_weights(X)

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Same as :meth:`log_routing_weights`.

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> SoftmaxGating().fit([[0.0], [1.0]], [0, 1]).predict_log_proba([[0.5]]).shape
        (1, 2)
        """
        return self.log_routing_weights(X)

    def predict(self, X: Any) -> np.ndarray:
        """The label of each row's highest-weighted expert (the first on ties).

        Examples
        --------
        >>> from aprender.ensemble import SoftmaxGating
        >>> SoftmaxGating().fit([[0.0], [1.0], [4.0], [5.0]], [0, 0, 1, 1]).predict([[0.2], [4.8]])
        array([0, 1])
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self._logits(X), axis=1)]
