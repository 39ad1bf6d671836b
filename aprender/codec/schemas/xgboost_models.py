"""Schemas of XGBoost's scikit-learn estimators: XGBClassifier, XGBRegressor, XGBRanker, XGBRF*.

Their fitted state is the booster (``_Booster``, stored as validated arrays by the
``xgboost_booster`` handler, aprender.codec.handlers.xgboost_booster), a classifier's
``n_classes_`` and, after a fit with ``eval_set``, ``evals_result_``; everything else
(``classes_``, ``n_features_in_``, ``feature_names_in_``, ``best_iteration``) is read
from the booster. The validator checks that the estimator and its booster agree:
a classifier's class count with the booster's objective and ``num_class``, the
``objective`` hyperparameter with the booster's, and that no hyperparameter is a
callable (a custom objective or metric is code, which a file never carries).

XGBoost is imported through ``aprender.codec._optional.require``: without it, a file
naming one of these classes raises MissingDependencyError naming the extra.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec._optional import require
from aprender.codec._spec import Validator
from aprender.exceptions import UnsupportedTypeError

xgboost = require("xgboost")

__all__ = ["CLASSIFIER_OBJECTIVES", "SCHEMAS"]

#: Objectives an XGBoost classifier's booster may have (its predict_proba reads them).
CLASSIFIER_OBJECTIVES = frozenset(["binary:logistic", "binary:logitraw", "binary:hinge", "multi:softmax",
                                   "multi:softprob"])
#: Hyperparameters that may hold code (a custom objective, metric or callbacks): refused as callables.
_CODE_PARAMS = ("objective", "eval_metric", "callbacks")


def _code_param(params: Mapping[str, Any]) -> str | None:
    """The first hyperparameter that holds a callable (alone or in a list), if any."""
    for name in _CODE_PARAMS:
        value = params.get(name)
        if callable(value) or (isinstance(value, list) and any(callable(v) for v in value)):
            return name
    return None


def _check_save(params: Mapping[str, Any], path: str) -> None:
    """Refuse a custom objective, metric or callback at save: it is code, and files hold none."""
    name = _code_param(params)
    if name is not None:
        raise UnsupportedTypeError(join(path, name), "callable", f"a custom XGBoost {name} is code, which aprender "
                                   "never stores; pass a named objective/metric (a string), or refit without it")


def _learner(booster: Any) -> Mapping[str, Any]:
    return json.loads(booster.save_config())["learner"]


def _validator(classifier: bool) -> Validator:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """The booster, the class count and the objective hyperparameter agree."""
        name = _code_param(params)
        if name is not None:
            raise fail(path, f"hyperparameter '{name}' holds a callable; aprender stores objectives and metrics "
                             "by name only")
        if not attrs:  # an unfitted template (a search's or a meta-estimator's ``estimator``)
            return
        booster = attrs.get("_Booster")
        if not isinstance(booster, xgboost.Booster):
            raise fail(path, f"'_Booster' must be an XGBoost booster, found {type(booster).__name__}")
        learner = _learner(booster)
        objective = learner["objective"]["name"]
        if isinstance(params.get("objective"), str) and params["objective"] != objective:
            raise fail(path, f"objective is {preview(params['objective'], 60)} but the booster was trained "
                             f"with {objective}")
        if not classifier:
            if "n_classes_" in attrs:
                raise fail(path, "a regressor or ranker has no n_classes_")
            return
        if objective not in CLASSIFIER_OBJECTIVES:
            raise fail(path, f"a classifier's booster needs one of {sorted(CLASSIFIER_OBJECTIVES)}, "
                             f"found {objective}")
        num_class = int(learner["learner_model_param"]["num_class"])
        n_classes = attrs.get("n_classes_")
        if type(n_classes) is not int or n_classes != max(num_class, 2):
            raise fail(path, f"n_classes_ is {preview(n_classes)} but the booster has num_class {num_class} "
                             f"({max(num_class, 2)} classes)")

    return check


def _spec(classifier: bool) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, validate=_validator(classifier), training_only=("evals_result_",),
                check_save=_check_save)


SCHEMAS = [
    ((xgboost.XGBClassifier,), _spec(True)),
    ((xgboost.XGBRegressor,), _spec(False)),
    ((xgboost.XGBRanker,), _spec(False)),
    ((xgboost.XGBRFClassifier,), _spec(True)),
    ((xgboost.XGBRFRegressor,), _spec(False)),
]
