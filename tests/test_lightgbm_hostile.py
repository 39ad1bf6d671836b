"""Crafted LightGBM files are refused at load with an AprenderError, before LightGBM sees them (issue 37).

Each case edits the saved state of a real model (tests/support/lgbm_models.py): a child
index out of range, a cycle, a node with two parents, a feature past the width, a NaN or
infinite threshold or leaf, a bitset past the category count, a wrong tree count for the
number of classes, an unknown objective, a swapped pair of arrays, 2**40 in a count.
Every rule of :data:`aprender.codec.schemas._lgbm_checks.RULES` is broken by at least one
case, and the error names the rule. All the files load in one child process, so a crash
in LightGBM fails the test instead of pytest.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("lightgbm", reason="the lightgbm extra is not installed")

from child import load_and_use
from lgbm_models import models

import aprender
from aprender.codec import ModelState, to_state
from aprender.codec.schemas._lgbm_checks import RULES
from aprender.format import safetensors

Edit = Callable[[dict, dict[str, np.ndarray]], None]
B = "_Booster."


def booster(meta: dict) -> dict:
    return meta["model"]["attrs"]["_Booster"]


def attrs(meta: dict) -> dict:
    return meta["model"]["attrs"]


def header(key: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        booster(meta)[key] = value
    return edit


def entry(name: str, index: int, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        array = tensors[B + name].copy()
        array[index] = value
        tensors[B + name] = array
    return edit


def replace(name: str, array: np.ndarray) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[B + name] = array
    return edit


def swap(a: str, b: str) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[B + a], tensors[B + b] = tensors[B + b], tensors[B + a]
    return edit


def attr(key: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        attrs(meta)[key] = value
    return edit


def param(key: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["params"][key] = value
    return edit


def first_categorical(tensors: dict[str, np.ndarray]) -> int:
    return int(np.argmax(tensors[B + "decision_type"] & 1))


def categorical_threshold(value: float) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        entry("threshold", first_categorical(tensors), value)(meta, tensors)
    return edit


def drop_last_tree(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """Remove the last tree with all its entries: a consistent model of one tree less."""
    leaves, cats = int(tensors[B + "num_leaves"][-1]), int(tensors[B + "num_cat"][-1])
    words = int(tensors[B + "cat_boundaries"][-1]) if cats else 0
    cut = {"node": leaves - 1, "leaf": leaves, "cat": cats + 1 if cats else 0, "word": words}
    from aprender.codec.schemas._lgbm_text import TREE_ARRAYS, TREE_COUNTS

    for name in TREE_COUNTS:
        tensors[B + name] = tensors[B + name][:-1]
    for name, (_, per) in TREE_ARRAYS.items():
        if cut[per]:
            tensors[B + name] = tensors[B + name][: -cut[per]]


def cycle(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """The first tree's node 1 points back at the root."""
    entry("left_child", 1, 0)(meta, tensors)


