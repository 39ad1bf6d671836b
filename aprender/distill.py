"""Knowledge distillation: fit a small student to one or more teachers, with provenance.

:func:`distill` labels a transfer set with the teachers and fits the student to the
result. Classifiers learn ``alpha * softmax(log p_teacher / T) + (1 - alpha) * onehot(y)``
exactly (an MLPClassifier as its own target matrix, a HistGradientBoostingClassifier
through a soft-target loss, other students by sample-weighted row expansion, which a
LogisticRegression starts at its solution); regressors learn ``alpha * teacher + (1 -
alpha) * y``. With held-out rows, the student fitted on the hard labels is returned
instead when it scores better there (``fallback``). The transfer set is the training
rows plus rows synthesized around them (MUNGE) and labelled by the teachers. The
student keeps a ``provenance_`` record that every save writes into the file's user
metadata (key ``"provenance"``), where ``apr inspect`` shows it. docs/distill.md explains each step.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_is_fitted, has_fit_parameter

from aprender import _distill_data as data
from aprender import _distill_progressive as progressive
from aprender import _distill_students as students
from aprender._distill_methods import METHODS
from aprender.exceptions import DistillationError

__all__ = ["METHODS", "distill"]

#: ``transfer_size="auto"``: this many transfer rows per training row ...
AUTO_PER_ROW = 10
#: ... and at least / at most this many in all.
AUTO_MIN, AUTO_MAX = 20_000, 60_000
#: Smallest probability the distillation loss takes the logarithm of.
_EPS = 1e-12


def _teacher(item: Any) -> tuple[Any, dict[str, Any]]:
    """The fitted teacher and its provenance record (file name and sha256 when it came from a file)."""
    import aprender

    if isinstance(item, (str, os.PathLike)):
        path = Path(item)
        model = aprender.load(path)
        return model, {"class": type(model).__name__, "file": path.name,
                       "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    check_is_fitted(item)
    return item, {"class": type(item).__name__}


def _check_options(method: str, temperature: float, alpha: float, n_teachers: int) -> None:
    if method not in METHODS:
        raise DistillationError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    if not (isinstance(temperature, (int, float)) and temperature > 0):
        raise DistillationError(f"temperature must be a number > 0; got {temperature!r}")
    if not (isinstance(alpha, (int, float)) and 0 <= alpha <= 1):
        raise DistillationError(f"alpha must be a number in [0, 1]; got {alpha!r}")
    if n_teachers == 0:
        raise DistillationError("give at least one teacher")
    if method != "ensemble" and n_teachers > 1:
        raise DistillationError(f"method={method!r} takes one teacher, got {n_teachers}; use method='ensemble'")


def _check_pair(teachers: list[Any], student: Any, method: str) -> bool:
    """Whether this is classification; refuses mixed kinds, class mismatches and bad progressive pairs."""
    classify = is_classifier(student)
    for i, teacher in enumerate(teachers):
        if is_classifier(teacher) != classify:
            kind = "classifier" if classify else "regressor"
            raise DistillationError(f"teacher {i} ({type(teacher).__name__}) is not a {kind} like the student")
        if classify and not hasattr(teacher, "predict_proba"):
            raise DistillationError(f"teacher {i} ({type(teacher).__name__}) has no predict_proba")
        if classify and not np.array_equal(teacher.classes_, teachers[0].classes_):
            raise DistillationError(
                f"teacher {i} has classes {teacher.classes_.tolist()}, teacher 0 {teachers[0].classes_.tolist()}"
            )
    if method == "progressive" and not (progressive.is_mlp(student) and progressive.is_mlp(teachers[0])):
        raise DistillationError(
            "method='progressive' matches hidden layers and needs an MLP teacher and an MLP student; got "
            f"{type(teachers[0]).__name__} -> {type(student).__name__} (use method='standard')"
        )
    return classify


def _auto_size(transfer_size: int | str, n_rows: int) -> int:
    if transfer_size == "auto":
        return int(np.clip(AUTO_PER_ROW * n_rows, AUTO_MIN, max(AUTO_MAX, n_rows)))
    if isinstance(transfer_size, (int, np.integer)) and not isinstance(transfer_size, bool) and transfer_size >= 1:
        return int(transfer_size)
    raise DistillationError(f"transfer_size must be 'auto' or a positive int; got {transfer_size!r}")


def _score(model: Any, X: np.ndarray, y: np.ndarray, classify: bool) -> float:
    pred = model.predict(X)
    return float(accuracy_score(y, pred) if classify else r2_score(y, pred))


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
        Share of the labelled rows held out (stratified for classifiers) and used
        only for the report in ``provenance_["report"]``; 0 holds nothing out.
    random_state : int or None, default=0
        Seeds the split, the transfer set and an unset ``random_state`` of the student.
    fallback : bool, default=True
        With held-out rows, also fit the same student on the hard labels of the
        training rows; if it scores better on the held-out rows than the distilled
        one, return the student fitted on the hard labels of all of ``X`` instead
        (``provenance_["fallback"]`` records both scores and which was kept).
    progress : callable, optional
        Called with the name of each phase as it starts (the CLI's progress bar).

    Returns
    -------
    estimator
        The fitted student (or, when ``fallback`` kept it, the student fitted on the
        hard labels). ``student.provenance_`` records the method, temperature,
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
    items = list(teachers) if isinstance(teachers, Sequence) and not isinstance(teachers, str) else [teachers]
    _check_options(method, temperature, alpha, len(items))
    loaded = [_teacher(item) for item in items]
    models = [model for model, _ in loaded]
    classify = _check_pair(models, student, method)
    X = check_array(X, dtype=np.float64)
    n_features = models[0].n_features_in_
    if X.shape[1] != n_features:
        raise DistillationError(f"X has {X.shape[1]} features, the teachers expect {n_features}")
    rng = check_random_state(random_state)
    X_train, y_train, X_held, y_held = X, None, None, None
    if y is not None:
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise DistillationError(f"y has {y.shape[0]} rows, X has {X.shape[0]}")
        if classify and not np.isin(y, models[0].classes_).all():
            raise DistillationError("y has labels the teachers do not know")
        if validation_fraction > 0:
            stratify = y if classify and np.unique(y, return_counts=True)[1].min() > 1 else None
            X_train, X_held, y_train, y_held = train_test_split(
                X, y, test_size=validation_fraction, random_state=rng.randint(2**31 - 1), stratify=stratify)
        else:
            y_train = y
    phase("synthesizing the transfer set")
    size = _auto_size(transfer_size, X_train.shape[0])
    X_transfer = np.vstack([X_train, data.synthesize(X_train, size - X_train.shape[0], rng)])[:size]
    base = clone(student)
    unset = {k: rng.randint(2**31 - 1) for k, v in base.get_params().items() if k == "random_state" and v is None}
    base.set_params(**unset)
    fitted = clone(base)
    phase("labelling it with the teachers")
    n_labelled = min(X_train.shape[0], size) if y_train is not None else 0
    layers: list = []
    pairs: list[tuple[int, int]] = []
    if method == "progressive":
        pairs = progressive.parse_layer_map(
            layer_map, len(progressive.hidden_sizes(fitted)), len(progressive.hidden_sizes(models[0])))
        layers = progressive.hint_layers(fitted, models[0], X_transfer, pairs, phase)
    phase("fitting the student")
    if classify:
        classes = models[0].classes_
        onehot = (y_train[:n_labelled, None] == classes[None, :]).astype(np.float64) if n_labelled else None
        targets = data.soft_targets([m.predict_proba(X_transfer) for m in models], temperature, alpha, onehot)
        labels = classes[targets.argmax(axis=1)]
        soft = True
        if data.learns_soft_labels(fitted):
            with data.soft_labels(fitted, targets, classes):
                _fit(fitted, X_transfer, labels, layers)
        elif students.boosts_soft_targets(fitted) and len(np.unique(labels)) == len(classes):
            with students.soft_boosting(fitted, targets):
                _fit(fitted, X_transfer, labels, layers)
        elif has_fit_parameter(fitted, "sample_weight"):
            Xe, ye, we = data.expand(X_transfer, targets, classes)
            if students.starts_logistic(fitted):
                with students.logistic_start(fitted, X_transfer, targets):
                    _fit(fitted, Xe, ye, layers, sample_weight=we)
            else:
                _fit(fitted, Xe, ye, layers, sample_weight=we)
        else:
            _fit(fitted, X_transfer, labels, layers)
            soft = False
        proba = np.zeros_like(targets)
        proba[:, np.searchsorted(classes, fitted.classes_)] = fitted.predict_proba(X_transfer)
        loss = float(-np.mean(np.sum(targets * np.log(np.maximum(proba, _EPS)), axis=1)))
    else:
        preds = np.mean([np.asarray(m.predict(X_transfer), dtype=np.float64) for m in models], axis=0)
        targets = preds.copy()
        if n_labelled:
            targets[:n_labelled] = alpha * preds[:n_labelled] + (1 - alpha) * y_train[:n_labelled]
        _fit(fitted, X_transfer, targets, layers)
        soft = True
        loss = float(np.mean((np.asarray(fitted.predict(X_transfer), dtype=np.float64) - targets) ** 2))
    choice, kept = None, fitted
    if fallback and X_held is not None and len(X_held):
        phase("fitting the student on the hard labels")
        hard = clone(base).fit(X_train, y_train)
        scores = {"distilled": _score(fitted, X_held, y_held, classify),
                  "hard_labels": _score(hard, X_held, y_held, classify)}
        choice = {"kept": "hard_labels" if scores["hard_labels"] > scores["distilled"] else "distilled",
                  "held_out": scores}
        if choice["kept"] == "hard_labels":
            kept = hard
    phase("scoring")
    report = _report(models, kept, X_held, y_held, classify)
    if kept is not fitted:
        # The choice is made; like a hard-label fit the user would make, the kept
        # student learns from every labelled row, the held-out ones included.
        kept = clone(base).fit(X, y)
    kept.provenance_ = {
        "method": method,
        "temperature": float(temperature) if classify else None,
        "alpha": float(alpha),
        "layer_map": ",".join(f"{s}:{t}" for s, t in pairs) or None,
        "teachers": [
            {**record, "classes": model.classes_.tolist() if classify else None} for model, record in loaded
        ],
        "soft_targets": soft,
        "final_loss": loss,
        "transfer_set": {"size": int(size), "labelled_rows": int(n_labelled),
                         "synthesized_rows": int(size - min(X_train.shape[0], size)),
                         "synthesis": data.synthesis_record(),
                         "sha256": data.sha256_of_arrays(X_transfer, targets)},
        "report": report,
        "fallback": choice,
    }
    return kept


def _fit(model: Any, X: np.ndarray, y: np.ndarray, layers: list, **fit_params: Any) -> None:
    if layers:
        progressive.warm_fit(model, X, y, layers, **fit_params)
    else:
        model.fit(X, y, **fit_params)


def _report(models: list, student: Any, X: np.ndarray | None, y: np.ndarray | None, classify: bool) -> dict | None:
    """Held-out scores (accuracy or R^2) of the student and the teachers, and their agreement."""
    if X is None or not len(X):
        return None
    metric = "accuracy" if classify else "r2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # feature-name warnings of foreign teachers
        teacher_scores = [_score(m, X, y, classify) for m in models]
        pred = student.predict(X)
        reference = (np.mean([m.predict_proba(X) for m in models], axis=0).argmax(axis=1) if classify
                     else np.mean([m.predict(X) for m in models], axis=0))
    agreement = (float(np.mean(models[0].classes_[reference] == pred)) if classify
                 else float(r2_score(reference, pred)))
    return {"metric": metric, "held_out_rows": len(X), "student": _score(student, X, y, classify),
            "teachers": teacher_scores, "agreement_with_teachers": agreement}
