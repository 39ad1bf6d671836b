"""Step 1 of :func:`aprender.distill`: the teachers, the checks, and the held-out split (private)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_is_fitted

from aprender.distill import _progressive as progressive
from aprender.distill._methods import METHODS
from aprender.exceptions import DistillationError
from aprender.format._io import existing_file

__all__ = ["check_options", "check_pair", "load_teacher", "split"]


def _load_bytes(data: bytes, path: Path, trusted: Any) -> Any:
    """The model in a file's bytes, by the format its leading bytes name (as ``aprender.load`` tells them)."""
    from aprender.format import load
    from aprender.format._formats import sniff_head

    fmt = sniff_head(data[:16], path.suffix)
    if fmt is not None and fmt.can.loads:
        return fmt.backend.loads(data, trusted=trusted)
    return load(path, trusted=trusted)  # raises the error that says what the file is (pickle, an export, unknown)


def load_teacher(item: Any, trusted: Any = None) -> tuple[Any, dict[str, Any]]:
    """The fitted teacher and its provenance record (file name and sha256 when it came from a file).

    A file is read once: the sha256 recorded is that of the bytes the teacher was built
    from, even if the file changes while it is read. ``trusted`` is ``aprender.load``'s:
    the functions and hyperparameters beyond the default table that the caller accepts.
    """
    if isinstance(item, (str, os.PathLike)):
        path = existing_file(item)
        data = path.read_bytes()
        model = _load_bytes(data, path, trusted)
        return model, {"class": type(model).__name__, "file": path.name, "sha256": hashlib.sha256(data).hexdigest()}
    check_is_fitted(item)
    return item, {"class": type(item).__name__}


def check_options(method: str, temperature: float, alpha: float, n_teachers: int) -> None:
    """Refuse an unknown method, a temperature <= 0, an alpha outside [0, 1], or a wrong number of teachers."""
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


def check_pair(teachers: list[Any], student: Any, method: str) -> bool:
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


def split(X: np.ndarray, y: Any, classes: np.ndarray | None, validation_fraction: float,
          rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """``(X_train, y_train, X_held, y_held)``: ``validation_fraction`` of the labelled rows held out.

    Stratified for classifiers (``classes`` given) when every class has two rows.
    Without ``y`` every row trains and nothing is held out.
    """
    if y is None:
        return X, None, None, None
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise DistillationError(f"y has {y.shape[0]} rows, X has {X.shape[0]}")
    if classes is not None and not np.isin(y, classes).all():
        raise DistillationError("y has labels the teachers do not know")
    if not validation_fraction > 0:
        return X, y, None, None
    stratify = y if classes is not None and np.unique(y, return_counts=True)[1].min() > 1 else None
    X_train, X_held, y_train, y_held = train_test_split(
        X, y, test_size=validation_fraction, random_state=rng.randint(2**31 - 1), stratify=stratify)
    return X_train, y_train, X_held, y_held
