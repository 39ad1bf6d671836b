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

from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from aprender.base import SerializableMixin
from aprender.ensemble._moe_base import _MIN_PROB, _VAR_FLOOR, _BaseMixtureOfExperts
from aprender.ensemble._routing import route

__all__ = ["MixtureOfExperts", "MixtureOfExpertsClassifier", "MixtureOfExpertsRegressor", "route"]


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


#: The name the Rust aprender library gives its (regression) mixture of experts, so that code
#: written against it reads the same here.
MixtureOfExperts = MixtureOfExpertsRegressor
