"""Every entry of codec/_migrations.py's table, in each direction it has, with exact results.

Each case runs a node through :class:`Plan` between two scikit-learn versions and states
the parameters and attributes that must come out, or the :class:`IncompatibleVersion`
that must name the parameter and both versions. ``test_every_migration_has_a_case``
fails when an entry is added without a case. End-to-end tests below edit a real model's
stored versions and load it through :func:`from_state`.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn import (
    cluster,
    compose,
    discriminant_analysis,
    ensemble,
    impute,
    linear_model,
    manifold,
    multioutput,
    neural_network,
    preprocessing,
    semi_supervised,
    svm,
)

from aprender.codec import ModelState, from_state, to_state
from aprender.codec._migrations import MIGRATIONS, Plan, minor_version
from aprender.compose import ColumnTransformer
from aprender.exceptions import IncompatibleVersion, UnsupportedVersion
from aprender.linear_model import LogisticRegression
from aprender.preprocessing import StandardScaler

#: Also run under the oldest supported scikit-learn (.ci/run, docs/compatibility.md).
pytestmark = pytest.mark.lower_bound

RAISE = object()


@dataclass(frozen=True)
class Case:
    cls: type
    saved: str
    running: str
    params: dict[str, Any]
    expected: Any  # the parameters after the plan, or RAISE
    attrs: dict[str, Any] = field(default_factory=dict)
    expected_attrs: dict[str, Any] | None = None
    refused: str = ""  # the parameter an IncompatibleVersion names

    def __repr__(self) -> str:
        return f"{self.cls.__name__}-{self.saved}-to-{self.running}-{sorted(self.params.items())}"


THREE = {"classes_": np.array([0, 1, 2])}
TWO = {"classes_": np.array([0, 1])}

CASES = [
    # 1.7
    Case(linear_model.LinearRegression, "1.9.1", "1.6.1", {"tol": 1e-6, "fit_intercept": True},
         {"fit_intercept": True}),
    Case(linear_model.LinearRegression, "1.9.1", "1.6.1", {"tol": 1e-3}, RAISE, refused="tol"),
    Case(neural_network.MLPRegressor, "1.7.2", "1.6.1", {"loss": "squared_error"}, {}),
    Case(neural_network.MLPRegressor, "1.8.0", "1.6.1", {"loss": "poisson"}, RAISE, refused="loss"),
    Case(linear_model.RidgeCV, "1.6.1", "1.7.2", {"store_cv_values": "deprecated", "store_cv_results": None},
         {"store_cv_results": None}),
    Case(linear_model.RidgeClassifierCV, "1.6.1", "1.9.1", {"store_cv_values": True, "store_cv_results": None},
         {"store_cv_results": True}),
    Case(manifold.TSNE, "1.6.1", "1.9.1", {"n_iter": "deprecated", "max_iter": None}, {"max_iter": 1000}),
    Case(manifold.TSNE, "1.6.1", "1.7.2", {"n_iter": 500, "max_iter": None}, {"max_iter": 500}),
    Case(preprocessing.KBinsDiscretizer, "1.6.1", "1.9.1", {"n_bins": 5}, {"n_bins": 5, "quantile_method": "linear"}),
    Case(preprocessing.KBinsDiscretizer, "1.9.1", "1.6.1", {"quantile_method": "linear"}, {}),
    Case(preprocessing.KBinsDiscretizer, "1.9.1", "1.6.1", {"quantile_method": "averaged_inverted_cdf"}, RAISE,
         refused="quantile_method"),
    Case(compose.ColumnTransformer, "1.8.0", "1.6.1", {"force_int_remainder_cols": "deprecated"},
         {"force_int_remainder_cols": False}),
    # 1.8
    Case(linear_model.LogisticRegression, "1.6.1", "1.9.1", {"multi_class": "deprecated", "solver": "lbfgs"},
         {"solver": "lbfgs"}, attrs=THREE),
    Case(linear_model.LogisticRegression, "1.7.2", "1.8.0", {"multi_class": "ovr", "solver": "lbfgs"},
         {"solver": "lbfgs"}, attrs=TWO),
    Case(linear_model.LogisticRegression, "1.6.1", "1.9.1", {"multi_class": "deprecated", "solver": "liblinear"},
         RAISE, attrs=THREE, refused="multi_class"),
    Case(linear_model.LogisticRegressionCV, "1.6.1", "1.9.1", {"multi_class": "ovr"}, RAISE, attrs=THREE,
         refused="multi_class"),
    Case(linear_model.LogisticRegression, "1.6.1", "1.9.1", {"multi_class": "multinomial"}, RAISE, attrs=TWO,
         refused="multi_class"),
    Case(linear_model.LogisticRegression, "1.9.1", "1.7.2", {"penalty": "deprecated", "l1_ratio": 0.0},
         {"penalty": "l2", "l1_ratio": 0.0}),
    Case(linear_model.LogisticRegression, "1.8.0", "1.6.1", {"penalty": "deprecated", "l1_ratio": 1.0},
         {"penalty": "l1", "l1_ratio": 1.0}),
    Case(linear_model.LogisticRegressionCV, "1.9.1", "1.7.2", {"penalty": "deprecated", "l1_ratio": 0.5},
         {"penalty": "elasticnet", "l1_ratio": 0.5}),
    Case(ensemble.AdaBoostClassifier, "1.6.1", "1.9.1", {"algorithm": "deprecated"}, {}),
    Case(ensemble.AdaBoostClassifier, "1.7.2", "1.8.0", {"algorithm": "SAMME"}, {}),
    Case(ensemble.AdaBoostClassifier, "1.6.1", "1.9.1", {"algorithm": "SAMME.R"}, RAISE, refused="algorithm"),
    Case(cluster.Birch, "1.6.1", "1.8.0", {"copy": "deprecated", "n_clusters": 3}, {"n_clusters": 3}),
    Case(cluster.Birch, "1.7.2", "1.9.1", {"copy": False}, RAISE, refused="copy"),
    Case(linear_model.TheilSenRegressor, "1.6.1", "1.9.1", {"copy_X": "deprecated"}, {}),
    Case(semi_supervised.SelfTrainingClassifier, "1.6.1", "1.9.1", {"base_estimator": "deprecated",
                                                                     "estimator": None}, {"estimator": None}),
    Case(linear_model.SGDClassifier, "1.7.2", "1.8.0", {"eta0": 0.0, "learning_rate": "optimal"},
         {"eta0": 0.01, "learning_rate": "optimal"}),
    Case(linear_model.SGDOneClassSVM, "1.6.1", "1.9.1", {"eta0": 0.0, "learning_rate": "constant"}, RAISE,
         refused="eta0"),
    Case(impute.SimpleImputer, "1.7.2", "1.8.0", {}, {}, attrs={"_fit_dtype": np.dtype("float32")},
         expected_attrs={"_fit_dtype": np.dtype("float32"), "_fill_dtype": np.dtype("float32")}),
    Case(impute.SimpleImputer, "1.9.1", "1.6.1", {}, {},
         attrs={"_fit_dtype": np.dtype("float64"), "_fill_dtype": np.dtype("float64")},
         expected_attrs={"_fit_dtype": np.dtype("float64")}),
    Case(preprocessing.MaxAbsScaler, "1.8.0", "1.7.2", {"clip": False}, {}),
    Case(preprocessing.MaxAbsScaler, "1.8.0", "1.7.2", {"clip": True}, RAISE, refused="clip"),
    Case(preprocessing.SplineTransformer, "1.9.1", "1.6.1", {"handle_missing": "error"}, {}),
    Case(discriminant_analysis.QuadraticDiscriminantAnalysis, "1.8.0", "1.7.2",
         {"solver": "svd", "shrinkage": None, "covariance_estimator": None, "reg_param": 0.0}, {"reg_param": 0.0}),
    Case(discriminant_analysis.QuadraticDiscriminantAnalysis, "1.8.0", "1.7.2", {"solver": "eigen"}, RAISE,
         refused="solver"),
    # 1.9
    Case(compose.ColumnTransformer, "1.8.0", "1.9.1", {"force_int_remainder_cols": "deprecated"}, {}),
    Case(compose.ColumnTransformer, "1.6.1", "1.9.1", {"force_int_remainder_cols": True}, {}),
    Case(ensemble.GradientBoostingClassifier, "1.9.1", "1.8.0", {"criterion": "deprecated"},
         {"criterion": "friedman_mse"}),
    Case(ensemble.GradientBoostingRegressor, "1.9.1", "1.6.1", {"criterion": "squared_error"},
         {"criterion": "squared_error"}),
    Case(svm.SVC, "1.8.0", "1.9.1", {"probability": True}, {"probability": True},
         attrs={"_probA": np.ones(3)}, expected_attrs={"_probA": np.ones(3), "_effective_probability": True}),
    Case(svm.SVR, "1.6.1", "1.9.1", {}, {}, attrs={"_probA": np.ones(0)},
         expected_attrs={"_probA": np.ones(0), "_effective_probability": False}),
    Case(svm.SVC, "1.9.1", "1.8.0", {"probability": "deprecated"}, {"probability": False},
         attrs={"_effective_probability": False}, expected_attrs={}),
    Case(svm.NuSVC, "1.9.1", "1.6.1", {"probability": True}, {"probability": True},
         attrs={"_effective_probability": True}, expected_attrs={}),
    Case(svm.SVC, "1.9.1", "1.8.0", {"probability": False}, RAISE, attrs={"_effective_probability": True},
         refused="probability"),
    Case(linear_model.LassoCV, "1.6.1", "1.9.1", {"n_alphas": 100, "alphas": None}, {"alphas": 100}),
    Case(linear_model.ElasticNetCV, "1.7.2", "1.9.1", {"n_alphas": "deprecated", "alphas": "warn"},
         {"alphas": 100}),
    Case(linear_model.MultiTaskLassoCV, "1.6.1", "1.9.1", {"n_alphas": 50, "alphas": [0.1, 1.0]}, RAISE,
         refused="n_alphas"),
    Case(multioutput.ClassifierChain, "1.8.0", "1.9.1", {"base_estimator": "deprecated", "estimator": "LR"},
         {"estimator": "LR"}),
    Case(multioutput.RegressorChain, "1.6.1", "1.9.1", {"base_estimator": "LR", "estimator": None},
         {"estimator": "LR"}),
    Case(preprocessing.TargetEncoder, "1.9.1", "1.8.0", {"shuffle": "deprecated", "random_state": "deprecated"},
         {"shuffle": True, "random_state": None}),
]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_migration(case: Case) -> None:
    plan = Plan(case.saved, case.running)
    params, attrs = copy.deepcopy(case.params), copy.deepcopy(case.attrs)
    if case.expected is RAISE:
        with pytest.raises(IncompatibleVersion) as info:
            plan.apply(case.cls, params, attrs, "steps.0.clf")
        message = str(info.value)
        assert f"{case.cls.__name__}.{case.refused} at 'steps.0.clf'" in message
        assert f"scikit-learn {case.saved}" in message and f"scikit-learn {case.running}" in message
        assert (info.value.saved, info.value.running) == (case.saved, case.running)
        return
    assert plan.apply(case.cls, params, attrs, "") is True
    assert params == case.expected
    want = case.attrs if case.expected_attrs is None else case.expected_attrs
    assert attrs.keys() == want.keys()
    assert all(np.array_equal(attrs[k], v) for k, v in want.items())


def test_every_migration_has_a_case() -> None:
    for m in MIGRATIONS:
        for direction in ("forward", "backward"):
            if getattr(m, direction) is None:
                continue
            covered = [c for c in CASES if issubclass(c.cls, m.classes) and (
                minor_version(c.saved) < m.minor <= minor_version(c.running) if direction == "forward"
                else minor_version(c.running) < m.minor <= minor_version(c.saved))]
            assert covered, f"no case for the {direction} step of: {m.change}"


def test_docs_list_every_migration() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "compatibility.md").read_text()
    for m in MIGRATIONS:
        assert f"| {m.version} | {', '.join(c.__name__ for c in m.classes)} | {m.change} |" in text, m.change


def test_same_minor_version_and_unknown_versions_migrate_nothing() -> None:
    for saved in ("1.9.0", "1.9.1rc1", "unknown", None):
        params = {"multi_class": "ovr"}
        assert Plan(saved, "1.9.1").apply(linear_model.LogisticRegression, params, {}, "") is False
        assert params == {"multi_class": "ovr"}


def test_plan_applies_to_aprender_subclasses() -> None:
    params = {"criterion": "deprecated"}
    from aprender.ensemble import GradientBoostingClassifier

    assert Plan("1.9.1", "1.8.0").apply(GradientBoostingClassifier, params, {}, "") is True
    assert params == {"criterion": "friedman_mse"}


# -- end to end, through from_state ------------------------------------------------------------

def _claiming(state: ModelState, version: str) -> ModelState:
    meta = copy.deepcopy(state.meta)
    meta["versions"]["sklearn"] = version
    return ModelState(dict(state.tensors), meta)


def _logistic() -> LogisticRegression:
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0], [0.5, 2.5], [2.5, 0.5]])
    return LogisticRegression().fit(X, np.array([0, 1, 2, 0, 1, 2]))


AFTER_MULTI_CLASS = pytest.mark.skipif(minor_version(sklearn.__version__) < (1, 8),
                                       reason="multi_class is removed from scikit-learn 1.8 on")


@AFTER_MULTI_CLASS
def test_an_older_file_with_a_faithful_removed_parameter_loads() -> None:
    model = _logistic()
    state = _claiming(to_state(model), "1.6.1")
    state.meta["model"]["params"]["multi_class"] = "deprecated"
    with pytest.warns(UserWarning, match="saved under scikit-learn 1.6.1"):
        loaded = from_state(state)
    assert "multi_class" not in loaded.get_params()
    X = np.array([[1.0, 1.0], [2.0, 0.0]])
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))


@AFTER_MULTI_CLASS
def test_an_older_file_with_an_unfaithful_removed_parameter_names_it_and_both_versions() -> None:
    state = _claiming(to_state(_logistic()), "1.6.1")
    state.meta["model"]["params"]["multi_class"] = "ovr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(IncompatibleVersion, match=r"LogisticRegression\.multi_class: the stored value 'ovr'") as e:
            from_state(state)
    assert f"saved under scikit-learn 1.6.1 and cannot be loaded faithfully under scikit-learn {sklearn.__version__}" \
        in str(e.value)


def test_a_newer_file_that_this_version_rejects_raises_unsupported_version_not_type_error() -> None:
    state = _claiming(to_state(_logistic()), "1.99.0")
    state.meta["model"]["params"]["a_parameter_from_the_future"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(UnsupportedVersion) as info:
            from_state(state)
    assert isinstance(info.value, IncompatibleVersion) and not isinstance(info.value, TypeError)
    assert "scikit-learn 1.99.0" in str(info.value) and f"scikit-learn {sklearn.__version__}" in str(info.value)
    assert "a_parameter_from_the_future" in str(info.value)


def test_an_older_file_that_this_version_rejects_names_both_versions() -> None:
    major, minor = minor_version(sklearn.__version__)
    older = f"{major}.{minor - 1}.0"
    state = _claiming(to_state(_logistic()), older)
    state.meta["model"]["params"]["a_parameter_of_the_past"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(IncompatibleVersion, match="a_parameter_of_the_past") as info:
            from_state(state)
    assert (info.value.saved, info.value.running) == (older, sklearn.__version__)


def test_a_file_of_the_same_version_with_a_bad_parameter_stays_a_format_error() -> None:
    state = to_state(_logistic())
    state.meta["model"]["params"]["a_parameter_from_the_future"] = 1
    with pytest.raises(Exception) as info:
        from_state(state)
    assert type(info.value).__name__ == "FormatError"


def test_remainder_columns_roundtrip_as_the_plain_list_of_indices() -> None:
    # scikit-learn 1.6 keeps them in a _RemainderColsList (saved as the list it holds); later ones in a list
    frame = pd.DataFrame({"a": [0.0, 1.0, 2.0], "b": [1.0, 0.0, 1.0], "c": [5.0, 6.0, 7.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ct = ColumnTransformer([("s", StandardScaler(), ["a"])], remainder="passthrough").fit(frame)
        stored = list(ct.transformers_[-1][2])
    loaded = from_state(to_state(ct))
    assert type(loaded.transformers_[-1][2]) is list and loaded.transformers_[-1][2] == stored
    assert np.array_equal(loaded.transform(frame), ct.transform(frame))


def test_a_class_this_scikit_learn_does_not_have_names_both_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    # As a 1.9 file holding ClassicalMDS (new in 1.8) meets scikit-learn 1.6: the class is in
    # aprender's table, but the running scikit-learn has no such class.
    from aprender.codec import _table
    from aprender.exceptions import UntrustedTypeError

    key = "sklearn.manifold.FutureEmbedding"
    monkeypatch.setitem(_table.GENERIC, key, ("sklearn.manifold", "FutureEmbedding"))
    state = _claiming(to_state(_logistic()), "1.99.0")
    state.meta["model"]["class"] = key
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(IncompatibleVersion, match=f"class {key} at 'model' does not exist") as info:
            from_state(state)
    assert (info.value.saved, info.value.running) == ("1.99.0", sklearn.__version__)
    state.meta["versions"]["sklearn"] = sklearn.__version__  # the same version: just not on the allow-list
    with pytest.raises(UntrustedTypeError):
        from_state(state)
