"""Schemas of LightGBM's scikit-learn estimators: LGBMClassifier, LGBMRegressor, LGBMRanker.

The booster (``_Booster``) is stored by the named ``lightgbm_booster`` handler
(aprender.codec.handlers.lightgbm_booster), which checks its trees and rebuilds it from
model text aprender writes. The validator here checks the estimator's own fitted state
against that booster: the feature count, the classes and their encoders, the objective
and the best iteration. LightGBM is imported through ``require``: without it, a file
naming these classes raises MissingDependencyError naming the ``lightgbm`` extra.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail, require
from aprender.codec._nodes import preview
from aprender.codec._optional import require as require_library
from aprender.codec.schemas._lgbm_params import (
    OBJECTIVE_ALIASES,
    check_eval_at,
    check_lightgbm_params,
    check_other_params,
)
from aprender.codec.schemas._lgbm_text import MULTICLASS

lightgbm = require_library("lightgbm")

__all__ = ["SCHEMAS"]

#: Fitted attributes every fit of the three estimators leaves.
_FITTED = ("_Booster", "_n_features", "_n_features_in", "_objective", "_best_iteration", "_n_classes", "fitted_")
_CLASSIFIER_FITTED = ("_classes", "_class_map", "_le")


def _int(attrs: Mapping[str, Any], name: str, path: str) -> int:
    value = attrs.get(name)
    if type(value) is not int:
        raise fail(path, f"'{name}' must be an int, found {preview(value, 40)}")
    return value


def _check_classes(attrs: Mapping[str, Any], num_class: int, objective: str, path: str) -> None:
    labels = attrs.get("_classes")
    if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.shape[0] < 2:
        raise fail(path, "'_classes' must be a 1-d array of at least two labels")
    n = labels.shape[0]
    if _int(attrs, "_n_classes", path) != n:
        raise fail(path, f"'_n_classes' is {attrs['_n_classes']} but '_classes' holds {n} labels")
    expected = n if n > 2 else 1
    if num_class != expected or (n > 2) != (objective in MULTICLASS):
        raise fail(path, f"{n} classes need a booster of {expected} class(es) with a "
                         f"{'multiclass' if n > 2 else 'binary'} objective; it has {num_class} ({objective})")
    encoder = attrs.get("_le")
    encoded = getattr(encoder, "classes_", None)
    if not isinstance(encoded, np.ndarray) or not np.array_equal(encoded, labels):
        raise fail(path, "'_le.classes_' must hold the labels of '_classes'")
    class_map = attrs.get("_class_map")
    if not isinstance(class_map, dict) or len(class_map) != n or sorted(
            int(v) for v in class_map.values() if isinstance(v, (int, np.integer))) != list(range(n)):
        raise fail(path, f"'_class_map' must map the {n} labels to 0 .. {n - 1}")


#: Keyword arguments that restate what the booster holds, and how to read it from the booster: LightGBM
#: sizes its buffers at every ``predict`` by the keyword, whatever the booster holds.
RESTATED: dict[str, Any] = {"num_class": lambda booster: booster.num_model_per_iteration()}


def _check_restated(params: Mapping[str, Any], booster: Any, path: str) -> None:
    for name, read in RESTATED.items():
        if name in params and params[name] != read(booster):
            raise fail(path, f"keyword {name} is {preview(params[name], 40)} but the booster's is {read(booster)}")


def _check(classifier: bool) -> Any:
    def check_lightgbm(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """Hyperparameters on LightGBM's tables; the booster's features, classes, objective and best
        iteration agree with the estimator's own."""
        check_lightgbm_params(params, path)
        # What predict hands LightGBM besides the parameters: the keyword arguments, the objective, the
        # class count (above 2) and a ranker's positions, each read from a fitted attribute.
        check_other_params(params, attrs.get("_other_params"), path)
        if "_eval_at" in attrs:
            check_eval_at(attrs["_eval_at"], path)
        if "fitted_" not in attrs:  # an unfitted template (a search's ``estimator``): no booster to check
            if attrs.get("_Booster") is not None:
                raise fail(path, "an unfitted LightGBM estimator (no 'fitted_') cannot hold a booster")
            return
        require(attrs, _FITTED + (_CLASSIFIER_FITTED if classifier else ()), path)
        booster = attrs["_Booster"]
        if not isinstance(booster, lightgbm.Booster) or attrs.get("fitted_") is not True:
            raise fail(path, f"'_Booster' must be a LightGBM booster, found {type(booster).__name__}")
        _check_restated(params, booster, path)
        width = booster.num_feature()
        for name in ("_n_features", "_n_features_in"):
            if _int(attrs, name, path) != width:
                raise fail(path, f"'{name}' is {attrs[name]} but the booster has {width} features")
        objective = attrs.get("_objective")
        canonical = OBJECTIVE_ALIASES.get(objective) if type(objective) is str else None
        name = booster.params.get("objective")  # the checked name the handler wrote into the model text
        if canonical is None or name != canonical:
            raise fail(path, f"'_objective' {preview(objective, 40)} is not the booster's objective")
        if _int(attrs, "_best_iteration", path) != booster.best_iteration:
            raise fail(path, f"'_best_iteration' is {attrs['_best_iteration']}, the booster's {booster.best_iteration}")
        if classifier:
            _check_classes(attrs, booster.num_model_per_iteration(), name, path)
        elif attrs["_n_classes"] != -1:
            raise fail(path, f"a regressor's '_n_classes' is -1, found {attrs['_n_classes']}")
    return check_lightgbm


def _pack(attrs: dict[str, Any]) -> dict[str, Any]:
    # LightGBM keeps its best scores in a defaultdict(OrderedDict): stored as the dict it is.
    best = attrs.get("_best_score")
    if isinstance(best, defaultdict):
        attrs = {**attrs, "_best_score": dict(best)}
    return attrs


def _unpack(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    best = attrs.get("_best_score")
    if isinstance(best, dict) and attrs.get("fitted_") is True:
        if not all(isinstance(v, dict) for v in best.values()):
            raise fail(path, "'_best_score' must map data set names to dicts of scores")
        attrs["_best_score"] = best = defaultdict(OrderedDict, best)
        booster = attrs.get("_Booster")
        if isinstance(booster, lightgbm.Booster):
            booster.best_score = best  # one object, as a fit leaves it
    return attrs


def _spec(classifier: bool) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, validate=_check(classifier), pack=_pack, unpack=_unpack)


SCHEMAS = [
    ((lightgbm.LGBMClassifier,), _spec(True)),
    ((lightgbm.LGBMRegressor,), _spec(False)),
    ((lightgbm.LGBMRanker,), _spec(False)),
]
