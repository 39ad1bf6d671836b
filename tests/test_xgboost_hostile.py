"""Crafted XGBoost files are refused at load, before XGBoost's own loader sees anything.

Each case edits the saved state of a real model (a tensor of the booster, a setting, a
hyperparameter); every crafted file is loaded in one child process, so a crash in
XGBoost's C++ would fail the test instead of killing pytest, and must raise an
``AprenderError``. A last test checks that the rules name what they refuse.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost", reason="XGBoost is an optional extra: pip install 'aprender[xgboost]'")

import pandas as pd  # noqa: E402
from child import load_and_use  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from aprender.codec import ModelState, canonical_json, to_state  # noqa: E402
from aprender.exceptions import AprenderError  # noqa: E402
from aprender.format import safetensors  # noqa: E402

_X, _Y = make_classification(120, 5, n_informative=3, n_classes=3, random_state=0)
_B = "_Booster."
Edit = Callable[[dict, dict[str, np.ndarray]], None]


def _frame() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=120), "c": pd.Categorical(rng.choice(list("pqrstu"), 120))})
    return frame, ((frame["c"].isin(["p", "r", "t"])) ^ (frame["a"] > 1)).astype(int).to_numpy()


@pytest.fixture(scope="module")
def states() -> dict[str, ModelState]:
    frame, y = _frame()
    return {
        "multiclass": to_state(xgboost.XGBClassifier(n_estimators=3, max_depth=3).fit(_X, _Y)),
        "categorical": to_state(xgboost.XGBClassifier(n_estimators=3, max_depth=3, enable_categorical=True,
                                                      max_cat_to_onehot=1).fit(frame, y)),
    }


def _booster(meta: dict) -> dict:
    return meta["model"]["attrs"]["_Booster"]


def _set(name: str, index: int, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        array = tensors[_B + name].copy()
        array[index] = value
        tensors[_B + name] = array

    return edit


def _setting(name: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        _booster(meta)[name] = value

    return edit


def _tensor(name: str, value: np.ndarray) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[_B + name] = value

    return edit


def _swap(a: str, b: str) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[_B + a], tensors[_B + b] = tensors[_B + b], tensors[_B + a]

    return edit


def _first_leaf(state: ModelState) -> int:
    return int(np.argmax(state.tensors[_B + "left_children"] == -1))


def _first_categorical(state: ModelState) -> int:
    return int(np.argmax(state.tensors[_B + "split_type"] == 1))


def _edit_objective(meta: dict, tensors: dict) -> None:
    _booster(meta)["objective"]["softmax_multiclass_param"]["num_class"] = "1e9"


def _no_trees(meta: dict, tensors: dict) -> None:
    for name in [n for n in tensors if n.startswith(_B) and n != _B + "base_score"]:
        tensors[name] = np.zeros(1, dtype=np.int64) if name.endswith("_offsets") else tensors[name][:0]


def _five_classes(meta: dict, tensors: dict) -> None:
    # The objective agrees, so the rule reached is the tree count: 3 rounds x 3 classes is not rounds of 5.
    _booster(meta)["num_class"] = 5
    _booster(meta)["objective"]["softmax_multiclass_param"]["num_class"] = "5"


def _objective_block(meta: dict, tensors: dict) -> None:
    _booster(meta)["objective"]["evil_param"] = {"x": "1"}


def _param(name: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["params"][name] = value

    return edit


def _attr(name: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["attrs"][name] = value

    return edit


def _category_value(value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        _booster(meta)["category_values"][1]["values"][0] = value

    return edit


def _categories_on_numeric(meta: dict, tensors: dict) -> None:
    _booster(meta)["category_values"][0] = {"offsets": [0, 1, 2], "values": [97, 98]}


#: case -> (model, edit or a function of the state giving one, a fragment of the message)
CASES: dict[str, tuple[str, Any, str]] = {
    "child_out_of_range": ("multiclass", _set("left_children", 0, 10**6), "outside the tree"),
    "cycle": ("multiclass", _set("left_children", 1, 0), "does not come after its parent"),
    "shared_child": ("multiclass", _set("right_children", 0, 1), "parents"),
    "leaf_disagrees": ("multiclass", _set("right_children", 0, -1), "disagree"),
    "feature_past_width": ("multiclass", _set("split_indices", 0, 5), "below num_feature"),
    "negative_feature": ("multiclass", _set("split_indices", 0, -1), "below num_feature"),
    "leaf_with_feature": ("multiclass", lambda s: _set("split_indices", _first_leaf(s), 3), "a leaf's is 0"),
    "nan_threshold": ("multiclass", _set("split_conditions", 0, np.nan), "not a finite number"),
    "inf_leaf": ("multiclass", lambda s: _set("split_conditions", _first_leaf(s), np.inf), "not a finite"),
    "nan_base_weight": ("multiclass", _set("base_weights", 0, np.nan), "not a finite"),
    "split_type_2": ("multiclass", _set("split_type", 0, 2), "split type"),
    "default_left_7": ("multiclass", _set("default_left", 0, 7), "default_left"),
    "categorical_numeric_feature": ("multiclass", _set("split_type", 0, 1), "categorical"),
    "offset_2_40": ("multiclass", _set("node_offsets", 1, 2**40), "node_offsets"),
    "offsets_decrease": ("multiclass", _set("node_offsets", 2, 1), "node_offsets"),
    "float64_conditions": ("multiclass", lambda s: _tensor(
        "split_conditions", s.tensors[_B + "split_conditions"].astype(np.float64)), "float32"),
    "swapped_children_features": ("multiclass", _swap("left_children", "split_indices"), ""),
    "swapped_offsets": ("categorical", _swap("node_offsets", "category_offsets"), ""),
    "tree_count_num_class": ("multiclass", _five_classes, "whole rounds"),
    "num_class_one": ("multiclass", _setting("num_class", 1), "num_class"),
    "parallel_trees": ("multiclass", _setting("num_parallel_tree", 2), "rounds"),
    "no_trees": ("multiclass", lambda s: _no_trees, "0 trees"),
    "num_feature_2_40": ("multiclass", _setting("num_feature", 2**40), "num_feature"),
    "base_score_shape": ("multiclass", _tensor("base_score", np.zeros(2, dtype=np.float32)), "base_score"),
    "base_score_nan": ("multiclass", _tensor("base_score", np.full(3, np.nan, dtype=np.float32)), "base_score"),
    "unknown_objective": ("multiclass", _setting("objective", {"name": "reg:evil"}), "not one of XGBoost"),
    "objective_for_classes": ("multiclass", _setting("objective", {"name": "binary:logistic"}), "num_class"),
    "objective_param_value": ("multiclass", _edit_objective, "names 1e9 classes"),
    "objective_param_block": ("multiclass", _objective_block, "parameter block"),
    "feature_type_unknown": ("multiclass", _setting("feature_types", ["x"] * 5), "feature_types"),
    "feature_names_count": ("multiclass", _setting("feature_names", ["a"]), "feature_names"),
    "best_iteration_past_rounds": ("multiclass", _setting("attributes", {"best_iteration": "99"}), "rounds"),
    "best_score_text": ("multiclass", _setting("attributes", {"best_score": "nan"}), "best_score"),
    "n_classes_lie": ("multiclass", _attr("n_classes_", 7), "n_classes_"),
    "objective_param_lie": ("multiclass", _param("objective", "binary:logistic"), "trained with"),
    "unknown_hyperparameter": ("multiclass", _param("updater", "prune"), "no hyperparameter 'updater'"),
    "tree_method_word": ("multiclass", _param("tree_method", "gpu_evil"), "is not one of"),
    "booster_word": ("multiclass", _param("booster", "gblinear"), "is not one of"),
    "metric_word": ("multiclass", _param("eval_metric", ["auc", "../x"]), "not an XGBoost metric"),
    "keyword_nan": ("multiclass", _param("huber_slope", {"__t__": "float", "v": "nan"}), "huber_slope"),
    "keyword_word": ("multiclass", _param("aft_loss_distribution", "cauchy"), "is not one of"),
    "category_past_count": ("categorical", lambda s: _set("categories", -1, 6), "lie in [0, 6)"),
    "category_2_30": ("categorical", lambda s: _set("categories", -1, 2**30), "lie in [0"),
    "categories_not_sorted": ("categorical", lambda s: _tensor(
        "categories", s.tensors[_B + "categories"][::-1].copy()), "increase"),
    "categories_nodes_wrong": ("categorical", lambda s: _tensor(
        "categories_nodes", s.tensors[_B + "categories_nodes"] + 1), "categorical nodes"),
    "categories_sizes_wrap": ("categorical", lambda s: _tensor("categories_sizes", np.array(
        [2**63 - 1] + [1] * (s.tensors[_B + "categories_sizes"].shape[0] - 1), dtype=np.int64)), "must lie in"),
    "categories_sizes_wrong": ("categorical", lambda s: _tensor(
        "categories_sizes", s.tensors[_B + "categories_sizes"] + 1), "must lie in"),
    "categories_segments_wrong": ("categorical", lambda s: _tensor(
        "categories_segments", s.tensors[_B + "categories_segments"] + 1), "tile"),
    "feature_not_categorical": ("categorical", _setting("feature_types", ["float", "float"]), "type 'c'"),
    "category_value_type": ("categorical", _category_value("x"), "string categories need"),
    "category_duplicates": ("categorical", _category_value(ord("q")), "distinct"),
    "category_type_code": ("categorical", _setting("category_values", [None, {"type": 99, "values": [1]}]),
                           "type code"),
    "category_type_code_list": ("categorical", _setting("category_values", [None, {"type": [15], "values": [1]}]),
                                "categories must be"),
    "best_iteration_digits": ("multiclass", _setting("attributes", {"best_iteration": "\u00b2"}), "rounds"),
    "category_recorder_count": ("categorical", _setting("category_values", [None]), "one entry per feature"),
    "categories_on_numeric": ("categorical", _categories_on_numeric, "not of type 'c'"),
}


def _craft(state: ModelState, edit: Any) -> bytes:
    if not callable(edit) or edit.__code__.co_argcount == 1:
        edit = edit(state)
    meta = json.loads(canonical_json(state.meta))
    tensors = dict(state.tensors)
    edit(meta, tensors)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=copy.deepcopy(meta)))


def test_every_crafted_file_is_refused(states: dict[str, ModelState], tmp_path: Path) -> None:
    paths = {}
    for case, (model, edit, _) in CASES.items():
        path = tmp_path / f"{case}.safetensors"
        path.write_bytes(_craft(states[model], edit))
        paths[case] = (str(path), "m.predict(X); m.apply(X)")
    outcomes = load_and_use(paths, setup="import numpy as np\nX = np.zeros((4, 5))\n")
    for case, (_, _, fragment) in CASES.items():
        assert outcomes[case].startswith("AprenderError"), f"{case}: {outcomes[case]}"
        assert fragment in outcomes[case], f"{case}: {outcomes[case]}"


def test_the_untouched_files_load(states: dict[str, ModelState], tmp_path: Path) -> None:
    # The crafted files differ from these only by their edit: each refusal is the edit's.
    for name, state in states.items():
        loaded = safetensors.loads(safetensors.state_to_bytes(state))
        assert isinstance(loaded, xgboost.XGBClassifier), name


@pytest.mark.parametrize("case", ["cycle", "nan_threshold", "unknown_objective"])
def test_refusals_are_aprender_errors_in_process(states: dict[str, ModelState], case: str) -> None:
    model, edit, fragment = CASES[case]
    with pytest.raises(AprenderError, match=fragment):
        safetensors.loads(_craft(states[model], edit))
