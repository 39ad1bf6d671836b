"""Exact soft-target fits for gradient boosting and logistic students of :func:`aprender.distill` (private).

* :func:`soft_boosting` lets a HistGradientBoostingClassifier learn soft targets with
  one row per transfer row. Its log-loss boosting fits each tree to the gradient and
  hessian of the cross-entropy in the raw scores ``z``: ``softmax(z) - onehot(y)`` and
  ``p (1 - p)``. Against soft targets ``q`` the gradient is ``softmax(z) - q`` and the
  hessian the same; :class:`_SoftMultinomialLoss` and :class:`_SoftBinomialLoss`
  compute exactly that, and the estimator takes them through its public ``loss``
  parameter (which accepts a scikit-learn loss object) for the duration of ``fit``.
* :func:`logistic_start` starts a LogisticRegression's own fit on the expanded rows
  from the minimiser of the same objective, solved on the unexpanded soft targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy import optimize
from scipy.special import expit, log_softmax, softmax
from sklearn._loss.loss import HalfBinomialLoss, HalfMultinomialLoss

__all__ = ["boosts_soft_targets", "is_logistic", "logistic_objective", "logistic_start", "soft_boosting",
           "starts_logistic"]


class _SoftMultinomialLoss(HalfMultinomialLoss):
    """Multinomial log-loss against a fixed matrix of soft targets, one row per training row.

    ``y_true`` (the argmax labels the estimator encoded) is ignored: the targets are
    ``self.targets``, aligned with the rows ``fit`` receives (no early-stopping split).
    """

    def __init__(self, targets: np.ndarray) -> None:
        super().__init__(n_classes=targets.shape[1])
        self.targets = targets

    def _rows(self, y_true: np.ndarray) -> np.ndarray:
        if len(y_true) != len(self.targets):  # a split or subsample would misalign the rows
            raise RuntimeError(f"soft targets cover {len(self.targets)} rows, the fit passed {len(y_true)}")
        return self.targets

    def fit_intercept_only(self, y_true: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
        p = np.clip(np.average(self._rows(y_true), weights=sample_weight, axis=0), 1e-15, 1.0)
        return np.log(p) - np.mean(np.log(p))

    def gradient_hessian(self, y_true: np.ndarray, raw_prediction: np.ndarray, sample_weight: np.ndarray | None = None,
                         gradient_out: np.ndarray | None = None, hessian_out: np.ndarray | None = None,
                         n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        q = self._rows(y_true)
        p = softmax(raw_prediction, axis=1)
        w = 1.0 if sample_weight is None else sample_weight[:, None]
        gradient_out = np.empty_like(raw_prediction) if gradient_out is None else gradient_out
        hessian_out = np.empty_like(raw_prediction) if hessian_out is None else hessian_out
        gradient_out[:] = w * (p - q)
        hessian_out[:] = w * p * (1.0 - p)
        return gradient_out, hessian_out


class _SoftBinomialLoss(HalfBinomialLoss):
    """Binary log-loss against fixed soft targets (the probability of the second class)."""

    def __init__(self, targets: np.ndarray) -> None:
        super().__init__()
        self.targets = targets

    _rows = _SoftMultinomialLoss._rows

    def fit_intercept_only(self, y_true: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
        p = np.clip(np.average(self._rows(y_true), weights=sample_weight), 1e-15, 1 - 1e-15)
        return np.log(p / (1.0 - p))

    def gradient_hessian(self, y_true: np.ndarray, raw_prediction: np.ndarray, sample_weight: np.ndarray | None = None,
                         gradient_out: np.ndarray | None = None, hessian_out: np.ndarray | None = None,
                         n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        q = self._rows(y_true)
        # The boosting loop passes (n, 1) views for its single tree per iteration.
        raw = raw_prediction.reshape(-1)
        gradient_out = np.empty_like(raw) if gradient_out is None else gradient_out.reshape(-1)
        hessian_out = np.empty_like(raw) if hessian_out is None else hessian_out.reshape(-1)
        p = expit(raw)
        w = 1.0 if sample_weight is None else sample_weight
        gradient_out[:] = w * (p - q)
        hessian_out[:] = w * p * (1.0 - p)
        return gradient_out, hessian_out


def boosts_soft_targets(model: Any) -> bool:
    """Whether :func:`soft_boosting` applies: a HistGradientBoostingClassifier with log-loss and no class weights.

    Class weights would weigh each row by its argmax label, which is not the soft-target objective.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    return isinstance(model, HistGradientBoostingClassifier) and model.loss == "log_loss" and model.class_weight is None


@contextmanager
def soft_boosting(model: Any, targets: np.ndarray) -> Iterator[None]:
    """While active, ``model.fit(X, y)`` of a HistGradientBoostingClassifier boosts on ``targets``.

    ``targets`` holds one row of class probabilities per row of ``X``, columns in the
    order of the classes; ``y`` must hold every class (it sets ``classes_``) and is
    otherwise ignored. Early stopping is off for the fit: its validation split would
    separate the rows from their targets. Afterwards the parameters are the caller's
    again and the fitted loss is the standard one, so the model predicts, saves and
    refits like any other.
    """
    saved = {"loss": model.loss, "early_stopping": model.early_stopping}
    loss = _SoftBinomialLoss(targets[:, 1]) if targets.shape[1] == 2 else _SoftMultinomialLoss(targets)
    model.set_params(loss=loss, early_stopping=False)
    try:
        yield
    finally:
        model.set_params(**saved)
        if hasattr(model, "_loss"):
            model._loss = model._get_loss(sample_weight=None)


