"""Hostile tree files: every crafted inconsistency is a FormatError before scikit-learn sees it.

scikit-learn walks tree nodes in C without bounds checks, so a bad child index or a
wrong depth would read or write out of bounds (or loop forever on a cycle). Each test
edits a real model's ModelState, writes SafeTensors bytes and loads them back.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest
from threadpoolctl import threadpool_limits
from zoo import diabetes, iris

from aprender.codec import ModelState, to_state
from aprender.ensemble import (
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
)
from aprender.exceptions import FormatError, UntrustedTypeError
from aprender.format import safetensors
from aprender.tree import DecisionTreeClassifier

Edit = Callable[[dict, dict], None]


@pytest.fixture(autouse=True)
def _one_openmp_thread():
    with threadpool_limits(1, user_api="openmp"):
        yield


@pytest.fixture(scope="module")
def tree():
    return DecisionTreeClassifier(random_state=0).fit(*iris())


@pytest.fixture(scope="module")
def forest():
    return RandomForestClassifier(n_estimators=6, max_depth=4, random_state=0).fit(*iris())


@pytest.fixture(scope="module")
def boosting():
    return GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0).fit(*iris())


@pytest.fixture(scope="module")
def hist():
    with threadpool_limits(1, user_api="openmp"):
        return HistGradientBoostingRegressor(max_iter=5, random_state=0).fit(*diabetes())


def _crafted(model, edit: Edit) -> bytes:
    state = to_state(model)
    meta, tensors = copy.deepcopy(state.meta), {k: v.copy() for k, v in state.tensors.items()}
    edit(meta, tensors)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


def _error(model, edit: Edit, error: type = FormatError) -> str:
    with pytest.raises(error) as info:
        safetensors.loads(_crafted(model, edit))
    return str(info.value)


def _item(node: dict, key: str) -> dict:
    """The value of ``key`` in an encoded dict node."""
    return next(pair for pair in node["items"] if pair[0] == key)


def _internal(left: np.ndarray, begin: int = 0, end: int | None = None) -> int:
    """An internal node other than the root, as an index into ``left``."""
    return begin + 1 + int(np.argmax(left[begin + 1:end] >= 0))


# -- a single decision tree --------------------------------------------------------------


def test_child_index_past_the_node_count(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.left_child"][0] = tree.tree_.node_count + 5

    message = _error(tree, edit)
    assert "at 'tree_': tree 0 node 0: left_child" in message
    assert f"outside the tree's {tree.tree_.node_count} nodes" in message


def test_negative_child_index(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.right_child"][0] = -7

    assert "tree 0 node 0: right_child -7 does not come after its parent" in _error(tree, edit)


def test_cycle_back_to_the_root(tree) -> None:
    node = _internal(tree.tree_.children_left)

    def edit(meta, tensors):
        tensors["tree_.right_child"][node] = 0

    message = _error(tree, edit)
    assert f"tree 0 node {node}: right_child 0 does not come after its parent" in message and "cycle" in message


def test_shared_subtree_is_not_a_tree(tree) -> None:
    node = _internal(tree.tree_.children_left)

    def edit(meta, tensors):  # both children the same node: two parents for it, an orphan elsewhere
        tensors["tree_.right_child"][node] = tensors["tree_.left_child"][node]

    child = tree.tree_.children_left[node]
    assert f"tree 0 node {child} has 2 parents: the nodes do not form a tree" in _error(tree, edit)


def test_half_marked_leaf(tree) -> None:
    leaf = int(np.argmax(tree.tree_.children_left == -1))

    def edit(meta, tensors):
        tensors["tree_.right_child"][leaf] = leaf + 1

    assert f"tree 0 node {leaf}: left_child -1 and right_child {leaf + 1} disagree" in _error(tree, edit)


def test_leaf_with_a_feature(tree) -> None:
    leaf = int(np.argmax(tree.tree_.children_left == -1))

    def edit(meta, tensors):
        tensors["tree_.feature"][leaf] = 1

    assert f"tree 0 node {leaf} is a leaf but has feature 1" in _error(tree, edit)


def test_feature_index_out_of_range(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.feature"][0] = 4

    assert "tree 0 node 0: feature index 4 is outside [0, 4)" in _error(tree, edit)


def test_values_shape_must_match_nodes_outputs_and_classes(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.values"] = tensors["tree_.values"][:, :, :2].copy()

    assert f"'values' must be float64 of shape ({tree.tree_.node_count}, 1, 3)" in _error(tree, edit)


def test_values_missing_a_node(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.values"] = tensors["tree_.values"][1:].copy()

    assert "'values' must be float64 of shape" in _error(tree, edit)


def test_node_field_of_the_wrong_dtype(tree) -> None:
    def edit(meta, tensors):
        tensors["tree_.left_child"] = tensors["tree_.left_child"].astype(np.int32)

    assert "node field 'left_child' must be a 1-d int64 array, found int32" in _error(tree, edit)


@pytest.mark.parametrize("doubling", [True, False], ids=["by-doubling", "by-level"])
def test_max_depth_understated(tree, doubling, monkeypatch) -> None:
    """decision_path sizes its buffer by max_depth: a smaller claim would overflow it."""
    from aprender.codec.trees import _structure as tree_structure

    monkeypatch.setattr(tree_structure, "DOUBLING_MAX_NODES", tree.tree_.node_count if doubling else 0)

    def edit(meta, tensors):
        meta["model"]["attrs"]["tree_"]["max_depth"] = 1

    assert f"max_depth is 1 but its deepest node is at depth {tree.tree_.max_depth}" in _error(tree, edit)


def test_node_depths_agree_both_ways(forest, monkeypatch) -> None:
    """Small ensembles find depths by pointer doubling, large ones level by level: the same depths."""
    from aprender.codec.trees import _structure as tree_structure
    from aprender.codec.trees._structure import Layout, node_depths

    trees = [e.tree_ for e in forest.estimators_]
    offsets = np.r_[0, np.cumsum([t.node_count for t in trees])].astype(np.int64)
    left = np.concatenate([t.children_left for t in trees]).astype(np.int64)
    right = np.concatenate([t.children_right for t in trees]).astype(np.int64)
    layout = Layout(offsets, (len(trees),))
    expected = np.concatenate([_sklearn_depths(t) for t in trees])
    np.testing.assert_array_equal(node_depths(layout, left != -1, (left, right)), expected)  # by doubling
    monkeypatch.setattr(tree_structure, "DOUBLING_MAX_NODES", 0)
    np.testing.assert_array_equal(node_depths(layout, left != -1, (left, right)), expected)  # by level


def _sklearn_depths(tree) -> np.ndarray:
    depth = np.zeros(tree.node_count, dtype=np.int64)
    for i in range(tree.node_count):  # parents come first
        for child in (tree.children_left[i], tree.children_right[i]):
            if child != -1:
                depth[child] = depth[i] + 1
    return depth


def test_tree_and_estimator_disagree_on_features(tree) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["n_features_in_"] = 3

    assert "n_features_in_ is 3 but the trees were built for 4 features" in _error(tree, edit)


def test_classes_do_not_match_the_tree(tree) -> None:
    def edit(meta, tensors):
        tensors["classes_"] = tensors["classes_"][:2].copy()

    assert "classes_ of output 0 must be an array of 3 labels" in _error(tree, edit)


def test_absurd_output_count_is_not_allocated(tree) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["tree_"]["n_outputs"] = 2**40
        meta["model"]["attrs"]["tree_"]["n_classes"] = [3] * 4

    assert "'n_outputs' must be a positive int below 2**31, found 1099511627776" in _error(tree, edit)


# -- packed forests --------------------------------------------------------------------


def test_forest_child_index_names_tree_and_node(forest) -> None:
    offsets = to_state(forest).tensors["estimators_.tree_.node_offsets"]
    begin, end = int(offsets[3]), int(offsets[4])

    def edit(meta, tensors):
        tensors["estimators_.tree_.left_child"][begin] = end - begin

    assert f"at 'estimators_': tree 3 node 0: left_child {end - begin} is outside the tree's" in _error(forest, edit)


def test_forest_cycle_inside_a_later_tree(forest) -> None:
    offsets = to_state(forest).tensors["estimators_.tree_.node_offsets"]
    node = _internal(forest.estimators_[2].tree_.children_left)

    def edit(meta, tensors):
        tensors["estimators_.tree_.left_child"][int(offsets[2]) + node] = node

    assert f"tree 2 node {node}: left_child {node} does not come after its parent" in _error(forest, edit)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o.__setitem__(2, o[3] + 1), "'node_offsets' must increase (every tree needs a root node): entry 2"),
        (lambda o: o.__setitem__(-1, o[-1] - 1), "'node_offsets' must run from 0 to"),
        (lambda o: o.__setitem__(0, 1), "'node_offsets' must run from 0 to"),
    ],
    ids=["decreasing", "short", "not-from-zero"],
)
def test_forest_offsets_monotonic_and_in_bounds(forest, change, message) -> None:
    def edit(meta, tensors):
        change(tensors["estimators_.tree_.node_offsets"])

    assert message in _error(forest, edit)


def test_forest_offsets_of_the_wrong_length(forest) -> None:
    def edit(meta, tensors):
        tensors["estimators_.tree_.node_offsets"] = tensors["estimators_.tree_.node_offsets"][:-1].copy()

    assert "'node_offsets' must be int64 of shape (7,)" in _error(forest, edit)


def test_forest_per_tree_random_states_must_cover_every_tree(forest) -> None:
    def edit(meta, tensors):
        tensors["estimators_.per_tree.random_state"] = tensors["estimators_.per_tree.random_state"][:3].copy()

    assert "per-tree 'random_state' must be int64 of shape (6,)" in _error(forest, edit)


def test_forest_per_tree_values_are_validated_hyperparameters(forest) -> None:
    def edit(meta, tensors):
        tensors["estimators_.per_tree.random_state"][4] = -3

    assert "invalid hyperparameters for sklearn.tree.DecisionTreeClassifier" in _error(forest, edit)


def test_forest_values_must_match_its_class_count(forest) -> None:
    def edit(meta, tensors):  # one class layout for all trees
        _item(_item(meta["model"]["attrs"]["estimators_"], "tree_")[1], "n_classes")[1] = [2]

    assert "'values' must be float64 of shape" in _error(forest, edit)


def test_forest_classes_must_match_its_trees(forest) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["n_classes_"] = 4

    assert "n_classes_ is 4 but the trees have [3] classes" in _error(forest, edit)


def test_classifier_forest_cannot_hold_regression_trees(forest) -> None:
    def edit(meta, tensors):
        _item(meta["model"]["attrs"]["estimators_"], "class")[1] = "sklearn.tree.DecisionTreeRegressor"

    assert "a classifier forest cannot hold sklearn.tree.DecisionTreeRegressor" in _error(forest, edit)


def test_packed_class_must_be_allow_listed(forest) -> None:
    def edit(meta, tensors):
        _item(meta["model"]["attrs"]["estimators_"], "class")[1] = "os.system"

    assert "os.system" in _error(forest, edit, UntrustedTypeError)


def test_packed_trees_must_be_trees(forest) -> None:
    def edit(meta, tensors):
        _item(meta["model"]["attrs"]["estimators_"], "class")[1] = "sklearn.ensemble.RandomForestClassifier"

    assert "packed estimators must be decision trees" in _error(forest, edit)


def test_packed_tree_attributes_cannot_shadow_methods(forest) -> None:
    def edit(meta, tensors):
        _item(meta["model"]["attrs"]["estimators_"], "attrs")[1]["items"].append(["predict", 1])

    assert "fitted attribute 'predict' would shadow" in _error(forest, edit)


# -- gradient boosting -----------------------------------------------------------------


def test_boosting_grid_must_match_trees_per_iteration(boosting) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["n_trees_per_iteration_"] = 2

    assert "n_estimators_ and n_trees_per_iteration_ must match it" in _error(boosting, edit)


def test_boosting_grid_shape_must_match_the_trees(boosting) -> None:
    def edit(meta, tensors):  # 12 trees read as a 3 x 4 grid: column 3 would write past the raw predictions
        _item(meta["model"]["attrs"]["estimators_"], "shape")[1] = [3, 4]
        meta["model"]["attrs"]["n_estimators_"] = 3
        meta["model"]["attrs"]["n_trees_per_iteration_"] = 4

    assert "3 classes need 3 trees per iteration, found 4" in _error(boosting, edit)


def test_boosting_init_estimator_must_fit_the_classes(boosting) -> None:
    def edit(meta, tensors):
        init = meta["model"]["attrs"]["init_"]
        init["attrs"]["n_classes_"] = 2
        tensors["init_.classes_"] = tensors["init_.classes_"][:2].copy()
        tensors["init_.class_prior_"] = tensors["init_.class_prior_"][:2].copy()

    assert "init_ must be a classifier fitted on the same 3 classes" in _error(boosting, edit)


def test_boosting_loss_must_fit_the_classes(boosting) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["_loss"] = {"__t__": "sklearn_loss", "class": "HalfBinomialLoss", "options": {},
                                           "constant_hessian": False}

    assert "loss HalfBinomialLoss does not fit 3 classes" in _error(boosting, edit)


def test_unknown_loss_class(boosting) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["_loss"]["class"] = "builtins.eval"

    assert "unknown loss 'builtins.eval'" in _error(boosting, edit)


# -- histogram gradient boosting -----------------------------------------------------------


def _first_split(hist) -> int:
    return int(np.argmax(hist._predictors[0][0].nodes["is_leaf"] == 0))


def test_hist_child_index_out_of_range(hist) -> None:
    size = hist._predictors[0][0].nodes.shape[0]

    def edit(meta, tensors):
        tensors["_predictors.right"][0] = size

    assert f"at '_predictors': predictor (0, 0) node 0: right {size} is outside the tree's {size} nodes" in (
        _error(hist, edit))


def test_hist_cycle(hist) -> None:
    node = 1 + int(np.argmax(hist._predictors[0][0].nodes["is_leaf"][1:] == 0))

    def edit(meta, tensors):
        tensors["_predictors.left"][node] = 0

    assert f"predictor (0, 0) node {node}: left 0 does not come after its parent" in _error(hist, edit)


def test_hist_feature_index_out_of_range(hist) -> None:
    def edit(meta, tensors):
        tensors["_predictors.feature_idx"][_first_split(hist)] = 10

    assert "feature_idx 10 is outside [0, 10)" in _error(hist, edit)


def test_hist_leaf_flag_must_be_boolean(hist) -> None:
    def edit(meta, tensors):
        tensors["_predictors.is_leaf"][0] = 2

    assert "predictor (0, 0) node 0: is_leaf must be 0 or 1, found 2" in _error(hist, edit)


def test_hist_depth_field_must_match_the_tree(hist) -> None:
    def edit(meta, tensors):
        tensors["_predictors.depth"][0] = 3

    assert "predictor (0, 0) node 0: depth field says 3, the node is at depth 0" in _error(hist, edit)


def test_hist_bin_threshold_past_the_bins(hist) -> None:
    node = _first_split(hist)
    feature = int(hist._predictors[0][0].nodes["feature_idx"][node])
    bins = int(hist._bin_mapper.n_bins_non_missing_[feature])

    def edit(meta, tensors):
        tensors["_predictors.bin_threshold"][node] = bins

    assert f"bin_threshold {bins} is past feature {feature}'s {bins} non-missing bins" in _error(hist, edit)


def test_hist_threshold_must_be_the_bin_threshold(hist) -> None:
    node = _first_split(hist)

    def edit(meta, tensors):
        tensors["_predictors.num_threshold"][node] += 1.0

    assert f"predictor (0, 0) node {node}: num_threshold" in _error(hist, edit)


def test_hist_categorical_split_on_a_numerical_feature(hist) -> None:
    def edit(meta, tensors):
        tensors["_predictors.is_categorical"][_first_split(hist)] = 1

    assert "which the bin mapper does not mark categorical" in _error(hist, edit)


def test_hist_categorical_feature_needs_category_thresholds(hist) -> None:
    feature = int(hist._predictors[0][0].nodes["feature_idx"][_first_split(hist)])

    def edit(meta, tensors):
        tensors["_bin_mapper.is_categorical_"][feature] = 1

    assert f"feature {feature} has" in _error(hist, edit)


def test_hist_categorical_bitset_index_out_of_range(hist) -> None:
    node = _first_split(hist)
    feature = int(hist._predictors[0][0].nodes["feature_idx"][node])

    def edit(meta, tensors):  # a consistent categorical feature, and a split whose bitset does not exist
        offsets, flat = tensors["_bin_mapper.bin_threshold_offsets"], tensors["_bin_mapper.bin_thresholds_"]
        begin, end = offsets[feature], offsets[feature + 1]
        categories = np.arange(tensors["_bin_mapper.n_bins_non_missing_"][feature], dtype=np.float64)
        tensors["_bin_mapper.bin_thresholds_"] = np.concatenate([flat[:begin], categories, flat[end:]])
        offsets[feature + 1:] += categories.shape[0] - (end - begin)
        tensors["_bin_mapper.is_categorical_"][feature] = 1
        tensors["_predictors.is_categorical"][node] = 1

    assert f"predictor (0, 0) node {node}: bitset_idx 0 is outside the predictor's 0 bitsets" in _error(hist, edit)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda o: o.__setitem__(3, o[2] - 1), "'bin_threshold_offsets' must never decrease: entry 2"),
        (lambda o: o.__setitem__(-1, o[-1] + 1), "'bin_threshold_offsets' must run from 0 to"),
        (lambda o: o.__setitem__(2, o[2] + 1), "bin thresholds, its"),
    ],
    ids=["decreasing", "past-the-end", "wrong-count"],
)
def test_hist_bin_threshold_offsets(hist, change, message) -> None:
    def edit(meta, tensors):
        change(tensors["_bin_mapper.bin_threshold_offsets"])

    assert message in _error(hist, edit)


def test_hist_bin_counts_beyond_n_bins(hist) -> None:
    def edit(meta, tensors):
        tensors["_bin_mapper.n_bins_non_missing_"][0] = 300

    assert "feature 0 claims 300 non-missing bins; n_bins is 256" in _error(hist, edit)


def test_hist_node_offsets(hist) -> None:
    def edit(meta, tensors):
        tensors["_predictors.node_offsets"][1] = 0

    assert "'node_offsets' must increase (every tree needs a root node): entry 0" in _error(hist, edit)


def test_hist_baseline_shape(hist) -> None:
    def edit(meta, tensors):
        tensors["_baseline_prediction"] = np.zeros((1, 2))

    assert "'_baseline_prediction' has shape (1, 2); axis 1 must be 1" in _error(hist, edit)


def test_hist_classifier_needs_a_predictor_per_class() -> None:
    with threadpool_limits(1, user_api="openmp"):
        model = HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(*iris())

    def edit(meta, tensors):
        _item(meta["model"]["attrs"]["_predictors"], "shape")[1] = [3, 2]

    assert "2 predictors per iteration, but n_trees_per_iteration_ is 3" in _error(model, edit)


def test_hist_generator_state_is_validated(hist) -> None:
    def edit(meta, tensors):
        meta["model"]["attrs"]["_feature_subsample_rng"]["state"] = "not hex"

    assert "two 32-digit hex words" in _error(hist, edit)


@pytest.fixture(scope="module")
def categorical():
    X, y = diabetes()
    X = np.c_[X[:, :4], (X[:, 1] > 0) * 2.0 + (X[:, 0] > 0)]
    with threadpool_limits(1, user_api="openmp"):
        return HistGradientBoostingRegressor(max_iter=4, categorical_features=[4], random_state=0).fit(X, y)


def _categories(meta: dict) -> list:
    return _item(meta["model"]["attrs"]["_preprocessor"], "categories")[1]


def test_hist_preprocessor_categories_must_match_the_bins(categorical) -> None:
    def edit(meta, tensors):
        tensors["_preprocessor.categories.0"] = tensors["_preprocessor.categories.0"][:3].copy()

    assert "categories 0 lists 3 categories, the bin mapper 4" in _error(categorical, edit)


def test_hist_preprocessor_categories_must_rebuild_the_encoder(categorical) -> None:
    def edit(meta, tensors):  # unsorted: an OrdinalEncoder never learns these
        tensors["_preprocessor.categories.0"] = tensors["_preprocessor.categories.0"][::-1].copy()

    assert "do not rebuild the same categorical preprocessor" in _error(categorical, edit)


def test_hist_preprocessor_needs_every_categorical_feature(categorical) -> None:
    def edit(meta, tensors):
        _categories(meta).clear()
        del tensors["_preprocessor.categories.0"]

    assert "needs the categories of the 1 categorical features" in _error(categorical, edit)


def test_hist_bin_mapper_thread_count_is_bounded(hist) -> None:
    def edit(meta, tensors):
        params = _item(meta["model"]["attrs"]["_bin_mapper"], "params")[1]
        _item(params, "n_threads")[1] = 10**9

    assert "n_threads must be null or an int in [1, 4096], found 1000000000" in _error(hist, edit)
