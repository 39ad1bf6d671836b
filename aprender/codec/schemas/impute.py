"""Schemas of SimpleImputer, KNNImputer and the MissingIndicator they nest with ``add_indicator=True``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import impute as sk

from aprender import impute as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
from aprender.codec._migrations import running_at_least
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas.preprocessing import check_feature_names

#: The fitted dtypes transform reads: scikit-learn 1.8 added ``_fill_dtype`` (older files get it
#: from codec/_migrations.py).
_DTYPES = ("_fit_dtype", "_fill_dtype") if running_at_least("1.8") else ("_fit_dtype",)


def check_simple_imputer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """One statistic per feature; the fitted dtypes are real dtypes; the indicator agrees."""
    n = n_features(attrs, path)
    check_feature_names(attrs, n, path)
    statistics = array(attrs, "statistics_", path, ndim=(1,), kinds="biufO", shape={0: n})
    for name in _DTYPES:
        if not isinstance(attrs.get(name), np.dtype):
            raise fail(path, f"'{name}' must be a numpy dtype")
    fill = attrs.get("_fill_dtype", attrs["_fit_dtype"])
    try:  # transform casts the statistics to the fill dtype
        statistics.astype(fill)
    except (TypeError, ValueError, OverflowError):
        raise fail(path, f"'statistics_' cannot be cast to the fill dtype {fill}") from None
    check_indicator(attrs, n, path)


def check_indicator(attrs: Mapping[str, Any], n: int, path: str) -> None:
    indicator = attrs.get("indicator_")
    fitted_on = getattr(indicator, "_n_features", None)
    if indicator is not None and (not isinstance(indicator, sk.MissingIndicator) or fitted_on != n):
        raise fail(path, f"'indicator_' must be a MissingIndicator fitted on the imputer's {n} features")


def check_knn_imputer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The training rows and their missing-value mask are (n_samples, n_features_in_); one valid flag per feature."""
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    fit_X = array(attrs, "_fit_X", path, ndim=(2,), kinds="biuf", shape={1: n})
    array(attrs, "_mask_fit_X", path, ndim=(2,), kinds="b", shape={0: fit_X.shape[0], 1: n})
    array(attrs, "_valid_mask", path, ndim=(1,), kinds="b", shape={0: n})
    check_indicator(attrs, n, path)


def check_missing_indicator(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """features_ are distinct column indices below the fitted width."""
    n = n_features(attrs, path)
    if attrs.get("_n_features") != n or type(attrs.get("_precomputed")) is not bool:
        raise fail(path, f"'_n_features' must equal n_features_in_ ({n}) and '_precomputed' be a bool")
    features = array(attrs, "features_", path, ndim=(1,), kinds="iu")
    if features.size and (features.min() < 0 or features.max() >= n or np.unique(features).size != features.size):
        raise fail(path, f"'features_' must be distinct column indices in [0, {n})")


SCHEMAS = [
    ((ap.SimpleImputer, sk.SimpleImputer), Spec(ModelType.IMPUTER, validate=check_simple_imputer)),
    ((sk.MissingIndicator,), Spec(ModelType.IMPUTER, validate=check_missing_indicator)),
    ((sk.KNNImputer,), Spec(ModelType.IMPUTER, validate=check_knn_imputer)),
]
