"""Schemas of the boosted ensembles: gradient boosting and histogram gradient boosting.

Gradient-boosting trees are packed like a forest's (aprender.codec.trees._packed),
HistGradientBoosting's predictors and bin mapper too (aprender.codec.schemas._hgb);
the loss objects and the feature-subsampling Generator have named handlers. Each
validator checks the packed arrays and how they fit the ensemble's own attributes
before anything is built; each ``unpack`` then rebuilds the scikit-learn objects.
Gradient boosting's default ``init_`` estimators (DummyClassifier/DummyRegressor) are
allow-listed here as well.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn import dummy as sk_dummy
from sklearn import ensemble as sk
from sklearn import tree as sk_tree
from sklearn._loss.loss import BaseLoss, HalfMultinomialLoss
from sklearn.metrics import get_scorer
from sklearn.metrics._scorer import _PassthroughScorer, _Scorer
from sklearn.preprocessing import LabelEncoder

from aprender import ensemble as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features, require
from aprender.codec._nodes import join
from aprender.codec._spec import Validator
from aprender.codec.schemas._hgb import (
    build_bin_mapper,
    build_predictors,
    build_preprocessor,
    check_bin_mapper,
    check_predictors,
    check_preprocessor,
    pack_bin_mapper,
    pack_predictors,
    pack_preprocessor,
)
from aprender.codec.trees._packed import check_packed, pack_ensemble, read_packed, unpack_ensemble
from aprender.codec.trees._sklearn_tree import check_tree_attrs
from aprender.exceptions import UnsupportedTypeError


def _classes(attrs: Mapping[str, Any], path: str) -> int:
    labels = attrs.get("classes_")
    if not isinstance(labels, np.ndarray) or labels.ndim != 1 or labels.shape[0] < 2:
        raise fail(path, "'classes_' must be a 1-d array of at least two labels")
    return labels.shape[0]


# -- gradient boosting ----------------------------------------------------------------


def _loss(attrs: Mapping[str, Any], path: str) -> BaseLoss:
    loss = attrs.get("_loss")
    if not isinstance(loss, BaseLoss):
        raise fail(path, f"'_loss' must be a scikit-learn loss, found {type(loss).__name__}")
    return loss


def _check_classes_and_loss(attrs: Mapping[str, Any], per_iteration: int, classifier: bool, path: str) -> int:
    """Trees per iteration and the loss must match the classes; returns the number of classes."""
    loss = _loss(attrs, path)
    if not classifier:
        if per_iteration != 1:
            raise fail(path, f"a regressor grows one tree per iteration, found {per_iteration}")
        return 1
    n_classes = _classes(attrs, path)
    expected = 1 if n_classes == 2 else n_classes
    if per_iteration != expected:
        raise fail(path, f"{n_classes} classes need {expected} trees per iteration, found {per_iteration}")
    # The raw predictions have one column per tree of an iteration; the loss reads them.
    if loss.is_multiclass != (n_classes > 2) or (isinstance(loss, HalfMultinomialLoss) and loss.n_classes != n_classes):
        raise fail(path, f"loss {type(loss).__name__} does not fit {n_classes} classes")
    return n_classes


def _gb_validator(classifier: bool) -> Validator:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """The packed regression trees, their grid shape, the loss and init_ agree."""
        where = join(path, "estimators_")
        packed = read_packed(attrs.get("estimators_"), attrs, where, 2)
        if not issubclass(packed.cls, sk_tree.DecisionTreeRegressor):
            raise fail(where, f"gradient boosting grows regression trees, found {packed.key}")
        check_packed(packed, where)
        trees = packed.trees
        check_tree_attrs(attrs, trees["n_features"], 1, [1], False, path)
        if trees["n_outputs"] != 1:
            raise fail(where, f"gradient boosting trees have a single output, found {trees['n_outputs']}")
        stages, per_iteration = packed.shape
        if attrs.get("n_trees_per_iteration_") != per_iteration or attrs.get("n_estimators_") != stages:
            raise fail(path, f"estimators_ has shape {packed.shape}; n_estimators_ and n_trees_per_iteration_ "
                             "must match it")
        n_classes = _check_classes_and_loss(attrs, per_iteration, classifier, path)
        # The Cython predictor adds tree k's output to column k of the init raw predictions.
        init = attrs.get("init_")
        if init == "zero":
            return
        if not hasattr(init, "predict"):
            raise fail(path, f"init_ must be 'zero' or an estimator, found {type(init).__name__}")
        labels = getattr(init, "classes_", None)
        if classifier and (not isinstance(labels, np.ndarray) or labels.shape != (n_classes,)):
            raise fail(path, f"init_ must be a classifier fitted on the same {n_classes} classes")

    return check


# -- histogram gradient boosting ------------------------------------------------------

#: HistGradientBoostingClassifier's label encoder holds the very ``classes_`` array.
_LABELS_FROM = "classes_"


def _pack_hgb(attrs: dict[str, Any]) -> dict[str, Any]:
    if "_predictors" not in attrs:
        return attrs
    attrs = dict(attrs)
    attrs["_predictors"] = pack_predictors(attrs["_predictors"], attrs["n_trees_per_iteration_"], "_predictors")
    attrs["_bin_mapper"] = pack_bin_mapper(attrs["_bin_mapper"], "_bin_mapper")
    if attrs.get("_preprocessor") is not None:
        attrs["_preprocessor"] = pack_preprocessor(attrs["_preprocessor"], "_preprocessor")
    encoder = attrs.get("_label_encoder")
    if type(encoder) is LabelEncoder and vars(encoder).keys() == {"classes_"} and (
            encoder.classes_ is attrs.get("classes_")):
        attrs["_label_encoder"] = _LABELS_FROM
    scorer = attrs.get("_scorer")
    if type(scorer) is _Scorer:  # built by get_scorer(scoring): params cannot hold callables
        attrs["_scorer"] = {"rebuild": "get_scorer"}
    elif type(scorer) is _PassthroughScorer:  # scoring=None: the estimator's own score method
        attrs["_scorer"] = {"rebuild": "passthrough"}
    elif scorer is not None:
        raise UnsupportedTypeError("_scorer", type(scorer).__name__, "only scorers named by 'scoring' are stored")
    # Early stopping with a scorer leaves the bound method behind as an instance
    # attribute; it is the class's own method, so nothing needs storing.
    method = attrs.get("_raw_predict")
    if inspect.ismethod(method) and method.__func__ is getattr(type(method.__self__), "_raw_predict", None):
        del attrs["_raw_predict"]
    return attrs


def _hgb_validator(classifier: bool) -> Validator:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """Predictors, bin mapper, baseline, loss and classes agree; every index is in range."""
        n = n_features(attrs, path)
        per_iteration = attrs.get("n_trees_per_iteration_")
        if type(per_iteration) is not int or per_iteration < 1:
            raise fail(path, f"n_trees_per_iteration_ must be a positive int, found {per_iteration!r}")
        _check_classes_and_loss(attrs, per_iteration, classifier, path)
        array(attrs, "_baseline_prediction", path, ndim=(2,), shape={0: 1, 1: per_iteration})
        bins = check_bin_mapper(attrs.get("_bin_mapper"), join(path, "_bin_mapper"))
        if bins.n_features != n or attrs.get("_n_features") != n:
            raise fail(path, f"n_features_in_ is {n} but the bin mapper has {bins.n_features} features "
                             f"and _n_features is {attrs.get('_n_features')!r}")
        check_predictors(attrs.get("_predictors"), per_iteration, bins, join(path, "_predictors"))
        require(attrs, ("_preprocessor",), path)
        if attrs["_preprocessor"] is not None:
            check_preprocessor(attrs["_preprocessor"], attrs, bins, join(path, "_preprocessor"))
        encoder = attrs.get("_label_encoder", _LABELS_FROM)
        if encoder != _LABELS_FROM and not isinstance(encoder, LabelEncoder):
            raise fail(path, f"_label_encoder must be {_LABELS_FROM!r} or a LabelEncoder")
        scorer = attrs.get("_scorer")
        if scorer is not None:
            wanted = "get_scorer" if isinstance(params.get("scoring"), str) else "passthrough"
            if scorer != {"rebuild": wanted}:
                raise fail(path, f"_scorer must be {{'rebuild': {wanted!r}}} for scoring={params.get('scoring')!r}")

    return check


def _hgb_unpack(cls: type) -> Callable[[dict[str, Any], Mapping[str, Any], str], dict[str, Any]]:
    def unpack(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
        if "_predictors" not in attrs:
            return attrs
        attrs = dict(attrs)
        attrs["_predictors"] = build_predictors(attrs["_predictors"])
        attrs["_bin_mapper"] = build_bin_mapper(attrs["_bin_mapper"])
        if attrs.get("_preprocessor") is not None:
            attrs["_preprocessor"] = build_preprocessor(cls, params, attrs, attrs["_preprocessor"],
                                                        join(path, "_preprocessor"))
        if attrs.get("_label_encoder") == _LABELS_FROM:
            encoder = LabelEncoder()
            encoder.classes_ = attrs["classes_"]
            attrs["_label_encoder"] = encoder
        scorer = attrs.get("_scorer")
        if scorer == {"rebuild": "get_scorer"}:
            attrs["_scorer"] = get_scorer(params["scoring"])
        elif scorer == {"rebuild": "passthrough"}:
            attrs["_scorer"] = _PassthroughScorer(cls(**params))
        return attrs

    return unpack


# -- gradient boosting's default init estimators ----------------------------------------


def check_dummy_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """class_prior_ holds one probability per class of each output."""
    outputs = attrs.get("n_outputs_")
    if type(outputs) is not int or outputs < 1:
        raise fail(path, f"n_outputs_ must be a positive int, found {outputs!r}")
    labels = attrs.get("classes_")
    if outputs == 1:
        if not isinstance(labels, np.ndarray) or labels.ndim != 1:
            raise fail(path, "'classes_' must be a 1-d array of labels")
        array(attrs, "class_prior_", path, ndim=(1,), shape={0: labels.shape[0]})


def check_dummy_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """constant_ is one row with a value per output."""
    outputs = attrs.get("n_outputs_")
    if type(outputs) is not int or outputs < 1:
        raise fail(path, f"n_outputs_ must be a positive int, found {outputs!r}")
    array(attrs, "constant_", path, ndim=(2,), shape={0: 1, 1: outputs})


#: Out-of-bag results of the training set, and per-iteration training scores.
_GB_TRAINING = ("train_score_", "oob_improvement_", "oob_scores_", "oob_score_")
_HGB_TRAINING = ("train_score_", "validation_score_")


def _gradient_boosting(classifier: bool) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, validate=_gb_validator(classifier), pack=pack_ensemble,
                unpack=unpack_ensemble(2), training_only=_GB_TRAINING)


def _hist_gradient_boosting(cls: type, classifier: bool) -> Spec:
    return Spec(ModelType.GRADIENT_BOOSTING, validate=_hgb_validator(classifier), pack=_pack_hgb,
                unpack=_hgb_unpack(cls), training_only=_HGB_TRAINING)


SCHEMAS = [
    ((ap.GradientBoostingClassifier, sk.GradientBoostingClassifier), _gradient_boosting(True)),
    ((ap.GradientBoostingRegressor, sk.GradientBoostingRegressor), _gradient_boosting(False)),
    (
        (ap.HistGradientBoostingClassifier, sk.HistGradientBoostingClassifier),
        _hist_gradient_boosting(sk.HistGradientBoostingClassifier, True),
    ),
    (
        (ap.HistGradientBoostingRegressor, sk.HistGradientBoostingRegressor),
        _hist_gradient_boosting(sk.HistGradientBoostingRegressor, False),
    ),
    ((sk_dummy.DummyClassifier,), Spec(ModelType.DUMMY, validate=check_dummy_classifier)),
    ((sk_dummy.DummyRegressor,), Spec(ModelType.DUMMY, validate=check_dummy_regressor)),
]
