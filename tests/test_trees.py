"""Trees, forests and boosting: exact roundtrips, packed storage, fidelity of internal state."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cases_trees import CASES
from sklearn import ensemble as sk_ensemble
from sklearn import tree as sk_tree
from sklearn._loss import loss as sk_loss
from sklearn.base import is_classifier
from threadpoolctl import threadpool_limits
from zoo import assert_identical_outputs, diabetes, iris

import aprender
from aprender.codec import ModelType, to_state
from aprender.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from aprender.format import safetensors
from aprender.tree import DecisionTreeClassifier, DecisionTreeRegressor


@pytest.fixture(autouse=True)
def _one_openmp_thread():
    """HistGradientBoosting's OpenMP threads spin and crawl on a loaded 2-core CI box."""
    with threadpool_limits(1, user_api="openmp"):
        yield


def _roundtrip(model):
    return safetensors.loads(safetensors.dumps(model))


def _tree_arrays(tree) -> dict:
    state = tree.__getstate__()
    return {"max_depth": state["max_depth"], "nodes": state["nodes"].tobytes(), "values": state["values"].tobytes(),
            "n_classes": tree.n_classes.tolist(), "n_features": tree.n_features, "n_outputs": tree.n_outputs}


def _flat_trees(model) -> list:
    estimators = model.estimators_
    return list(estimators.ravel()) if isinstance(estimators, np.ndarray) else list(estimators)


def _assert_same_trees(original, loaded) -> None:
    """Same tree classes, hyperparameters, fitted attributes and node bytes, tree by tree."""
    a, b = _flat_trees(original), _flat_trees(loaded)
    assert np.shape(original.estimators_) == np.shape(loaded.estimators_)
    for x, y in zip(a, b, strict=True):
        assert type(x) is type(y)
        px, py = x.get_params(), y.get_params()
        rs_x, rs_y = px.pop("random_state"), py.pop("random_state")
        assert px == py
        if isinstance(rs_x, np.random.RandomState):
            assert all(np.array_equal(u, v) for u, v in zip(rs_x.get_state(), rs_y.get_state(), strict=True))
        else:
            assert rs_x == rs_y and type(rs_x) is type(rs_y)
        assert _tree_arrays(x.tree_) == _tree_arrays(y.tree_)
        assert x.n_features_in_ == y.n_features_in_ and x.max_features_ == y.max_features_


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_roundtrip_is_bit_identical(case) -> None:
    model, X = case.make()
    loaded = _roundtrip(model)
    assert type(loaded) is type(model)
    assert_identical_outputs(model, loaded, X)
    if hasattr(model, "apply"):  # leaf indices of every tree
        assert np.array_equal(model.apply(X), loaded.apply(X))
    if hasattr(model, "estimators_"):
        _assert_same_trees(model, loaded)
    if hasattr(model, "tree_"):
        assert _tree_arrays(model.tree_) == _tree_arrays(loaded.tree_)
        assert (model.decision_path(X) != loaded.decision_path(X)).nnz == 0


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_saving_twice_gives_identical_bytes(case) -> None:
    model, _ = case.make()
    first = safetensors.dumps(model)
    assert safetensors.dumps(model) == first
    assert safetensors.dumps(case.fresh()[0]) == first  # a refit with the same seed too
    assert safetensors.dumps(_roundtrip(model)) == first  # and the loaded model


def test_decision_tree_tensors_are_the_node_fields() -> None:
    model = DecisionTreeClassifier(random_state=0).fit(*iris())
    tensors = to_state(model).tensors
    fields = ["feature", "impurity", "left_child", "missing_go_to_left", "n_node_samples", "right_child",
              "threshold", "values", "weighted_n_node_samples"]
    assert sorted(tensors) == ["classes_"] + [f"tree_.{f}" for f in fields]
    assert np.array_equal(tensors["tree_.left_child"], model.tree_.children_left)
    assert np.array_equal(tensors["tree_.threshold"], model.tree_.threshold)
    assert tensors["tree_.values"].shape == (model.tree_.node_count, 1, 3)
    assert to_state(model).model_type == ModelType.DECISION_TREE


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda n: RandomForestClassifier(n_estimators=n, max_depth=3, random_state=0).fit(*iris()), "n_estimators"),
        (lambda n: GradientBoostingClassifier(n_estimators=n, max_depth=2, random_state=0).fit(*iris()),
         "n_estimators"),
        (lambda n: HistGradientBoostingClassifier(max_iter=n, early_stopping=False, random_state=0).fit(*iris()),
         "max_iter"),
    ],
    ids=["forest", "gradient-boosting", "hist-gradient-boosting"],
)
def test_tensor_count_does_not_grow_with_the_number_of_trees(make, key) -> None:
    small, large = to_state(make(3)), to_state(make(30))
    assert sorted(small.tensors) == sorted(large.tensors)
    assert len(large.tensors) <= 25


