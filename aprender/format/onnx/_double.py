"""Models whose values float32 cannot hold, exported in double unless the caller picks a dtype (private).

Each entry is a measured gallery failure (issue 38: scikit-learn 1.9.1's examples, skl2onnx
1.20, ONNX Runtime 1.32), where the float32 graph was far off and the double graph agrees
to ~1e-12. ``to_onnx(dtype=None)`` (the default) exports these in double and every other
model in float32; a model whose double graph cannot be made (a step skl2onnx converts in
float32 only, such as KNNImputer) falls back to float32, verified as always.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from aprender.format.onnx._probe import fitted_parts

__all__ = ["NEEDS_DOUBLE", "array_intercepts", "needs_double"]

#: scikit-learn class name -> why its float32 graph loses the values.
NEEDS_DOUBLE = {
    "PolynomialFeatures": "powers of the inputs (x^15) round to float32 and the model sums them with large "
                          "coefficients of both signs: a gallery LinearRegression on them was 583 off",
    "GaussianProcessRegressor": "the prediction sums kernel values times alpha_, whose terms cancel: 0.38 off",
    "KernelPCA": "the projection sums centred kernel values times scaled eigenvectors, whose terms cancel: 0.03 off",
    "GaussianProcessClassifier": "predict_proba sums erf terms with coefficients ~1e3 that cancel: 3e-4 off",
    "KBinsDiscretizer": "its edges are values (or quantiles) of the training data, which a float64 input rounded to "
                        "float32 can cross: with a StandardScaler before it, computed in float32, 1,037 of 20,000 new "
                        "rows of scaled integers went to another bin and another label",
}


def needs_double(model: Any) -> str | None:
    """Why ``model`` (or a part of it) is exported in double by default, or None."""
    for part in fitted_parts(model):
        for cls in type(part).__mro__:
            if cls.__module__.startswith("sklearn.") and cls.__name__ in NEEDS_DOUBLE:
                return f"{cls.__name__}: {NEEDS_DOUBLE[cls.__name__]}"
    return None


def _scalar_intercept(part: Any) -> bool:
    return isinstance(getattr(part, "intercept_", None), float | np.floating)


def array_intercepts(model: Any) -> Any:
    """``model``, or a copy of it whose scalar ``intercept_`` values are one-element arrays.

    A linear model fitted with ``fit_intercept=False`` keeps ``intercept_ = 0.0``, a float, and
    skl2onnx's double converters call ``intercept_.reshape``: the double graph of such a model
    could not be made, so a Lasso of 5,000 features whose float32 graph is 6e-5 off (the
    gallery's plot_lasso_dense_vs_sparse_data.py) was refused instead of exported in double.
    The copy is converted only; the caller's model is never changed.
    """
    if not any(_scalar_intercept(part) for part in fitted_parts(model)):
        return model
    converted = copy.deepcopy(model)
    for part in fitted_parts(converted):
        if _scalar_intercept(part):
            part.intercept_ = np.array([part.intercept_], dtype=np.float64)
    return converted
