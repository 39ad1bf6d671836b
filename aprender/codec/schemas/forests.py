"""Schemas of the extremely randomized trees: ExtraTree*, ExtraTrees* and RandomTreesEmbedding.

They share the random forests' packed layout (aprender.codec.handlers.packed): every
tree's node arrays are concatenated, so the tensor count does not grow with
``n_estimators``, and the same validators check them before anything is built.
RandomTreesEmbedding's ``one_hot_encoder_`` is an ordinary nested estimator.
"""

from __future__ import annotations

from sklearn import ensemble as sk
from sklearn import tree as sk_tree

from aprender.codec import ModelType, Spec
from aprender.codec.schemas.ensemble import forest_spec
from aprender.codec.schemas.tree import check_tree_classifier, check_tree_regressor

SCHEMAS = [
    ((sk_tree.ExtraTreeClassifier,), Spec(ModelType.DECISION_TREE, validate=check_tree_classifier)),
    ((sk_tree.ExtraTreeRegressor,), Spec(ModelType.DECISION_TREE, validate=check_tree_regressor)),
    ((sk.ExtraTreesClassifier,), forest_spec(True)),
    ((sk.ExtraTreesRegressor,), forest_spec(False)),
    ((sk.RandomTreesEmbedding,), forest_spec(False)),
]
