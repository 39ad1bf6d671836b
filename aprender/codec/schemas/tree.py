"""Schemas of the decision trees.

``tree_`` is stored by the named ``sklearn_tree`` handler with the storage of
aprender.codec.trees, which checks the node arrays before building the Tree; the
validators here check the estimator's own fitted attributes against that tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import tree as sk
from sklearn.tree._tree import Tree

from aprender import tree as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail, require
from aprender.codec.trees._sklearn_tree import TREE_CLASSIFIER_FITTED, TREE_FITTED, check_tree_attrs


def _check_tree(attrs: Mapping[str, Any], classifier: bool, path: str) -> None:
    if not attrs:  # an unfitted template, such as a forest's ``estimator``
        return
    tree = attrs.get("tree_")
    if not isinstance(tree, Tree):
        raise fail(path, f"a fitted decision tree needs 'tree_', found {type(tree).__name__}")
    require(attrs, TREE_FITTED + (TREE_CLASSIFIER_FITTED if classifier else ()), path)
    classes = [int(c) for c in tree.n_classes]
    check_tree_attrs(attrs, int(tree.n_features), int(tree.n_outputs), classes, classifier, path)


def check_tree_classifier(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """n_features_in_, n_outputs_, classes_ and n_classes_ agree with ``tree_``."""
    _check_tree(attrs, True, path)


def check_tree_regressor(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """n_features_in_ and n_outputs_ agree with ``tree_``, which holds one value per output."""
    _check_tree(attrs, False, path)


SCHEMAS = [
    (
        (ap.DecisionTreeClassifier, sk.DecisionTreeClassifier),
        Spec(ModelType.DECISION_TREE, validate=check_tree_classifier),
    ),
    (
        (ap.DecisionTreeRegressor, sk.DecisionTreeRegressor),
        Spec(ModelType.DECISION_TREE, validate=check_tree_regressor),
    ),
]