def test_forest_tensors_are_packed_with_offsets() -> None:
    model = RandomForestRegressor(n_estimators=7, max_depth=4, random_state=0).fit(*diabetes())
    tensors = to_state(model).tensors
    offsets = tensors["estimators_.tree_.node_offsets"]
    counts = [t.tree_.node_count for t in model.estimators_]
    assert offsets.tolist() == np.concatenate([[0], np.cumsum(counts)]).tolist()
    assert tensors["estimators_.tree_.threshold"].shape == (sum(counts),)
    assert tensors["estimators_.per_tree.random_state"].tolist() == [t.random_state for t in model.estimators_]
    second = model.estimators_[1].tree_
    begin, end = offsets[1], offsets[2]
    assert np.array_equal(tensors["estimators_.tree_.left_child"][begin:end], second.children_left)
    assert np.array_equal(tensors["estimators_.tree_.values"][begin:end], second.value)


@pytest.mark.parametrize(
    "model",
    [
        sk_ensemble.RandomForestClassifier(n_estimators=8, max_depth=4, random_state=0),
        sk_ensemble.GradientBoostingClassifier(n_estimators=8, max_depth=2, random_state=0),
        sk_ensemble.HistGradientBoostingClassifier(max_iter=8, random_state=0),
        sk_tree.DecisionTreeClassifier(max_depth=4, random_state=0),
    ],
    ids=lambda m: type(m).__name__,
)
def test_plain_sklearn_models_roundtrip_as_sklearn(model, tmp_path) -> None:
    X, y = iris()
    model.fit(X, y)
    path = tmp_path / "model.safetensors"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert type(loaded) is type(model)
    assert_identical_outputs(model, loaded, X)


def test_plain_sklearn_forest_loads_as_the_aprender_twin(tmp_path) -> None:
    model = sk_ensemble.RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(*diabetes())
    path = tmp_path / "forest.safetensors"
    aprender.save(model, path)
    loaded = RandomForestRegressor.load_safetensors(path)
    assert type(loaded) is RandomForestRegressor
    assert np.array_equal(loaded.predict(diabetes()[0]), model.predict(diabetes()[0]))


def test_multi_output_trees_and_forests() -> None:
    X, y = iris()
    Y = np.c_[y, y % 2]
    for model in (DecisionTreeClassifier(random_state=0), RandomForestClassifier(n_estimators=5, random_state=0)):
        model.fit(X, Y)
        loaded = _roundtrip(model)
        assert np.array_equal(model.predict(X), loaded.predict(X))
        for a, b in zip(model.predict_proba(X), loaded.predict_proba(X), strict=True):
            assert np.array_equal(a, b)
    regressor = RandomForestRegressor(n_estimators=4, max_depth=4, random_state=0).fit(X, np.c_[X[:, 0], X[:, 1]])
    assert np.array_equal(regressor.predict(X), _roundtrip(regressor).predict(X))


def test_gradient_boosting_trees_share_the_ensemble_rng() -> None:
    model = GradientBoostingRegressor(n_estimators=5, subsample=0.7, random_state=0).fit(*diabetes())
    loaded = _roundtrip(model)
    assert all(tree.random_state is loaded._rng for tree in loaded.estimators_.ravel())
    assert all(np.array_equal(a, b) for a, b in zip(model._rng.get_state(), loaded._rng.get_state(), strict=True))


@pytest.mark.parametrize(
    ("model", "grow"),
    [
        (RandomForestClassifier(n_estimators=5, max_depth=3, warm_start=True, random_state=0), "n_estimators"),
        (GradientBoostingClassifier(n_estimators=5, subsample=0.8, warm_start=True, random_state=0), "n_estimators"),
        (HistGradientBoostingClassifier(max_iter=5, max_features=0.5, warm_start=True, random_state=0), "max_iter"),
    ],
    ids=lambda m: type(m).__name__ if not isinstance(m, str) else m,
)
def test_warm_start_continues_exactly_after_loading(model, grow) -> None:
    """The internal state (rngs, bin mapper, loss, init) is restored, not only what predicts."""
    X, y = iris()
    model.fit(X, y)
    loaded = _roundtrip(model)
    for est in (model, loaded):
        est.set_params(**{grow: 10}).fit(X, y)
    assert_identical_outputs(model, loaded, X)


@pytest.mark.parametrize("scoring", ["r2", None, "loss"])
def test_hist_gradient_boosting_early_stopping_state(scoring) -> None:
    X, y = diabetes()
    model = HistGradientBoostingRegressor(max_iter=8, early_stopping=True, scoring=scoring, random_state=0).fit(X, y)
    loaded = _roundtrip(model)
    assert_identical_outputs(model, loaded, X)
    assert "_raw_predict" not in vars(loaded)  # the bound method early stopping leaves behind is dropped
    assert repr(loaded._scorer) == repr(model._scorer)
    assert np.array_equal(loaded.validation_score_, model.validation_score_)