def two_parents(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    right = tensors[B + "right_child"].copy()
    right[0] = tensors[B + "left_child"][0]
    tensors[B + "right_child"] = right


def other_kind(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """The root splits the category column (1) numerically, or the numeric column (0) by categories."""
    entry("split_feature", 0, 0 if tensors[B + "decision_type"][0] & 1 else 1)(meta, tensors)


def high_bit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """A bitset word with category 31 set, past the colour column's 5 categories."""
    words = tensors[B + "cat_threshold"].copy()
    words[0] |= np.uint32(1 << 31)
    tensors[B + "cat_threshold"] = words


def unlisted_categories(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """The colour column's info lists only its largest category: the bitsets set bits of categories no
    bin holds (as a file of full words over a wide range of two listed categories does)."""
    feature = int(tensors[B + "split_feature"][first_categorical(tensors)])
    infos = booster(meta)["feature_infos"]
    infos[feature] = str(max(int(c) for c in infos[feature].split(":")))


#: case -> (model, the rule the error names (or an estimator-level phrase), edit)
CASES: dict[str, tuple[str, str, Edit]] = {
    "version": ("binary", "version", header("version", "v3")),
    "feature count 2**40": ("binary", "header", header("max_feature_idx", 2**40)),
    "num_class 0": ("binary", "header", header("num_class", 0)),
    "label_index 2**40": ("binary", "header", header("label_index", 2**40)),
    "unknown objective": ("binary", "objective", header("objective", "evil")),
    "negative sigmoid": ("binary", "objective", header("objective", "binary sigmoid:-1")),
    "nan sigmoid": ("binary", "objective", header("objective", "binary sigmoid:nan")),
    "repeated option": ("sqrt_monotone", "objective", header("objective", "regression sqrt sqrt")),
    "foreign option": ("sqrt_monotone", "objective", header("objective", "regression sigmoid:1")),
    "num_class disagrees": ("multiclass", "objective", header("objective", "multiclass num_class:4")),
    "multiclass, one tree per iteration": ("multiclass", "classes", header("num_tree_per_iteration", 1)),
    "binary with two classes": ("binary", "classes", header("num_class", 2)),
    "name with a space": ("binary", "features", header("feature_names", ["x", "colour count", "y"])),
    "NUL in a name": ("binary", "features", header("feature_names", ["x", "col\x00our", "count", "y"])),
    "newline in a name": ("binary", "features", header("feature_names", ["x", "col\nour", "count", "y"])),
    "too few names": ("binary", "features", header("feature_names", ["x"])),
    "nan range": ("binary", "features", header("feature_infos", ["[nan:1]", "0:1", "[0:1]", "[0:1]"])),
    "inverted range": ("binary", "features", header("feature_infos", ["[2:1]", "0:1", "[0:1]", "[0:1]"])),
    "text info": ("binary", "features", header("feature_infos", ["x", "0:1", "[0:1]", "[0:1]"])),
    "monotone 2": ("sqrt_monotone", "monotone", header("monotone_constraints", [2, 0, 0])),
    "float children": ("binary", "dtypes", lambda m, t: t.__setitem__(B + "left_child",
                                                                        t[B + "left_child"].astype(np.float64))),
    "swapped value arrays": ("binary", "counts", swap("threshold", "leaf_value")),
    "swapped int32 arrays": ("binary", "children", swap("left_child", "split_feature")),
    "one leaf more": ("binary", "counts", entry("num_leaves", 0, 0)),
    "num_cat = num_leaves": ("binary", "counts", lambda m, t: t.__setitem__(B + "num_cat",
                                                                             t[B + "num_leaves"].copy())),
    "2**31 - 1 leaves": ("binary", "counts", entry("num_leaves", 0, 2**31 - 1)),
    "a tree less": ("multiclass", "tree_count", drop_last_tree),
    "child out of range": ("binary", "children", entry("left_child", 0, 10**6)),
    "leaf out of range": ("binary", "children", entry("left_child", 0, -(10**6))),
    "leaf -2**31": ("binary", "children", entry("left_child", 0, -(2**31))),
    "cycle": ("binary", "children", cycle),
    "two parents": ("binary", "children", two_parents),
    "feature past the width": ("binary", "split_feature", entry("split_feature", 0, 1000)),
    "negative feature": ("binary", "split_feature", entry("split_feature", 0, -1)),
    "split of the other kind of column": ("binary", "split_feature", other_kind),
    "missing type 3": ("binary", "decision_type", entry("decision_type", 0, 12)),
    "high bits": ("binary", "decision_type", entry("decision_type", 0, 16)),
    "nan threshold": ("sqrt_monotone", "finite", entry("threshold", 0, np.nan)),
    "inf threshold": ("sqrt_monotone", "finite", entry("threshold", 0, np.inf)),
    "inf leaf": ("binary", "finite", entry("leaf_value", 0, np.inf)),
    "nan shrinkage": ("binary", "finite", entry("shrinkage", 0, np.nan)),
    "negative count": ("binary", "finite", entry("leaf_count", 0, -1)),
    "2**40 count": ("binary", "finite", entry("internal_count", 0, 2**40)),
    "bitset index past num_cat": ("multiclass", "categorical", categorical_threshold(5)),
    "fractional bitset index": ("multiclass", "categorical", categorical_threshold(0.5)),
    "bit past the categories": ("multiclass", "bitsets", high_bit),
    "bits of unlisted categories": ("multiclass", "bitsets", unlisted_categories),
    "boundaries not from 0": ("multiclass", "bitsets", entry("cat_boundaries", 0, 1)),
    "best iteration past the trees": ("binary", "best_iteration", header("best_iteration", 2**40)),
    "repeated category": ("multiclass", "pandas_categorical", header("pandas_categorical", [["a", "a"]])),
    "nested category": ("multiclass", "pandas_categorical", header("pandas_categorical", [[["a"]]])),
    "a name that rewrites dump_model's JSON": ("binary", "features", lambda m, t: booster(m)["feature_names"]
                                               .__setitem__(0, 'a"],"tree_info":[],"x":["')),
    "categories pandas finds equal": ("multiclass", "pandas_categorical",
                                      header("pandas_categorical", [[1, "p", 1.0, True]])),
    "a list per feature and more": ("multiclass", "pandas_categorical",
                                    header("pandas_categorical", [["a"]] * 5)),
    # the node itself: its fields are declared (aprender/codec/handlers/lightgbm_booster.py)
    "an undeclared field": ("binary", "'lightgbm_booster' node has an unknown field",
                            header("model_str", "tree\nversion=v4\n")),
    "objective as an object": ("binary", "'lightgbm_booster' field 'objective' must be str",
                               header("objective", {"__t__": "function", "name": "os.system"})),
    "a tensor left out": ("binary", "'lightgbm_booster' node lacks its field 'threshold'",
                          lambda m, t: (booster(m).pop("threshold"), t.pop(B + "threshold"))),
    # the estimator's own state against its booster
    "width disagrees": ("binary", "_n_features_in", attr("_n_features_in", 7)),
    "objective disagrees": ("binary", "_objective", attr("_objective", "regression")),
    "best iteration disagrees": ("early_stopping", "_best_iteration", attr("_best_iteration", 1)),
    "class count disagrees": ("binary", "_n_classes", attr("_n_classes", 3)),
    "threads hidden in _other_params": ("binary", "_other_params", attr("_other_params", {
        "verbose": -1, "min_child_samples": 5, "min_data_per_group": 5, "cat_smooth": 1, "n_jobs": 10**6})),
    "a keyword argument only in _other_params": ("binary", "_other_params", lambda m, t: attrs(m)["_other_params"]
                                                 .__setitem__("output_model", "/tmp/owned.txt")),
    "a regressor with 2**40 classes": ("ranker", "_n_classes", attr("_n_classes", 2**40)),
    "2**40 positions": ("ranker", "_eval_at", attr("_eval_at", {"__t__": "tuple", "v": [2**40]})),
    # hyperparameters: LightGBM hands keyword arguments to its C++ config at predict
    "a keyword argument naming a file": ("binary", "output_model", param("output_model", "/tmp/owned.txt")),
    "threads as a keyword argument": ("binary", "num_threads", param("num_threads", 4096)),
    "shape check turned off": ("binary", "predict_disable_shape_check",
                               param("predict_disable_shape_check", True)),
    "unknown objective parameter": ("binary", "LightGBM parameter 'objective'", param("objective", "evil")),
    "2**40 leaves parameter": ("binary", "num_leaves", param("num_leaves", 2**40)),
    "NaN learning rate": ("binary", "learning_rate", param("learning_rate", {"__t__": "float", "v": "nan"})),
}


def crafted(model: Any, edit: Edit, path: Path) -> None:
    state = to_state(model)
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta, tensors)
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("hostile-lightgbm")
    cases = {}
    for i, (case, (name, _, edit)) in enumerate(CASES.items()):
        path = root / f"case{i}.safetensors"
        crafted(models()[name][0], edit, path)
        cases[case] = (str(path), "m.booster_.predict(np.zeros((3, m.n_features_in_)))")
    return load_and_use(cases, setup="import numpy as np\n")


@pytest.mark.parametrize("case", list(CASES))
def test_a_crafted_booster_is_refused_at_load(case: str, outcomes: dict[str, str]) -> None:
    _, rule, _ = CASES[case]
    outcome = outcomes[case]
    assert outcome.startswith("AprenderError: "), outcome
    # A rule of the booster's table, a phrase, or the name of the attribute or parameter at fault.
    expected = f"LightGBM rule '{rule}'" if rule in RULES else rule if " " in rule else f"'{rule}'"
    assert expected in outcome, outcome


def test_every_rule_is_broken_by_a_case() -> None:
    assert set(RULES) <= {rule for _, rule, _ in CASES.values()}


def test_the_unedited_files_load(tmp_path: Path) -> None:
    """The edits above are what the loader refuses: the same files unedited load and predict."""
    cases = {}
    for name, (model, _) in models().items():
        path = tmp_path / f"{name}.safetensors"
        crafted(model, lambda meta, tensors: None, path)
        cases[name] = (str(path), "m.booster_.predict(np.zeros((3, m.n_features_in_)))")
    assert set(load_and_use(cases, setup="import numpy as np\n").values()) == {"USED"}


def test_a_member_fitted_on_another_width_breaks_its_pipelines_contract(tmp_path: Path) -> None:
    """A Pipeline hands its LightGBM step the scaler's 3 columns: a step fitted on 2 is refused at load."""
    import lightgbm as lgb
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from aprender.exceptions import FormatError

    X = np.random.default_rng(0).normal(size=(100, 3))
    pipe = make_pipeline(StandardScaler(), lgb.LGBMRegressor(n_estimators=2, verbose=-1, n_jobs=1)).fit(X, X[:, 0])
    narrow = lgb.LGBMRegressor(n_estimators=2, verbose=-1, n_jobs=1).fit(X[:, :2], X[:, 0])
    pipe.steps[-1] = ("lgbmregressor", narrow)
    aprender.save(pipe, tmp_path / "m.apr")
    with pytest.raises(FormatError, match="fitted on 2 features, not the 3"):
        aprender.load(tmp_path / "m.apr")