def is_logistic(model: Any) -> bool:
    """Whether ``model`` is a LogisticRegression, whose L2 penalty scales with ``1 / sum of sample weights``."""
    from sklearn.linear_model import LogisticRegression

    return isinstance(model, LogisticRegression)


def starts_logistic(model: Any) -> bool:
    """Whether :func:`logistic_start` applies: LogisticRegression, lbfgs, an L2 penalty or none, no class weights."""
    from sklearn.linear_model import LogisticRegression

    if not isinstance(model, LogisticRegression) or model.solver != "lbfgs" or model.class_weight is not None:
        return False
    # scikit-learn < 1.8 names the penalty; later ones read l1_ratio (0: L2) and C=inf for none.
    penalty = getattr(model, "penalty", "l2")
    l1_ratio = getattr(model, "l1_ratio", None)
    return penalty in ("l2", None, "deprecated") and l1_ratio in (None, 0, 0.0) and \
        getattr(model, "multi_class", "auto") in ("auto", "multinomial", "deprecated")


def _l2_strength(model: Any, n_rows: int) -> float:
    """The L2 strength of scikit-learn's lbfgs objective, ``1 / (C * sum of sample weights)``."""
    if getattr(model, "penalty", "l2") is None or np.isinf(model.C):
        return 0.0
    return 1.0 / (model.C * n_rows)


def _loss_gradient(X: np.ndarray, q: np.ndarray, l2: float, coef: np.ndarray,
                   intercept: np.ndarray | float) -> tuple[float, np.ndarray, np.ndarray]:
    """The soft-target objective at ``(coef, intercept)`` and its gradients in both.

    ``q`` holds the targets: the probability of the second class as one column for a
    binary problem (one logistic output), one column per class otherwise.
    """
    z = X @ coef.T + intercept
    if q.shape[1] == 1:
        loss = np.logaddexp(0.0, z) - q * z
        residual = expit(z) - q
    else:
        log_p = log_softmax(z, axis=1)
        loss = -np.sum(q * log_p, axis=1, keepdims=True)
        residual = np.exp(log_p) - q
    value = float(loss.mean() + 0.5 * l2 * np.sum(coef**2))
    return value, residual.T @ X / len(X) + l2 * coef, residual.mean(axis=0)


def _columns(targets: np.ndarray) -> np.ndarray:
    """The target columns the objective reads: the second class's alone for a binary problem."""
    return targets[:, 1:] if targets.shape[1] == 2 else targets


def logistic_objective(model: Any, X: np.ndarray, targets: np.ndarray, coef: np.ndarray,
                       intercept: np.ndarray, weight_sum: float) -> float:
    """LogisticRegression's lbfgs objective on soft targets: mean cross-entropy plus the L2 term.

    Equal to the objective of the expanded rows (one per class, weighted by ``q`` times
    ``weight_sum / len(X)``): the weights of one row sum to the same share of
    ``weight_sum``, so the weighted mean is the mean over rows, and the penalty's scale
    is ``1 / (C * weight_sum)``.
    """
    return _loss_gradient(X, _columns(targets), _l2_strength(model, weight_sum), coef, intercept)[0]


@contextmanager
def logistic_start(model: Any, X: np.ndarray, targets: np.ndarray, weight_sum: float) -> Iterator[None]:
    """While active, ``model.fit`` (on the expanded rows) starts from the soft-target minimiser.

    ``weight_sum`` is the sum of the expanded rows' sample weights, which sets the L2
    term. The objective of :func:`logistic_objective` is minimised on the ``n`` transfer rows
    with the options scikit-learn's lbfgs uses (``max_iter``, ``tol``, ``maxls=50``),
    where the expanded problem has a row per (row, class) of non-zero target: up to
    ``n_classes`` times the rows per function evaluation. The result becomes the
    starting point of the model's own fit through its public ``warm_start``: that fit
    minimises the same objective, finds the gradient already within ``tol`` and stops
    after few or no iterations, so the fitted attributes are scikit-learn's own.
    """
    d = X.shape[1]
    q = _columns(targets)
    k = q.shape[1]
    intercept = model.fit_intercept
    l2 = _l2_strength(model, weight_sum)

    def loss_gradient(w: np.ndarray) -> tuple[float, np.ndarray]:
        W = w.reshape(k, d + intercept)
        value, grad_coef, grad_intercept = _loss_gradient(X, q, l2, W[:, :d], W[:, d] if intercept else 0.0)
        grad = np.empty_like(W)
        grad[:, :d] = grad_coef
        if intercept:
            grad[:, d] = grad_intercept
        return value, grad.ravel()

    result = optimize.minimize(loss_gradient, np.zeros(k * (d + intercept)), method="L-BFGS-B", jac=True,
                               options={"maxiter": model.max_iter, "maxls": 50, "gtol": model.tol,
                                        "ftol": 64 * np.finfo(float).eps})
    W = result.x.reshape(k, d + intercept)
    warm = model.warm_start
    model.coef_ = W[:, :d].copy()
    model.intercept_ = W[:, d].copy() if intercept else np.zeros(k)
    model.warm_start = True
    try:
        yield
    finally:
        model.warm_start = warm
