"""Refuse a warm-start refit whose data disagrees with the fitted state it would continue.

scikit-learn's coordinate-descent estimators hand the stored ``coef_`` to compiled code
when ``warm_start=True`` without comparing it with the new data: ``MultiTaskElasticNet``
and ``MultiTaskLasso`` pass it to ``_cd_fast.enet_coordinate_descent_multi_task``, which
loops over the new data's targets and features and writes past the stored array (heap
corruption) when the data has more of them. ``HuberRegressor`` starts SciPy's L-BFGS-B from
the stored ``coef_`` while its gradient has the new data's width. ``ElasticNet``/``Lasso`` fail
later with an unhelpful NumPy error. A file chooses ``coef_`` and ``warm_start``, so a model aprender
loads gets an instance-level ``fit`` that checks the rule of :data:`WARM_START_RULES`
first and raises :class:`~aprender.exceptions.WarmStartMismatchError` (a ``ValueError``,
as scikit-learn's own shape errors are). Refusing, rather than silently restarting from
zeros, keeps scikit-learn's meaning of ``warm_start`` (continue this solution) and tells
the user the refit is not one.

The coefficient rule is the special case of one that holds for every class with a
``warm_start`` parameter (:func:`warm_starts`): a warm-start ``fit`` continues members
fitted on ``n_features_in_`` columns, so it must see that many. scikit-learn checks
it for most of them; ``HistGradientBoosting*`` does not: ``fit`` re-bins the new data
and runs the kept ``_predictors`` over it in ``_predictor.pyx`` (no bounds checks),
which reads the columns the old trees split on past the end of a narrower input. Where
more than the width decides what the kept members index, :data:`WARM_START_LAYOUT` names
the check: a ``HistGradientBoosting*`` tree with a categorical split looks its feature up
in the known-category table of the *new* data (``_predictor.pyx``), which has no row for
a feature the new data gives as numeric. docs/threat-model.md, "Warm starts", has the evidence.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn import linear_model as sk

from aprender.exceptions import WarmStartMismatchError

#: Class -> the fitted attribute a warm-start ``fit`` reuses in compiled code. Its shape,
#: read as 2-d (targets, features), must equal (targets of y, columns of X).
WARM_START_RULES: dict[type, str] = {
    sk.ElasticNet: "coef_",  # Lasso subclasses it
    sk.MultiTaskElasticNet: "coef_",  # MultiTaskLasso subclasses it
    # concatenates coef_ with its intercept and scale as L-BFGS-B's start, whose gradient then has
    # the new width: SciPy's Fortran reads past one of them (a SIGSEGV in a fuzz campaign's refit)
    sk.HuberRegressor: "coef_",
}


def _categorical_layout(est: Any, X: Any) -> str | None:
    """The categorical columns the kept trees split on against those ``fit`` would find in ``X``."""
    def columns(mask: Any) -> list[int]:
        return [] if mask is None else np.flatnonzero(mask).tolist()

    method = getattr(est, "_check_categorical_features", None)  # older releases: a method, without side effects
    if method is not None:
        found = method(X)
    else:
        from sklearn.utils.validation import _check_categorical_features

        found = _check_categorical_features(X, est.categorical_features)
    fitted, new = columns(getattr(est, "is_categorical_", None)), columns(found)
    return None if fitted == new else f"categorical features {fitted}, the data's are {new}"


#: Base class (module and name, so that a load imports no family its file does not name) -> what
#: else a warm-start ``fit`` must find in ``X`` as the fitted state has it (None when it does, else
#: what differs).
WARM_START_LAYOUT: dict[str, Callable[[Any, Any], str | None]] = {
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.BaseHistGradientBoosting": _categorical_layout,
}


def _bases(est: Any) -> set[str]:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(est).__mro__}


def _stored_attr(est: Any) -> str | None:
    return next((attr for cls, attr in WARM_START_RULES.items() if isinstance(est, cls)), None)


def warm_starts(cls: type) -> bool:
    """True when ``cls`` takes a ``warm_start`` parameter: its loaded models get the guarded ``fit``."""
    try:
        return "warm_start" in inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):  # a builtin __init__ without a signature takes no warm_start
        return False


def _check_width(est: Any, X: Any) -> None:
    width = getattr(est, "n_features_in_", None)
    try:
        shape_x = np.shape(X)
    except ValueError:  # ragged rows: scikit-learn's own validation refuses them
        return
    if isinstance(width, int | np.integer) and len(shape_x) == 2 and shape_x[1] != width:
        raise WarmStartMismatchError(
            f"{type(est).__name__}(warm_start=True) would continue a model fitted on {width} feature(s) with data "
            f"of {shape_x[1]} feature(s): refit with warm_start=False (set_params) or on data of the fitted width")
    bases = _bases(est)
    for base, check in WARM_START_LAYOUT.items():
        differs = check(est, X) if base in bases and width is not None else None
        if differs:
            raise WarmStartMismatchError(
                f"{type(est).__name__}(warm_start=True) would continue trees fitted with {differs}: refit with "
                "warm_start=False (set_params) or on data of the fitted layout")


def _checked_fit(est: Any, attr: str | None, fit: Any, *args: Any, **kwargs: Any) -> Any:
    # The call is passed on as made: a registered class's fit may take no y.
    if not est.get_params(deep=False).get("warm_start"):
        return fit(*args, **kwargs)
    X = args[0] if args else kwargs.get("X")
    y = args[1] if len(args) > 1 else kwargs.get("y")
    _check_width(est, X)
    stored = getattr(est, attr, None) if attr is not None else None
    if isinstance(stored, np.ndarray) and y is not None:
        want = np.atleast_2d(stored).shape
        shape_y, shape_x = np.shape(y), np.shape(X)
        got = (shape_y[1] if len(shape_y) == 2 else 1, shape_x[1] if len(shape_x) == 2 else -1)
        if want != got:
            raise WarmStartMismatchError(
                f"{type(est).__name__}(warm_start=True) would continue a {attr} of {want[0]} target(s) by "
                f"{want[1]} feature(s) on data of {got[0]} target(s) by {got[1]} feature(s): refit with "
                f"warm_start=False (set_params) or on data of the fitted shape")
    return fit(*args, **kwargs)


def is_warm_start_guard(name: str, value: Any) -> bool:
    """True for the instance ``fit`` that :func:`guard_warm_start` installs (never saved)."""
    return name == "fit" and isinstance(value, functools.partial) and value.func is _checked_fit


def guard_warm_start(est: Any) -> None:
    """Give ``est`` (a freshly loaded estimator) a ``fit`` that applies the width rule and :data:`WARM_START_RULES`."""
    if warm_starts(type(est)) and callable(getattr(est, "fit", None)):
        # An instance attribute shadows the method, as the decoder's partial_fit guards do.
        est.fit = functools.partial(_checked_fit, est, _stored_attr(est), est.fit)
