"""The orchestration of :func:`aprender.distill`: its steps, in order (private; docs/distill.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from aprender.distillation import _fallback as fallbacks
from aprender.distillation import _progressive as progressive
from aprender.distillation import _transfer as transfer
from aprender.distillation._fit import fit_classifier, fit_regressor
from aprender.distillation._inputs import check_options, check_pair, load_teacher, split
from aprender.distillation._provenance import record, report
from aprender.exceptions import DistillationError

__all__ = ["distill"]


def distill(
    teachers: Any,
    student: Any,
    X: Any,
    y: Any = None,
    *,
    method: str = "standard",
    temperature: float = 0.5,
    alpha: float = 0.7,
    layer_map: str | None = None,
    transfer_size: int | str = "auto",
    validation_fraction: float = 0.2,
    random_state: int | None = 0,
    fallback: bool = True,
    progress: Callable[[str], None] | None = None,
    trusted: Any = None,
) -> Any:
    """Fit a clone of ``student`` to the teachers' outputs; return it with its ``provenance_``.

    Parameters
    ----------
    teachers : estimator, path, or sequence of them
        Fitted teachers, or files any aprender format can load (their sha256 is recorded).
    student : estimator
        An unfitted estimator of the same kind (classifier or regressor); it is
        cloned, not modified.
    X : array-like of shape (n_samples, n_features)
        Data around which the transfer set is built.
    y : array-like of shape (n_samples,), optional
        True targets: blended into the soft targets with weight ``1 - alpha``, and
        scored on the held-out rows for the report. Without ``y`` the student learns
        the teachers alone and nothing is held out.
    method : {"standard", "ensemble", "progressive"}, default="standard"
        ``standard``: one teacher's soft targets. ``ensemble``: the mean of several
        teachers' soft targets (or predictions). ``progressive``: MLP to MLP, the
        student's hidden layers first trained to reproduce the teacher's, following
        ``layer_map``, then the soft targets.
    temperature : float, default=0.5
        Classifiers learn ``softmax(log p / temperature)`` of each teacher's
        probabilities ``p`` (the teachers' logits up to a per-row constant). The
        default is below 1, which sharpens the targets, not the 3 common for neural
        teachers: a forest's probabilities are already averaged over its trees, and
        an MLP student fitted to sharper targets kept more of the teacher's accuracy
        in docs/distill.md's measurements (T=3 cost 3-5 points, T=1 closed less of
        the gap than 0.5).
    alpha : float, default=0.7
        Weight of the teachers against ``y`` on the labelled rows.
    layer_map : str, optional
        ``"student:teacher,..."`` hidden-layer pairs for ``progressive``, e.g.
        ``"0:0,1:2"``; default pairs layers at the same relative depth.
    transfer_size : int or "auto", default="auto"
        Rows of the transfer set: the training rows plus rows synthesized around
        them. ``"auto"``: ``10 * n_train`` clipped to [20000, 60000] (never
        fewer than the training rows).
    validation_fraction : float, default=0.2
        Share of the labelled rows held out (stratified for classifiers) while the
        candidates are fitted, for the fallback's choice and the report in
        ``provenance_["report"]``; the chosen procedure is then refitted on every
        row. 0 holds nothing out (one distillation, no report, no fallback).
    random_state : int or None, default=0
        Seeds the split, the transfer set and an unset ``random_state`` of the student.
    fallback : bool, default=True
        With held-out rows, also fit the same student on the hard labels of the
        training rows, and return the student fitted on the hard labels of all of
        ``X`` instead of the distilled one only if a one-sided paired test shows it is
        better at the 5% level (McNemar's exact test for classifiers, a paired t-test
        on squared errors for regressors). From 1,000 labelled rows up the test runs on
        the held-out rows; from 30 to 999 rows both candidates are cross-fitted
        (``round(1 / validation_fraction)`` folds, at most 10) and the test runs on
        their out-of-fold predictions of every row. ``provenance_["fallback"]``
        records the test, its p-value, the folds, both scores, which was kept and why.
    progress : callable, optional
        Called with the name of each phase as it starts (the CLI's progress bar).
    trusted : optional
        For teachers given as files: the functions (or hyperparameter names) beyond
        aprender's reviewed tables that the caller accepts, as :func:`aprender.load`
        takes them. Without it a teacher file that names any other function is refused
        with :class:`~aprender.exceptions.UntrustedFunctionError`.

    Returns
    -------
    estimator
        The fitted student, trained on every row (or, when ``fallback`` kept it, the
        student fitted on the hard labels). ``student.provenance_`` records the method, temperature,
        alpha, the teachers (class, classes, file and sha256), the final distillation
        loss (soft-target cross-entropy, or mean squared error for regressors), the
        transfer set's size, sha256 and synthesis, the held-out report and the
        fallback's choice.

    Raises
    ------
    DistillationError
        Unknown method, bad temperature or alpha, several teachers without
        ``method="ensemble"``, mixed classifiers and regressors, teachers with other
        classes, or ``progressive`` with a non-MLP teacher or student or a bad layer map.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> import aprender
    >>> from aprender.ensemble import RandomForestClassifier
    >>> from aprender.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> teacher = RandomForestClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> student = aprender.distill(teacher, LogisticRegression(max_iter=500), X, y, transfer_size=600)
    >>> student.provenance_["method"], student.provenance_["transfer_set"]["size"]
    ('standard', 600)
    """
    phase = progress or (lambda _name: None)
    loaded, classify, X = _checked_inputs(teachers, student, X, method, temperature, alpha, trusted)
    models = [model for model, _ in loaded]
    rng = check_random_state(random_state)
    X_train, y_train, X_held, y_held = split(X, y, models[0].classes_ if classify else None, validation_fraction, rng)
    base = _seeded_clone(student, rng)
    options = {"classify": classify, "method": method, "temperature": temperature, "alpha": alpha,
               "layer_map": layer_map, "transfer_size": transfer_size, "rng": rng, "phase": phase}
    held = X_held is not None and len(X_held) > 0
    choice: dict[str, Any] | None
    if fallback and held and fallbacks.MIN_ROWS <= len(y) < fallbacks.CROSS_FIT_BELOW:
        n_folds = min(10, max(2, round(1 / validation_fraction)))
        (candidate, fit, pairs), hard, choice, X_held, y_held = _cross_fit(
            models, base, X, np.asarray(y), n_folds, options)
    else:
        candidate, fit, pairs = _distil(models, base, X_train, y_train, **options)
        hard, choice = _one_split_fallback(candidate, base, X_train, y_train, X_held, y_held,
                                           fallback and held, options)
    kept = hard if choice is not None and choice["kept"] == "hard_labels" else candidate
    phase("scoring")
    held_out_report = report(models, kept, X_held, y_held, classify)
    if held:
        # The held-out rows have chosen and scored; the student returned learns from every
        # labelled row, as the one a user fits without distillation would.
        y_all = np.asarray(y)
        if kept is candidate:
            kept, fit, pairs = _distil(models, base, X, y_all, **options)
        else:
            phase("refitting on every row")
            kept = clone(base).fit(X, y_all)
    kept.provenance_ = record(method=method, temperature=temperature, alpha=alpha, pairs=pairs, loaded=loaded,
                              classify=classify, fit=fit, report=held_out_report, fallback=choice)
    return kept


def _checked_inputs(teachers: Any, student: Any, X: Any, method: str, temperature: float, alpha: float,
                    trusted: Any) -> tuple[list, bool, np.ndarray]:
    """The loaded teachers (model, file record), whether they classify, and ``X`` as float64 of their width."""
    items = list(teachers) if isinstance(teachers, Sequence) and not isinstance(teachers, str) else [teachers]
    check_options(method, temperature, alpha, len(items))
    loaded = [load_teacher(item, trusted) for item in items]
    models = [model for model, _ in loaded]
    classify = check_pair(models, student, method)
    X = check_array(X, dtype=np.float64)
    n_features = models[0].n_features_in_
    if X.shape[1] != n_features:
        raise DistillationError(f"X has {X.shape[1]} features, the teachers expect {n_features}")
    return loaded, classify, X


def _seeded_clone(student: Any, rng: np.random.RandomState) -> Any:
    """A clone of ``student`` whose unset ``random_state`` is drawn from ``rng``."""
    base = clone(student)
    unset = {k: rng.randint(2**31 - 1) for k, v in base.get_params().items() if k == "random_state" and v is None}
    base.set_params(**unset)
    return base


def _one_split_fallback(candidate: Any, base: Any, X_train: np.ndarray, y_train: Any, X_held: Any, y_held: Any,
                        compare: bool, options: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """The hard-label student and the fallback's record when one split holds rows out (else None, None)."""
    if not compare:
        return None, None
    if len(X_held) < fallbacks.MIN_ROWS:
        return None, fallbacks.too_few_rows(len(X_held))
    options["phase"]("fitting the student on the hard labels")
    hard = clone(base).fit(X_train, y_train)
    return hard, fallbacks.choose(candidate, hard, X_held, y_held, options["classify"])


def _cross_fit(models: list, base: Any, X: np.ndarray, y: np.ndarray, n_folds: int,
               options: dict[str, Any]) -> tuple[tuple, Any, dict[str, Any], np.ndarray, np.ndarray]:
    """Both candidates fitted on k - 1 folds and compared on the pooled out-of-fold predictions.

    Returns the first fold's distillation (as :func:`_distil` returns it) and hard-label
    student, the fallback's record, and the first fold's rows, on which the kept one is
    scored for ``provenance_["report"]``: the one-split path's report, with the first
    fold as the held-out rows.
    """
    classify = options["classify"]
    pred_d = np.empty(len(y), dtype=y.dtype if classify else np.float64)
    pred_h = np.empty_like(pred_d)
    first: tuple = ()
    for train, test in fallbacks.folds(y, classify, n_folds, options["rng"]):
        options["phase"](f"cross-fitting the candidates ({n_folds} folds)")
        distilled = _distil(models, base, X[train], y[train], **options)
        hard = clone(base).fit(X[train], y[train])
        pred_d[test], pred_h[test] = distilled[0].predict(X[test]), hard.predict(X[test])
        first = first or (distilled, hard, test)
    choice = fallbacks.compare(pred_d, pred_h, y, classify, cross_fitted=n_folds)
    return first[0], first[1], choice, X[first[2]], y[first[2]]


def _distil(models: list, base: Any, X: np.ndarray, y: np.ndarray | None, *, classify: bool, method: str,
            temperature: float, alpha: float, layer_map: str | None, transfer_size: int | str,
            rng: np.random.RandomState, phase: Callable[[str], None]) -> tuple[Any, dict[str, Any], list]:
    """A clone of ``base`` distilled on a transfer set around ``X``; what it learned; the layer pairs."""
    phase("synthesizing the transfer set")
    size = transfer.auto_size(transfer_size, X.shape[0])
    X_transfer, source = transfer.transfer_rows(X, size, rng)
    fitted = clone(base)
    phase("labelling it with the teachers")
    n_labelled = min(X.shape[0], size) if y is not None else 0
    layers: list = []
    pairs: list[tuple[int, int]] = []
    if method == "progressive":
        pairs = progressive.parse_layer_map(
            layer_map, len(progressive.hidden_sizes(fitted)), len(progressive.hidden_sizes(models[0])))
        layers = progressive.hint_layers(fitted, models[0], X_transfer, pairs, phase)
    phase("fitting the student")
    residuals = None
    if classify:
        classes = models[0].classes_
        onehot = (y[:n_labelled, None] == classes[None, :]).astype(np.float64) if n_labelled else None
        targets = transfer.soft_targets([m.predict_proba(X_transfer) for m in models], temperature, alpha, onehot)
        soft, loss = fit_classifier(fitted, X_transfer, targets, classes, layers, X.shape[0])
    else:
        targets = np.mean([np.asarray(m.predict(X_transfer), dtype=np.float64) for m in models], axis=0)
        if n_labelled:
            targets, residuals = transfer.regression_targets(targets, X_transfer[:n_labelled], y[:n_labelled],
                                                              source, alpha)
        soft, loss = True, fit_regressor(fitted, X_transfer, targets, layers)
    transfer_set = {"size": int(size), "labelled_rows": int(n_labelled),
                    "synthesized_rows": int(size - min(X.shape[0], size)),
                    "synthesis": transfer.synthesis_record(), "label_residuals": residuals,
                    "sha256": transfer.sha256_of_arrays(X_transfer, targets)}
    return fitted, {"soft": soft, "loss": loss, "transfer_set": transfer_set}, pairs
