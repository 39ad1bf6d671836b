"""Schemas of the linear models: stable tensor names and shape checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import linear_model as sk

from aprender import linear_model as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features, require
from aprender.codec.schemas._model_checks import check_coefficients

#: The names the aprender Rust ecosystem reads.
LINEAR_ALIASES = {"coef_": "coefficients", "intercept_": "intercept"}


def _check_intercept(attrs: Mapping[str, Any], rows: int, path: str) -> None:
    """intercept_ is required: a float (``fit_intercept=False``) or float array of one value per row."""
    require(attrs, ("intercept_",), path)
    intercept = attrs["intercept_"]
    if isinstance(intercept, np.ndarray):
        if intercept.dtype.kind != "f" or intercept.shape not in ((rows,), ()):
            raise fail(path, f"'intercept_' is {intercept.dtype} of shape {intercept.shape}; "
                             f"coefficients need float of shape ({rows},)")
    elif not isinstance(intercept, float | np.floating):
        raise fail(path, f"'intercept_' must be a float or a float array, found {type(intercept).__name__}")


def check_linear(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """coef_ is (n_features,) or (n_targets, n_features); intercept_ matches."""
    n = n_features(attrs, path)
    coef = array(attrs, "coef_", path, ndim=(1, 2), shape={-1: n})
    _check_intercept(attrs, 1 if coef.ndim == 1 else coef.shape[0], path)


def check_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """coef_ has one row per class (one row for two classes); intercept_ matches."""
    n = n_features(attrs, path)
    classes = attrs.get("classes_")
    if not isinstance(classes, np.ndarray) or classes.ndim != 1 or classes.shape[0] < 2:
        raise fail(path, "'classes_' must be a 1-d array of at least two labels")
    rows = 1 if classes.shape[0] == 2 else classes.shape[0]
    check_coefficients(attrs, path, (rows, n))
    _check_intercept(attrs, rows, path)


_LINEAR = Spec(ModelType.LINEAR_REGRESSION, LINEAR_ALIASES, quantizable=("coef_",), validate=check_linear)

SCHEMAS = [
    ((ap.LinearRegression, sk.LinearRegression), _LINEAR),
    ((ap.Ridge, sk.Ridge), _LINEAR),
    ((ap.Lasso, sk.Lasso), _LINEAR),
    ((ap.ElasticNet, sk.ElasticNet), _LINEAR),
    (
        (ap.LogisticRegression, sk.LogisticRegression),
        Spec(ModelType.LOGISTIC_REGRESSION, LINEAR_ALIASES, quantizable=("coef_",), validate=check_classifier),
    ),
]