@pytest.mark.parametrize(
    "model",
    [
        GradientBoostingRegressor(loss="absolute_error", n_estimators=3),
        GradientBoostingRegressor(loss="quantile", alpha=0.3, n_estimators=3),
        GradientBoostingRegressor(loss="huber", alpha=0.8, n_estimators=3),
        GradientBoostingClassifier(loss="exponential", n_estimators=3),
        HistGradientBoostingRegressor(loss="poisson", max_iter=3),
        HistGradientBoostingRegressor(loss="gamma", max_iter=3),
        HistGradientBoostingRegressor(loss="quantile", quantile=0.7, max_iter=3),
    ],
    ids=lambda m: f"{type(m).__name__}-{m.loss}",
)
def test_every_loss_comes_back_configured(model) -> None:
    X, y = diabetes()
    model.fit(X, y > 140 if is_classifier(model) else y)
    loaded = _roundtrip(model)
    assert type(loaded._loss) is type(model._loss)
    closs = ("quantile", "delta", "power")
    for name in closs:
        assert getattr(loaded._loss.closs, name, None) == getattr(model._loss.closs, name, None)
    assert loaded._loss.constant_hessian == model._loss.constant_hessian
    assert_identical_outputs(model, loaded, X)


def test_huber_delta_is_the_fitted_one() -> None:
    model = GradientBoostingRegressor(loss="huber", n_estimators=3).fit(*diabetes())
    assert isinstance(model._loss, sk_loss.HuberLoss) and model._loss.closs.delta != 0.5
    assert _roundtrip(model)._loss.closs.delta == model._loss.closs.delta


def test_hist_gradient_boosting_internals_are_named() -> None:
    model = HistGradientBoostingClassifier(max_iter=6, random_state=0).fit(*iris())
    state = to_state(model)
    assert {"_predictors.value", "_predictors.left", "_predictors.node_offsets", "_predictors.raw_left_cat_bitsets",
            "_bin_mapper.bin_thresholds_", "_bin_mapper.bin_threshold_offsets",
            "_baseline_prediction"} <= set(state.tensors)
    loaded = _roundtrip(model)
    assert loaded._label_encoder.classes_ is loaded.classes_
    assert loaded._feature_subsample_rng.bit_generator.state == model._feature_subsample_rng.bit_generator.state
    for a, b in zip(model._bin_mapper.bin_thresholds_, loaded._bin_mapper.bin_thresholds_, strict=True):
        assert np.array_equal(a, b)
    for row_a, row_b in zip(model._predictors, loaded._predictors, strict=True):
        for a, b in zip(row_a, row_b, strict=True):
            assert a.nodes.tobytes() == b.nodes.tobytes()


def _categorical_frames():
    X, y = diabetes()
    codes = (X[:, 1] > 0) * 2.0 + (X[:, 0] > 0)
    numeric = np.c_[X[:, 2:6], codes]
    numeric[::9, 4] = np.nan
    labels = np.array(["low", "mid", "high", "top"], dtype=object)[codes.astype(int)]
    labels[::11] = None
    frame = pd.DataFrame({"bmi": X[:, 2], "bp": X[:, 3], "group": pd.Categorical(labels)})
    named = frame.assign(group=frame["group"].astype(object))
    return [(numeric, {"categorical_features": [4]}), (frame, {}), (named, {"categorical_features": ["group"]})], y


@pytest.mark.parametrize("index", [0, 1, 2], ids=["ndarray-codes", "frame-from-dtype", "frame-by-name"])
def test_hist_gradient_boosting_with_categorical_features(index) -> None:
    """The fitted preprocessor is rebuilt from the stored categories and transforms identically."""
    frames, y = _categorical_frames()
    X, options = frames[index]
    model = HistGradientBoostingClassifier(max_iter=6, random_state=0, **options).fit(X, y > 140)
    assert len(model._predictors[0][0].raw_left_cat_bitsets)  # a categorical split exists
    loaded = _roundtrip(model)
    assert_identical_outputs(model, loaded, X)
    a, b = model._preprocessor.transform(X), loaded._preprocessor.transform(X)
    assert np.array_equal(a, b, equal_nan=True)
    assert list(getattr(loaded, "feature_names_in_", [])) == list(getattr(model, "feature_names_in_", []))


def test_downcast_rounds_thresholds_and_values_only() -> None:
    """dtype="float32" is lossy for trees: thresholds round, so samples near a split may move."""
    X, y = diabetes()
    model = RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0).fit(X, y)
    data = safetensors.dumps(model, dtype="float32")
    assert len(data) < len(safetensors.dumps(model))
    loaded = safetensors.loads(data)
    for a, b in zip(model.estimators_, loaded.estimators_, strict=True):
        assert b.tree_.threshold.dtype == np.float64
        assert np.array_equal(b.tree_.threshold, a.tree_.threshold.astype(np.float32))
        assert np.array_equal(b.tree_.children_left, a.tree_.children_left)
        assert np.array_equal(b.tree_.value, a.tree_.value.astype(np.float32))


def test_regressor_tree_loads_through_its_class(tmp_path) -> None:
    model = DecisionTreeRegressor(max_depth=3).fit(*diabetes())
    path = tmp_path / "tree.safetensors"
    model.save_safetensors(path)
    assert np.array_equal(DecisionTreeRegressor.load_safetensors(path).predict(diabetes()[0]),
                          model.predict(diabetes()[0]))
