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
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec._optional import require
from aprender.codec._spec import Validator
from aprender.codec.schemas._xgb_structure import OBJECTIVES
from aprender.exceptions import UnsupportedTypeError

xgboost = require("xgboost")

__all__ = ["CLASSIFIER_OBJECTIVES", "KEYWORDS", "METRIC", "PARAM_ENUMS", "SCHEMAS"]

#: Objectives an XGBoost classifier's booster may have (its predict_proba reads them).
CLASSIFIER_OBJECTIVES = frozenset(["binary:logistic", "binary:logitraw", "binary:hinge", "multi:softmax",
                                   "multi:softprob"])
#: Hyperparameters that may hold code (a custom objective, metric or callbacks): refused as callables.
_CODE_PARAMS = ("objective", "eval_metric", "callbacks")
#: String hyperparameters and the words each may hold (or None); tools/gen_param_table.py classifies
#: them ``checked``: this table is their check. ``objective`` must also be the booster's own.
PARAM_ENUMS: dict[str, frozenset[str]] = {
    "objective": frozenset(OBJECTIVES),
    "booster": frozenset(["gbtree"]),
    "tree_method": frozenset(["auto", "exact", "approx", "hist"]),
    "grow_policy": frozenset(["depthwise", "lossguide"]),
    "sampling_method": frozenset(["uniform", "gradient_based"]),
    "multi_strategy": frozenset(["one_output_per_tree"]),
    "device": frozenset(["cpu", "cuda", "gpu"]),
    "importance_type": frozenset(["gain", "weight", "cover", "total_gain", "total_cover"]),
}
#: Training parameters XGBoost's estimators take as extra keywords (kept in their ``kwargs``), each with the
#: rule of its value: "number" (finite), "numbers" (a finite number or 1-d array of them), or the allowed words.
KEYWORDS: dict[str, Any] = {
    "quantile_alpha": "numbers", "huber_slope": "number", "tweedie_variance_power": "number",
    "aft_loss_distribution": frozenset(["normal", "logistic", "extreme"]), "aft_loss_distribution_scale": "number",
    "lambdarank_pair_method": frozenset(["topk", "mean"]), "lambdarank_num_pair_per_sample": "number",
    "lambdarank_unbiased": "number", "lambdarank_bias_norm": "number", "ndcg_exp_gain": "number",
}
#: XGBoost's evaluation metrics by name, with an optional ``@cutoff`` and ``-`` suffix.
METRIC = re.compile(r"^(rmse|rmsle|mae|mape|mphe|logloss|error|merror|mlogloss|auc|aucpr|pre|ndcg|map|"
                    r"poisson-nloglik|gamma-nloglik|cox-nloglik|gamma-deviance|tweedie-nloglik|aft-nloglik|"
                    r"interval-regression-accuracy|quantile)(@[0-9.]{1,12})?-?$")


def _code_param(params: Mapping[str, Any]) -> str | None:
    """The first hyperparameter that holds code, if any: a callable (alone or in a list), or callbacks
    (XGBoost's ``TrainingCallback`` objects are code whatever their class)."""
    for name in _CODE_PARAMS:
        value = params.get(name)
        if callable(value) or (isinstance(value, list) and any(callable(v) for v in value)) or (
                name == "callbacks" and value):
            return name
    return None


def _check_save(params: Mapping[str, Any], path: str) -> None:
    """Refuse a custom objective, metric or callback at save (it is code, and files hold none), and an
    extra keyword aprender does not know the rule of."""
    name = _code_param(params)
    if name is not None:
        raise UnsupportedTypeError(join(path, name), "callable", f"a custom XGBoost {name} is code, which aprender "
                                   "never stores; pass a named objective/metric (a string), or refit without it")
    for name in params:
        if name not in _NAMES and name not in KEYWORDS:
            raise UnsupportedTypeError(join(path, name), "keyword", "an XGBoost training keyword aprender has no "
                                       f"rule for (it stores {', '.join(sorted(KEYWORDS))})")


def _check_keyword(name: str, value: Any, path: str) -> None:
    rule = KEYWORDS[name]
    if isinstance(rule, frozenset):
        good = value in rule
    else:
        numbers = np.asarray(value) if rule == "numbers" and isinstance(value, (list, np.ndarray)) else value
        if isinstance(numbers, np.ndarray):
            good = numbers.ndim == 1 and 0 < numbers.size <= 1024 and numbers.dtype.kind in "iuf" and bool(
                np.isfinite(numbers).all())
        else:
            good = type(numbers) in (int, float) and math.isfinite(numbers)
    if not good:
        what = f"one of {sorted(rule)}" if isinstance(rule, frozenset) else f"{rule} (finite)"
        raise fail(join(path, name), f"{preview(value, 60)} is not {what}")


def _pack(attrs: dict[str, Any]) -> dict[str, Any]:
    # XGBoost keeps extra keywords in ``kwargs``, which get_params lists as parameters: stored there only.
    return {k: v for k, v in attrs.items() if k != "kwargs"}


def _check_words(params: Mapping[str, Any], path: str) -> None:
    """String hyperparameters hold one of their words (:data:`PARAM_ENUMS`, :data:`METRIC`)."""
    for name, words in PARAM_ENUMS.items():
        value = params.get(name)
        if value is not None and value not in words:
            raise fail(join(path, name), f"{preview(value, 60)} is not one of {sorted(words)}")
    metrics = params.get("eval_metric")
    for metric in metrics if isinstance(metrics, list) else [] if metrics is None else [metrics]:
        if type(metric) is not str or METRIC.fullmatch(metric) is None:
            raise fail(join(path, "eval_metric"), f"{preview(metric, 60)} is not an XGBoost metric name")


def _learner(booster: Any) -> Mapping[str, Any]:
    return json.loads(booster.save_config())["learner"]


def _validator(cls: type, classifier: bool) -> Validator:
    # XGBoost's estimators take any keyword as a training parameter: a file may hold only the named ones.
    names = frozenset(cls().get_params(deep=False))

    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """The hyperparameters are named ones; the booster, the class count and the objective agree."""
        for name, value in params.items():
            if name in KEYWORDS:
                _check_keyword(name, value, path)
            elif name not in names:
                raise fail(path, f"{cls.__name__} has no hyperparameter {preview(name, 60)}")
        name = _code_param(params)
        if name is not None:
            raise fail(path, f"hyperparameter '{name}' holds a callable; aprender stores objectives and metrics "
                             "by name only")
        _check_words(params, path)
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


def _spec(cls: type, classifier: bool) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, validate=_validator(cls, classifier), training_only=("evals_result_",),
                check_save=_check_save, pack=_pack)


#: Every constructor parameter of the five classes (their own ``get_params`` names).
_NAMES = frozenset(xgboost.XGBRFClassifier().get_params(deep=False)) | frozenset(
    xgboost.XGBRanker().get_params(deep=False))

SCHEMAS = [((cls,), _spec(cls, classifier)) for cls, classifier in (
    (xgboost.XGBClassifier, True), (xgboost.XGBRegressor, False), (xgboost.XGBRanker, False),
    (xgboost.XGBRFClassifier, True), (xgboost.XGBRFRegressor, False))]
