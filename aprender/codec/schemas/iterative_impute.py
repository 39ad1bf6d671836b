"""Schema of IterativeImputer: its round-robin sequence of fitted regressors, checked against its columns.

Kept apart from ``schemas/impute.py``: scikit-learn's IterativeImputer module imports
``scipy.stats``, which a file of SimpleImputers should not pay for.

``transform`` imputes, for each ``_ImputerTriplet`` of ``imputation_sequence_`` in turn,
column ``feat_idx`` from columns ``neighbor_feat_idx`` of the imputed matrix, whose
width is ``n_features_in_`` less the all-missing columns (``_is_empty_feature``) unless
``keep_empty_features``. The steps are stored by the ``imputer_triplet`` handler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.impute._iterative import IterativeImputer, _ImputerTriplet

from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, bounded_int, fail, n_features, require
from aprender.codec.schemas.impute import check_indicator
from aprender.codec.schemas.preprocessing import check_feature_names


def _width(params: Mapping[str, Any], attrs: Mapping[str, Any], n: int, path: str) -> int:
    """The number of columns the sequence indexes: the non-empty ones, or all of them."""
    empty = array(attrs, "_is_empty_feature", path, ndim=(1,), kinds="b", shape={0: n})
    return n if params.get("keep_empty_features") is True else int(n - np.count_nonzero(empty))


def _check_step(step: Any, i: int, width: int, regressor: type | None, path: str) -> None:
    where = f"imputation_sequence_.{i}"
    if not isinstance(step, _ImputerTriplet):
        raise fail(path, f"'{where}' must be an imputer step (feat_idx, neighbor_feat_idx, estimator)")
    bounded_int(step.feat_idx, f"{where}.feat_idx", path, high=width - 1,
                hint=f" (a column of the {width} the imputer fills)")
    neighbors = step.neighbor_feat_idx
    if neighbors.size and (neighbors.min() < 0 or neighbors.max() >= width):
        raise fail(path, f"'{where}.neighbor_feat_idx' must be column indices in [0, {width})")
    if np.unique(neighbors).size != neighbors.size or np.any(neighbors == step.feat_idx):
        raise fail(path, f"'{where}.neighbor_feat_idx' must be distinct columns other than feat_idx "
                         f"{int(step.feat_idx)}")
    if regressor is not None and type(step.estimator) is not regressor:
        raise fail(path, f"'{where}.estimator' is a {type(step.estimator).__name__}, but the imputer fits clones "
                         f"of {regressor.__name__}")
    fitted_on = getattr(step.estimator, "n_features_in_", None)
    if fitted_on is not None and fitted_on != neighbors.size:
        raise fail(path, f"'{where}.estimator' was fitted on {fitted_on} features, but the step gives it "
                         f"{neighbors.size}")


def check_iterative_imputer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Every step imputes a column of the imputed matrix from other, distinct columns of it."""
    require(attrs, ("imputation_sequence_", "initial_imputer_", "n_iter_", "random_state_", "_estimator"), path)
    n = n_features(attrs, path)
    check_feature_names(attrs, n, path)
    check_indicator(attrs, n, path)
    initial = attrs["initial_imputer_"]
    if not isinstance(initial, SimpleImputer) or getattr(initial, "n_features_in_", None) != n:
        raise fail(path, f"'initial_imputer_' must be a SimpleImputer fitted on the imputer's {n} features")
    if not isinstance(attrs["random_state_"], np.random.RandomState):
        raise fail(path, "'random_state_' must be a RandomState")
    estimator = attrs["_estimator"]
    if not (hasattr(estimator, "fit") and callable(getattr(estimator, "predict", None))):
        raise fail(path, "'_estimator' must be a regressor")
    width = _width(params, attrs, n, path)
    n_iter = bounded_int(attrs["n_iter_"], "n_iter_", path)
    sequence = attrs["imputation_sequence_"]
    if not isinstance(sequence, list):
        raise fail(path, "'imputation_sequence_' must be a list of imputer steps")
    # Every round imputes the same columns, at most every column once.
    if (n_iter == 0 and sequence) or (n_iter and (len(sequence) % n_iter or len(sequence) > n_iter * width)):
        raise fail(path, f"'imputation_sequence_' has {len(sequence)} steps, which is not {n_iter} rounds of at "
                         f"most {width} columns")
    for i, step in enumerate(sequence):
        _check_step(step, i, width, type(estimator), path)
    if sequence:
        low = array(attrs, "_min_value", path, ndim=(1,), kinds="f", shape={0: width})
        high = array(attrs, "_max_value", path, ndim=(1,), kinds="f", shape={0: width})
        if not np.all(high > low):
            raise fail(path, "'_max_value' must exceed '_min_value' for every column")


SCHEMAS = [
    ((IterativeImputer,), Spec(ModelType.IMPUTER, validate=check_iterative_imputer)),
]
