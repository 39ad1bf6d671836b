"""Schemas of the forests: RandomForest*, ExtraTree*, ExtraTrees* and RandomTreesEmbedding.

Every tree's node arrays are packed (aprender.codec.trees._packed): the arrays of all
trees are concatenated, so the tensor count does not grow with ``n_estimators``, and
the validators check them before anything is built. Gradient boosting
(aprender.codec.schemas.boosting) packs its trees the same way. A forest's file
imports this module alone, not the boosting models. RandomTreesEmbedding's
``one_hot_encoder_`` is an ordinary nested estimator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import ensemble as sk
from sklearn import tree as sk_tree
from sklearn.base import ClassifierMixin

from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail
from aprender.codec._nodes import join
from aprender.codec._spec import Validator
from aprender.codec.schemas.tree import check_tree_classifier, check_tree_regressor
from aprender.codec.trees._packed import check_packed, pack_ensemble, read_packed, unpack_ensemble
from aprender.codec.trees._sklearn_tree import check_tree_attrs
from aprender.ensemble._forest import RandomForestClassifier, RandomForestRegressor

__all__ = ["SCHEMAS", "forest_spec"]

#: Attributes a forest sets in __init__: present even before fit.
_FOREST_INIT = frozenset(["estimator", "estimator_params"])
_FOREST_TRAINING = ("oob_score_", "oob_decision_function_", "oob_prediction_")


def _forest_validator(classifier: bool) -> Validator:
    def check(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
        """The packed trees are proper trees of the forest's kind that fit its attributes."""
        if not set(attrs) - _FOREST_INIT:
            return
        where = join(path, "estimators_")
        packed = read_packed(attrs.get("estimators_"), attrs, where, 1)
        if issubclass(packed.cls, ClassifierMixin) != classifier:
            raise fail(where, f"a {'classifier' if classifier else 'regressor'} forest cannot hold {packed.key}")
        check_packed(packed, where)
        trees = packed.trees
        check_tree_attrs(attrs, trees["n_features"], trees["n_outputs"], trees["n_classes"], classifier, path)

    return check


def forest_spec(classifier: bool) -> Spec:
    """The packed-trees spec of a forest of classifier or regressor trees."""
    return Spec(ModelType.RANDOM_FOREST, validate=_forest_validator(classifier), pack=pack_ensemble,
                unpack=unpack_ensemble(1), training_only=_FOREST_TRAINING)


SCHEMAS = [
    ((RandomForestClassifier, sk.RandomForestClassifier), forest_spec(True)),
    ((RandomForestRegressor, sk.RandomForestRegressor), forest_spec(False)),
    ((sk_tree.ExtraTreeClassifier,), Spec(ModelType.DECISION_TREE, validate=check_tree_classifier)),
    ((sk_tree.ExtraTreeRegressor,), Spec(ModelType.DECISION_TREE, validate=check_tree_regressor)),
    ((sk.ExtraTreesClassifier,), forest_spec(True)),
    ((sk.ExtraTreesRegressor,), forest_spec(False)),
    ((sk.RandomTreesEmbedding,), forest_spec(False)),
]
