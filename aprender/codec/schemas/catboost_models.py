"""Schemas of CatBoost's scikit-learn estimators: CatBoostClassifier, CatBoostRegressor, CatBoostRanker.

CatBoost's estimators are not scikit-learn ``BaseEstimator`` subclasses: their
hyperparameters live in a dict (``_init_params``) that ``get_params`` returns and the
constructor rebuilds, and the fitted model is a compiled object (``_object``) that
the ``catboost_booster`` handler stores as checked arrays
(``aprender.codec.handlers.catboost_booster``). What is left are a few plain fitted
attributes that CatBoost sets from that model after a fit or a load; each is checked
against the model here, and the model's loss against the estimator's role.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec._optional import require
from aprender.codec._spec import Validator
from aprender.codec.schemas._catboost_losses import LOSSES, METRIC_NAME, loss_role

catboost = require("catboost")

#: What a fit leaves on a CatBoost estimator besides its parameters, and the type of each.
FITTED: dict[str, tuple[type, ...]] = {
    "_object": (catboost._catboost._CatBoost,),  # stored by the catboost_booster handler
    "_is_fitted_": (bool,),
    "_random_seed": (int,),
    "_learning_rate": (float, int),
    "_tree_count": (int,),
    "_n_features_in": (int,),
    "_prediction_values_change": (list,),  # feature importances, cached by get_feature_importance
    "_loss_value_change": (list,),
}
#: Rebuilt by the constructor from the parameters (``_init_params``) or computed again on demand.
_NOT_STATE = ("_init_params", "_canonized_params")


def _pack(attrs: dict[str, Any]) -> dict[str, Any]:
    # An unfitted estimator (a search's or an ensemble's template) holds an empty model the constructor makes too.
    dropped = _NOT_STATE if attrs.get("_is_fitted_") else (*_NOT_STATE, "_object")
    return {k: v for k, v in attrs.items() if k not in dropped}


def _importances(values: list, n_features: int, name: str, path: str) -> None:
    if len(values) != n_features or not all(isinstance(v, (float, int)) and math.isfinite(v) for v in values):
        raise fail(path, f"'{name}' must hold {n_features} finite numbers, one per feature")


def _check_names(params: Mapping[str, Any], role: str, path: str) -> None:
    """A loss parameter names a loss of the estimator's role in LOSSES; metric parameters name metrics."""
    for name in ("loss_function", "objective"):
        value = params.get(name)
        if value is None:
            continue
        if type(value) is not str or not METRIC_NAME.fullmatch(value) or value.partition(":")[0] not in LOSSES or (
                loss_role(value.partition(":")[0]) != role):
            raise fail(path, f"{name} {preview(value, 60)} is not a {role}'s loss of {sorted(LOSSES)} "
                             "(with its options, 'Quantile:alpha=0.3')")
    for name in ("eval_metric", "custom_metric", "custom_loss"):
        value = params.get(name)
        for item in value if type(value) is list else [value]:
            if item is not None and (type(item) is not str or not METRIC_NAME.fullmatch(item)):
                raise fail(path, f"{name} {preview(item, 60)} is not a metric name")


def _validator(role: str) -> Validator:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """Every fitted attribute is one a fit leaves, of its type, and agrees with the model it describes."""
        _check_names(params, role, path)
        for name, value in attrs.items():
            kinds = FITTED.get(name)
            if kinds is None:
                raise fail(path, f"'{name}' is not an attribute that fitting a CatBoost estimator leaves")
            if not isinstance(value, kinds) or (type(value) is bool and bool not in kinds):
                raise fail(path, f"'{name}' must be a {' or '.join(k.__name__ for k in kinds)}, "
                                 f"found {preview(value, 40)}")
        missing = [name for name in ("_object", "_is_fitted_", "_tree_count", "_n_features_in") if name not in attrs]
        if missing:
            raise fail(path, f"fitted attribute '{missing[0]}' is missing")
        model = attrs["_object"]
        if attrs["_is_fitted_"] is not True:
            raise fail(path, "'_is_fitted_' must be true for a fitted model")
        # CatBoost's JSON loader leaves the model's own feature count at 0: its float and categorical features
        # count them.
        features = len(model._get_float_feature_indices()) + len(model._get_cat_feature_indices())
        if attrs["_tree_count"] != model._get_tree_count() or attrs["_n_features_in"] != features:
            raise fail(path, f"_tree_count {attrs['_tree_count']} and _n_features_in {attrs['_n_features_in']} must "
                             f"match the model's {model._get_tree_count()} trees and {features} features")
        rate = attrs.get("_learning_rate", 0.0)
        if not math.isfinite(rate):
            raise fail(path, f"'_learning_rate' is {rate}; it must be finite")
        for name in ("_prediction_values_change", "_loss_value_change"):
            if name in attrs:
                _importances(attrs[name], attrs["_n_features_in"], name, path)
        loss = model._get_loss_function_name()
        if loss_role(loss) != role:
            raise fail(path, f"a CatBoost {role} cannot hold a model trained with the {loss} loss, "
                             f"which trains a {loss_role(loss)}")

    return check


def _spec(role: str) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, pack=_pack, validate=_validator(role))


SCHEMAS = [
    ((catboost.CatBoostClassifier,), _spec("classifier")),
    ((catboost.CatBoostRegressor,), _spec("regressor")),
    ((catboost.CatBoostRanker,), _spec("ranker")),
]
