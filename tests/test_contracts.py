"""Nested fitted estimators that disagree with their parent are refused at load (aprender/codec/_contracts.py).

Each case fits a valid parent, then transplants into it a member fitted on another width,
class count or output count (valid alone), and saves the result with the library's writer.
The file is loaded in a child process, since the lie reaches compiled code when it is not
caught, and must be refused with an error that names the member's path.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.decomposition import PCA
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import (
    AdaBoostClassifier,
    BaggingClassifier,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    StackingClassifier,
    VotingClassifier,
)
from sklearn.feature_selection import RFE
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.manifold import Isomap
from sklearn.multiclass import OneVsOneClassifier, OneVsRestClassifier, OutputCodeClassifier
from sklearn.multioutput import ClassifierChain, MultiOutputRegressor
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import aprender
from aprender.codec._contracts import CONTRACTS, contract_for

sys.path.insert(0, str(Path(__file__).parent / "support"))
from child import load_and_use

RNG = np.random.RandomState(0)
X = RNG.normal(size=(60, 4))
Y3 = np.repeat([0, 1, 2], 20)  # three classes
Y2 = np.repeat([0, 1], 30)  # two classes
YR = X[:, 0] + 0.5 * X[:, 1]
X6 = RNG.normal(size=(60, 6))  # another width


def _fit(est: Any, x: Any = X, y: Any = Y3) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(x, y)


def _refit(member: Any, x: Any, y: Any) -> Any:
    """``member`` refitted on other data: its parameters stay those the parent gave it."""
    return _fit(clone(member), x, y)


def _lr(x: Any = X, y: Any = Y3) -> LogisticRegression:
    return _fit(LogisticRegression(max_iter=200), x, y)


def _gb_init_classes() -> Any:
    gb = _fit(GradientBoostingClassifier(n_estimators=3, max_depth=2))
    gb.init_ = _fit(DummyClassifier(strategy="prior"), X, Y2)
    return gb


def _gb_init_width() -> Any:
    gb = _fit(GradientBoostingClassifier(n_estimators=3, max_depth=2))
    gb.init_ = _lr(X6, Y3)
    return gb


def _nested_in_pipeline() -> Any:
    """A lying member deep in the tree: the error names its path from the root."""
    return Pipeline([("s", _fit(StandardScaler())), ("stack", _stacking_final())])


def _gb_init_outputs() -> Any:
    gb = _fit(GradientBoostingRegressor(n_estimators=3, max_depth=2), X, YR)
    gb.init_ = _fit(DummyRegressor(), X, np.stack([YR, YR], axis=1))
    return gb


def _stacking_final() -> Any:
    st = _fit(StackingClassifier([("a", _lr()), ("b", DecisionTreeClassifier(max_depth=2))], cv=2))
    st.final_estimator_ = _lr(X, Y3)  # fitted on 4 columns; the stack gives 6
    return st


def _stacking_member() -> Any:
    st = _fit(StackingClassifier([("a", _lr()), ("b", DecisionTreeClassifier(max_depth=2))], cv=2))
    st.estimators_[0] = _lr(X, Y2)
    return st


def _voting() -> Any:
    vc = _fit(VotingClassifier([("a", _lr()), ("b", DecisionTreeClassifier(max_depth=2))], voting="soft"))
    vc.estimators_[1] = _refit(vc.estimators_[1], X, Y2)
    return vc


def _bagging() -> Any:
    # Trees of one ensemble are packed with one shared width (the writer refuses others): a
    # linear member keeps its own.
    bag = _fit(BaggingClassifier(LogisticRegression(), n_estimators=3, max_features=2, random_state=0))
    bag.estimators_[0] = _refit(bag.estimators_[0], X, Y3)  # 4 columns, its subset has 2
    return bag


def _adaboost() -> Any:
    ada = _fit(AdaBoostClassifier(LogisticRegression(), n_estimators=3, random_state=0))
    ada.estimators_[0] = _refit(ada.estimators_[0], X, Y2)
    return ada


def _pipeline() -> Any:
    pipe = _fit(Pipeline([("pca", PCA(2)), ("lr", LogisticRegression())]))
    pipe.steps[1] = ("lr", _lr(X[:, :3]))
    return pipe


def _column_transformer() -> Any:
    ct = _fit(ColumnTransformer([("s", StandardScaler(), [0, 1])], remainder="drop"))
    ct.transformers_[0] = ("s", _fit(StandardScaler(), X[:, :3]), [0, 1])
    return ct


def _feature_union() -> Any:
    fu = _fit(FeatureUnion([("a", PCA(2)), ("b", PCA(1))]))
    fu.transformer_list[1] = ("b", _fit(PCA(1), X6))
    return fu


def _one_vs_rest() -> Any:
    ovr = _fit(OneVsRestClassifier(LogisticRegression()))
    ovr.estimators_ = ovr.estimators_[:2]
    return ovr


def _one_vs_one() -> Any:
    ovo = _fit(OneVsOneClassifier(LogisticRegression()))
    ovo.estimators_ = (*ovo.estimators_[:2], _lr(X6, Y2))
    return ovo


def _output_code() -> Any:
    oc = _fit(OutputCodeClassifier(LogisticRegression(), code_size=1.0, random_state=0))
    oc.estimators_[0] = _lr(X6, Y2)
    return oc


def _multi_output() -> Any:
    mo = _fit(MultiOutputRegressor(LinearRegression()), X, np.stack([YR, -YR], axis=1))
    mo.estimators_[1] = _fit(LinearRegression(), X6, YR)
    return mo


def _chain() -> Any:
    chain = _fit(ClassifierChain(LogisticRegression(), order=[0, 1]), X, np.stack([Y2, Y2[::-1]], axis=1))
    chain.estimators_[1] = _lr(X, Y2)  # link 1 reads 4 features and link 0's prediction
    return chain


def _rfe() -> Any:
    rfe = _fit(RFE(LogisticRegression(), n_features_to_select=2))
    rfe.estimator_ = _lr(X)
    return rfe


def _transformed_target() -> Any:
    ttr = _fit(TransformedTargetRegressor(LinearRegression(), transformer=StandardScaler()), X, YR)
    ttr.transformer_ = _fit(StandardScaler(), X[:, :2])
    return ttr


def _calibrated() -> Any:
    cal = _fit(CalibratedClassifierCV(LogisticRegression(), cv=2))
    cal.calibrated_classifiers_[0].estimator = _lr(X6)
    return cal


def _isomap() -> Any:
    iso = _fit(Isomap(n_neighbors=5, n_components=2), X, None)
    iso.kernel_pca_.n_features_in_ = 10  # fitted as if on 10 samples' distances, not 60
    return iso


#: case -> (tampered model, fragment of the refused member's path)
CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "gradient_boosting_init_classes": (_gb_init_classes, "init_"),
    "gradient_boosting_init_outputs": (_gb_init_outputs, "init_"),
    "gradient_boosting_init_width": (_gb_init_width, "init_"),
    "stacking_in_pipeline": (_nested_in_pipeline, "steps.1.stack.final_estimator_"),
    "stacking_final_estimator": (_stacking_final, "final_estimator_"),
    "stacking_member_classes": (_stacking_member, "estimators_.0"),
    "voting_member_classes": (_voting, "estimators_.1"),
    "bagging_member_width": (_bagging, "estimators_.0"),
    "adaboost_member_classes": (_adaboost, "estimators_.0"),
    "pipeline_step_width": (_pipeline, "steps.1"),
    "column_transformer_width": (_column_transformer, "transformers_.0"),
    "feature_union_width": (_feature_union, "transformer_list"),
    "one_vs_rest_count": (_one_vs_rest, "estimators_"),
    "one_vs_one_width": (_one_vs_one, "estimators_.2"),
    "output_code_width": (_output_code, "estimators_.0"),
    "multi_output_width": (_multi_output, "estimators_.1"),
    "chain_link_width": (_chain, "estimators_.1"),
    "rfe_estimator_width": (_rfe, "estimator_"),
    "transformed_target_transformer": (_transformed_target, "transformer_"),
    "calibrated_estimator_width": (_calibrated, "calibrated_classifiers_.0"),
    "isomap_kernel_pca_width": (_isomap, "kernel_pca_"),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    """Every tampered file loaded in one child process: case -> outcome."""
    root = tmp_path_factory.mktemp("contracts")
    files = {}
    for case, (make, _) in CASES.items():
        path = root / f"{case}.safetensors"
        aprender.save(make(), path)
        files[case] = (str(path), "")
    return load_and_use(files)


@pytest.mark.parametrize("case", sorted(CASES))
def test_member_that_breaks_its_parents_contract_is_refused(case, outcomes) -> None:
    outcome = outcomes[case]
    assert outcome.startswith("AprenderError:"), outcome
    assert CASES[case][1] in outcome, outcome


def test_untampered_parents_load(tmp_path) -> None:
    """The same parents as fitted load: each contract holds for what scikit-learn writes."""
    parents = [
        _fit(GradientBoostingClassifier(n_estimators=3, max_depth=2)),
        _fit(StackingClassifier([("a", _lr()), ("b", DecisionTreeClassifier(max_depth=2))], cv=2)),
        _fit(StackingClassifier([("a", _lr()), ("b", DecisionTreeClassifier(max_depth=2))], cv=2, passthrough=True),
             X, Y2),
        _fit(BaggingClassifier(DecisionTreeClassifier(max_depth=2), n_estimators=3, max_features=2,
                               random_state=0)),
        _fit(ClassifierChain(LogisticRegression(), order=[1, 0]), X, np.stack([Y2, Y2[::-1]], axis=1)),
        _fit(CalibratedClassifierCV(LogisticRegression(), cv=2), X, Y2),
        _fit(Pipeline([("pca", PCA(2)), ("s", StandardScaler()), ("lr", LogisticRegression())])),
    ]
    for i, parent in enumerate(parents):
        path = tmp_path / f"{i}.safetensors"
        aprender.save(parent, path)
        loaded = aprender.load(path)
        np.testing.assert_array_equal(loaded.predict(X), parent.predict(X))


#: Names without the trailing underscore that still hold fitted estimators.
_FITTED_PARAMS = ("steps", "transformer_list", "nn_fit")


def _holds_estimator(value: Any) -> bool:
    if isinstance(value, BaseEstimator):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_estimator(item) for item in value)
    return hasattr(value, "estimator") and isinstance(value.estimator, BaseEstimator)  # calibrated pairs


@pytest.mark.slow  # fits the whole instance-generator zoo (about 25 s alone; shared with test_all_estimators)
def test_every_fitted_meta_estimator_has_a_contract() -> None:
    """Fit the instance-generator zoo: a class holding a fitted estimator must have a contract entry."""
    sys.path.insert(0, str(Path(__file__).parent))
    from support.sklearn_instances import fitted, instances

    missing = set()
    for key in instances():
        try:
            est, _ = fitted(key)
        except Exception:  # what the generator cannot fit, aprender never sees fitted
            continue
        nested = [name for name, value in vars(est).items()
                  if (name.endswith("_") or name in _FITTED_PARAMS) and _holds_estimator(value)]
        if nested and contract_for(type(est)) is None:
            missing.add(f"{type(est).__name__} ({', '.join(nested)})")
    assert not missing, f"allow-listed classes hold fitted estimators but have no contract: {sorted(missing)}"


def test_contract_keys_are_allow_listed() -> None:
    from aprender.codec._registry import entry_for_key

    for key in CONTRACTS:
        assert entry_for_key(key).key == key


def test_an_iterative_imputer_step_fitted_on_other_columns_is_refused(tmp_path) -> None:
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer
    from sklearn.linear_model import BayesianRidge

    from aprender.exceptions import AprenderError

    rows = np.random.default_rng(0).normal(size=(40, 4))
    rows[::5, 1] = np.nan
    imputer = IterativeImputer(random_state=0, max_iter=2).fit(rows)
    path = tmp_path / "imputer.apr"
    aprender.save(imputer, path)
    assert np.array_equal(aprender.load(path).transform(rows), imputer.transform(rows))
    wider = BayesianRidge().fit(np.zeros((5, 7)), np.arange(5.0))
    imputer.imputation_sequence_[0] = imputer.imputation_sequence_[0]._replace(estimator=wider)
    aprender.save(imputer, path)
    with pytest.raises(AprenderError, match=r"imputation_sequence_\.0\.estimator"):
        aprender.load(path)
