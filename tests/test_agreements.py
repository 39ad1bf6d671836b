"""A count stored beside the array it counts must agree with it (aprender/codec/_agreements.py).

Each case saves a real fit whose one attribute states another count or order than its
sibling array (each valid alone: ``n_classes_`` within ``MAX_CLASSES``, ``order_`` of the
right length) with the library's own writer, and must be refused at load with an error
naming the rule's attributes and the estimator's path. Before the rules, the
``DummyClassifier`` and ``BaggingClassifier`` files below asked 3.75 GiB for a 30-row
``predict_proba``, and the chain's ``predict`` indexed its predictions with heap contents.
The real fits of every class that stores a rule's attributes must still load.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone
from sklearn_instances import fit, instances
from state_edit import find, hostile

from aprender.cluster import FeatureAgglomeration
from aprender.codec import from_state, to_state
from aprender.codec._agreements import AGREEMENTS, COPIES
from aprender.codec._fitted import fitted_key
from aprender.codec._fitted_names import NAMES
from aprender.decomposition import NMF, MiniBatchNMF
from aprender.dummy import DummyClassifier
from aprender.ensemble import BaggingClassifier, RandomForestClassifier
from aprender.feature_selection import RFE, SelectKBest, SequentialFeatureSelector, VarianceThreshold
from aprender.kernel_approximation import RBFSampler
from aprender.linear_model import LinearRegression, LogisticRegression
from aprender.model_selection import GridSearchCV
from aprender.multiclass import OutputCodeClassifier
from aprender.multioutput import ClassifierChain, RegressorChain
from aprender.neural_network import BernoulliRBM
from aprender.pipeline import Pipeline
from aprender.preprocessing import (
    KBinsDiscretizer,
    OrdinalEncoder,
    PowerTransformer,
    QuantileTransformer,
    StandardScaler,
    TargetEncoder,
)
from aprender.random_projection import GaussianRandomProjection, SparseRandomProjection

RNG = np.random.RandomState(0)
X = RNG.rand(30, 3)
Y = (X[:, 0] > 0.5).astype(int)
Y2 = np.c_[Y, (X[:, 1] > 0.5).astype(int)]
CATS = np.array([["a"], ["b"], ["c"], [np.nan]] * 6, dtype=object)


def _attrs(cls_name: str) -> Callable[[dict], dict]:
    return lambda meta: find(meta, cls_name)["attrs"]


def _set(cls_name: str, name: str, value: Any) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        attrs = _attrs(cls_name)(meta)
        node = attrs[name]
        if isinstance(node, dict) and node.get("__t__") == "tensor":
            tensors[node["name"]] = np.asarray(value)
        else:
            attrs[name] = value
    return edit


def _first_tensor(prefix: str, change: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        name = min(k for k in tensors if k.startswith(prefix))
        tensors[name] = change(tensors[name])
    return edit


def _fitted(est: Any, *args: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args)


#: (id, fitted model, edit, rule name, where the error points)
CASES = [
    ("dummy-n_classes", lambda: _fitted(DummyClassifier(strategy="uniform"), X, Y),
     _set("DummyClassifier", "n_classes_", 2**24), "n_classes_", "<model>"),
    ("bagging-n_classes", lambda: _fitted(BaggingClassifier(n_estimators=2, random_state=0), X, Y),
     _set("BaggingClassifier", "n_classes_", 2**24), "n_classes_", "<model>"),
    ("forest-per-output", lambda: _fitted(RandomForestClassifier(n_estimators=2, random_state=0), X, Y2),
     _set("RandomForestClassifier", "n_classes_", [2, 2**20]), "n_classes_", "<model>"),
    ("dummy-outputs", lambda: _fitted(DummyClassifier(), X, Y2),
     _set("DummyClassifier", "n_outputs_", 3), "n_outputs_", "<model>"),
    ("nested-n_classes", lambda: _fitted(Pipeline([("s", StandardScaler()), ("d", DummyClassifier())]), X, Y),
     _set("DummyClassifier", "n_classes_", 3), "n_classes_", "steps.1.d"),
    ("chain-repeat", lambda: _fitted(ClassifierChain(LogisticRegression(), order=[0, 1]), X, Y2),
     _set("ClassifierChain", "order_", [0, 0]), "order_", "<model>"),
    ("chain-range", lambda: _fitted(RegressorChain(LinearRegression()), X, Y2.astype(float)),
     _set("RegressorChain", "order_", [0, 2**40]), "order_", "<model>"),
    ("bins-count", lambda: _fitted(KBinsDiscretizer(n_bins=3, encode="ordinal"), X),
     _set("KBinsDiscretizer", "n_bins_", [300, 3, 3]), "bin_edges_", "<model>"),
    ("bins-width", lambda: _fitted(KBinsDiscretizer(n_bins=3, encode="ordinal"), X),
     _set("KBinsDiscretizer", "n_features_in_", 2**24 - 1), "bin_edges_", "<model>"),
    ("bins-edges", lambda: _fitted(KBinsDiscretizer(n_bins=3, encode="ordinal"), X),
     _first_tensor("bin_edges_", lambda e: np.linspace(0, 1, 100)), "bin_edges_", "<model>"),
    ("bins-order", lambda: _fitted(KBinsDiscretizer(n_bins=3, encode="ordinal"), X),
     _first_tensor("bin_edges_", lambda e: e[::-1].copy()), "bin_edges_", "<model>"),
    ("missing-feature", lambda: _fitted(OrdinalEncoder(), CATS),
     _set("OrdinalEncoder", "_missing_indices", {"__t__": "dict", "items": [[5, 0]]}), "_missing_indices", "<model>"),
    ("missing-index", lambda: _fitted(OrdinalEncoder(), CATS),
     _set("OrdinalEncoder", "_missing_indices", {"__t__": "dict", "items": [[0, 2**40]]}), "_missing_indices",
     "<model>"),
    ("encodings-length", lambda: _fitted(TargetEncoder(target_type="multiclass"), CATS[:, :1].astype(str),
                                         np.arange(24) % 3),
     _first_tensor("encodings_", lambda e: e[:1].copy()), "encodings_", "<model>"),
    ("search-best-index", lambda: _fitted(GridSearchCV(LogisticRegression(), {"C": [1, 2]}, cv=2), X, Y),
     _set("GridSearchCV", "best_index_", 2**40), "best_index_", "<model>"),
    ("output-code-rows", lambda: _fitted(OutputCodeClassifier(LogisticRegression(), random_state=0), X, Y),
     _first_tensor("code_book_", lambda b: np.vstack([b] * 50)), "code_book_", "<model>"),
    ("rfe-support", lambda: _fitted(RFE(LogisticRegression(), n_features_to_select=2), X, Y),
     _first_tensor("ranking_", lambda r: np.where(r == 1, 2, 1)), "ranking_", "<model>"),
    ("selector-width", lambda: _fitted(SelectKBest(k=2), X, Y),
     _set("SelectKBest", "n_features_in_", 2**24 - 1), "scores_", "<model>"),
    ("variance-width", lambda: _fitted(VarianceThreshold(), X),
     _first_tensor("variances_", lambda v: v[:1].copy()), "variances_", "<model>"),
    ("power-width", lambda: _fitted(PowerTransformer(), X),
     _set("PowerTransformer", "n_features_in_", 2**24 - 1), "lambdas_", "<model>"),
    ("quantile-width", lambda: _fitted(QuantileTransformer(n_quantiles=10), X),
     _set("QuantileTransformer", "n_features_in_", 2**24 - 1), "quantiles_", "<model>"),
    ("target-encoder-width", lambda: _fitted(TargetEncoder(), CATS[:, :1].astype(str), np.arange(24) % 2),
     _set("TargetEncoder", "n_features_in_", 2**24 - 1), "encodings_", "<model>"),
    ("sequential-width", lambda: _fitted(SequentialFeatureSelector(LogisticRegression(), n_features_to_select=1,
                                                                   cv=2), X, Y),
     _set("SequentialFeatureSelector", "n_features_in_", 2**24 - 1), "support_", "<model>"),
    ("clusters", lambda: _fitted(FeatureAgglomeration(n_clusters=2), X),
     _set("FeatureAgglomeration", "n_clusters_", 2**24 - 1), "n_clusters_", "<model>"),
    ("width-components", lambda: _fitted(BernoulliRBM(n_components=2, n_iter=1, random_state=0), X),
     _set("BernoulliRBM", "_n_features_out", 2**24 - 1), "_n_features_out", "<model>"),
    ("width-parameter", lambda: _fitted(RBFSampler(n_components=5, random_state=0), X),
     _set("RBFSampler", "_n_features_out", 2**24 - 1), "_n_features_out", "<model>"),
    ("copy-transform-iterations", lambda: _fitted(MiniBatchNMF(n_components=2, max_iter=5, tol=0.0, random_state=0), X),
     _set("MiniBatchNMF", "_transform_max_iter", 2**40), "_transform_max_iter", "<model>"),
    ("copy-beta-loss", lambda: _fitted(NMF(n_components=2, solver="mu", max_iter=5, random_state=0), X),
     _set("NMF", "_beta_loss", 0.5), "_beta_loss", "<model>"),
    ("copy-gamma", lambda: _fitted(MiniBatchNMF(n_components=2, max_iter=5, random_state=0), X),
     _set("MiniBatchNMF", "_gamma", 1e300), "_gamma", "<model>"),
    ("copy-strategy", lambda: _fitted(DummyClassifier(strategy="prior"), X, Y),
     _set("DummyClassifier", "_strategy", "uniform"), "_strategy", "<model>"),
]


@pytest.mark.parametrize(("make", "edit", "named", "where"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_count_that_disagrees_is_refused(make: Callable[[], Any], edit: Callable, named: str, where: str,
                                           tmp_path: Any) -> None:
    err = hostile(make(), edit, tmp_path)
    assert named in str(err) and f"at '{where}'" in str(err)


def test_every_rule_is_broken_by_a_case() -> None:
    named = {c[3] for c in CASES}
    for rule in AGREEMENTS:
        assert set(rule.attributes) & named, f"no crafted file breaks rule {rule.name!r}"
    for copy in COPIES:
        assert copy.attribute in named, f"no crafted file breaks the copy {copy.attribute!r}"


def _storing(rule_attributes: tuple[str, ...]) -> list[str]:
    """Instance ids of scikit-learn classes whose fits store every attribute of a rule."""
    return [key for key, est in instances().items()
            if set(rule_attributes) <= NAMES.get(fitted_key(type(est)), frozenset())]


@pytest.mark.parametrize("attributes", [r.attributes for r in AGREEMENTS] + [(c.attribute,) for c in COPIES],
                         ids=[r.name for r in AGREEMENTS] + [c.attribute for c in COPIES])
def test_every_rule_applies_to_an_allow_listed_class(attributes: tuple[str, ...]) -> None:
    assert any(set(attributes) <= names for names in NAMES.values()), f"{attributes} are stored by no class"


def test_real_fits_keep_every_rule() -> None:
    """Every scikit-learn instance storing a rule's attributes, and the multi-output and missing-value
    layouts the instance generator does not fit, load after saving."""
    keys = sorted({key for rule in AGREEMENTS for key in _storing(rule.attributes)}
                  | {key for copy in COPIES for key in _storing((copy.attribute,))})
    assert len(keys) >= 10
    models = [fit(clone(instances()[key]))[0] for key in keys]
    models += [
        _fitted(RandomForestClassifier(n_estimators=2, random_state=0), X, Y2),
        _fitted(DummyClassifier(), X, Y2),
        _fitted(ClassifierChain(LogisticRegression(), order=[1, 0]), X, Y2),
        _fitted(OrdinalEncoder(), CATS),
        _fitted(TargetEncoder(target_type="multiclass"), CATS[:, :1].astype(str), np.arange(24) % 3),
        _fitted(TargetEncoder(), CATS[:, :1].astype(str), np.arange(24) % 2),
        _fitted(KBinsDiscretizer(n_bins=4, strategy="quantile"), np.c_[X, np.ones(30)]),
        *(_fitted(make(beta_loss=beta, n_components=2, max_iter=5, random_state=0), X)
          for make in (partial(NMF, solver="mu"), MiniBatchNMF)
          for beta in ("frobenius", "kullback-leibler", "itakura-saito", 0.5, 1.5, 3.0)),
        _fitted(MiniBatchNMF(n_components=2, transform_max_iter=7, max_iter=5, random_state=0), X),
        *(_fitted(make(n_components="auto", eps=0.5), RNG.rand(10, 400)) for make in
          (GaussianRandomProjection, SparseRandomProjection)),
    ]
    for model in models:
        from_state(to_state(model))
