"""Crafted CatBoost files: each lies in one place and must be refused at load with an AprenderError.

Every file is a real model's state with one edit (tests/support/state_edit.py style). All
of them are loaded in one child process (tests/support/child.py): a lie that reached
CatBoost's compiled code unchecked could crash the interpreter, and must fail the test
rather than pytest. Every rule of ``aprender.codec.schemas._oblivious.RULES`` has a case.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

pytest.importorskip("catboost", reason="CatBoost is an optional extra: pip install 'aprender[catboost]'")

from catboost_models import CASES, CATEGORICAL, X
from child import load_and_use

from aprender.codec import ModelState, to_state
from aprender.codec.schemas._catboost_ctrs import RULES as CAT_RULES
from aprender.codec.schemas._oblivious import RULES
from aprender.format import safetensors

Edit = Callable[[dict, dict[str, np.ndarray]], None]
B = "_object."  # the booster's tensors, under the estimator's '_object' attribute


class Lie(NamedTuple):
    model: str  # a case of tests/support/catboost_models.py (CASES or CATEGORICAL)
    rule: str  # the rule of RULES it breaks, or "meta" for the checked metadata and attributes
    edit: Edit
    says: str  # a fragment of the error message


def _set(name: str, make: Callable[[np.ndarray], np.ndarray]) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[B + name] = make(tensors[B + name].copy())
    return edit


def _at(index: int, value: Any) -> Callable[[np.ndarray], np.ndarray]:
    def make(a: np.ndarray) -> np.ndarray:
        a[index] = value
        return a
    return make


def _booster(**changes: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["attrs"]["_object"].update(copy.deepcopy(changes))
    return edit


def _attr(name: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["attrs"][name] = value
    return edit


def _param(name: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        meta["model"]["params"][name] = value
    return edit


def _swap(a: str, b: str) -> Edit:
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        tensors[B + a], tensors[B + b] = tensors[B + b], tensors[B + a]
    return edit


def _at_kind(name: str, kind: int, value: Any) -> Edit:
    """Set ``name`` at the first split of ``kind`` (1 one-hot, 2 CTR) to ``value``."""
    def edit(meta: dict, tensors: dict[str, np.ndarray]) -> None:
        at = int(np.flatnonzero(tensors[B + "split_kind"] == kind)[0])
        _set(name, _at(at, value))(meta, tensors)
    return edit


def _same_as(name: str, source: int, target: int) -> Edit:
    """Copy entry ``source`` of ``name`` over entry ``target``."""
    return _set(name, lambda a: _at(target, a[source])(a))


def _floats_only(meta: dict, tensors: dict[str, np.ndarray]) -> None:
    """Every combination element becomes float feature 0's first border: tables that hash no categorical value."""
    for name, value in (("element_kind", 1), ("element_feature", 0), ("element_value", 0)):
        _set(name, lambda a, v=value: np.full_like(a, v))(meta, tensors)


def _unsort(a: np.ndarray) -> np.ndarray:
    a[0], a[1] = a[1], a[0]
    return a


LIES: dict[str, Lie] = {
    "borders as float64": Lie("binary", "layout", _set("borders", lambda a: a.astype(np.float64)), "float32"),
    "split index of 2**40": Lie("binary", "layout", _set("split_feature", lambda a: np.full(a.shape, 2**40)),
                                "int32"),
    "bias of two values": Lie("binary", "layout", _set("bias", lambda a: np.r_[a, a]), "'bias'"),
    "one nan treatment short": Lie("binary", "layout", _set("nan_treatment", lambda a: a[:-1]), "nan_treatment"),
    "offsets past the borders": Lie("binary", "border_offsets", _set("border_offsets", _at(-1, 10**6)),
                                    "border_offsets"),
    "offsets falling": Lie("binary", "border_offsets", _set("border_offsets", lambda a: np.r_[a[0], a[2], a[1],
                                                                                              a[3:]]), "decreases"),
    "NaN border": Lie("binary", "borders", _set("borders", _at(3, np.nan)), "finite"),
    "borders out of order": Lie("binary", "borders", _set("borders", _unsort), "rise strictly"),
    "unknown nan treatment": Lie("binary", "nan_treatment", _set("nan_treatment", _at(0, 7)), "nan_treatment"),
    "has_nans of 2": Lie("binary", "nan_treatment", _set("has_nans", _at(1, 2)), "has_nans"),
    "depth 17": Lie("binary", "depths", _set("tree_depths", _at(0, 17)), "depth 17"),
    "negative depth": Lie("binary", "depths", _set("tree_depths", _at(0, -3)), "depth -3"),
    "depths not adding up": Lie("binary", "depths", _set("tree_depths", _at(0, 2)), "add up"),
    "feature past the width": Lie("binary", "split_feature", _set("split_feature", _at(0, 4)), "outside [0, 4)"),
    "negative feature": Lie("binary", "split_feature", _set("split_feature", _at(2, -1)), "outside [0, 4)"),
    "border past its feature's": Lie("binary", "split_border", _set("split_border", _at(0, 1000)), "borders"),
    "negative border index": Lie("binary", "split_border", _set("split_border", _at(0, -1)), "borders"),
    "split arrays swapped": Lie("multiclass-strings", "split_feature", _swap("split_feature", "split_border"),
                                "float feature"),
    "a leaf short": Lie("binary", "leaf_count", _set("leaf_values", lambda a: a[:-1]), "leaf_values"),
    "leaves of another dimension": Lie("multiclass-strings", "leaf_count", _booster(dimension=2), "'bias'"),
    "infinite leaf": Lie("binary", "finite", _set("leaf_values", _at(5, np.inf)), "finite"),
    "NaN leaf weight": Lie("binary", "finite", _set("leaf_weights", _at(0, np.nan)), "finite"),
    "infinite scale": Lie("binary", "finite", _set("scale", _at(0, np.inf)), "finite"),
    "values and weights swapped": Lie("binary", "finite", _swap("leaf_values", "leaf_weights"), "negative"),
    "unknown loss": Lie("binary", "meta", _booster(loss="EvilLoss"), "EvilLoss"),
    "regression loss in a classifier": Lie("binary", "meta", _booster(loss="RMSE", class_params=None),
                                           "classifier"),
    "binary loss on three classes": Lie("multiclass-strings", "meta", _booster(loss="Logloss"), "dimension"),
    "loss option with quotes": Lie("quantile", "meta", _booster(loss_params={"alpha": '0.3"}'}), "loss parameter"),
    "unknown label type": Lie("binary", "meta", _booster(class_params={
        "class_label_type": "Pickle", "class_names": [0, 1], "class_to_label": [0, 1], "classes_count": 0}),
        "class_label_type"),
    "a label twice": Lie("multiclass-strings", "meta", _booster(class_params={
        "class_label_type": "String", "class_names": ["ant", "ant", "cat"], "class_to_label": [0, 1, 2],
        "classes_count": 0}), "twice"),
    "label index past the labels": Lie("multiclass-strings", "meta", _booster(class_params={
        "class_label_type": "String", "class_names": ["ant", "bee", "cat"], "class_to_label": [0, 2**31 - 1, 2],
        "classes_count": 0}), "class_to_label"),
    "feature names short": Lie("binary", "meta", _booster(feature_ids=["a"]), "feature_ids"),
    "library version with code": Lie("binary", "meta", _booster(library_version="1.2\"}; rm -rf"),
                                     "library_version"),
    # categorical features (aprender.codec.schemas._catboost_ctrs.RULES)
    "flat index as int64": Lie("categorical-binary", "cat_layout",
                               _set("cat_flat_index", lambda a: a.astype(np.int64)), "int32"),
    "a split kind short": Lie("categorical-binary", "cat_layout", _set("split_kind", lambda a: a[:-1]), "split_kind"),
    "feature index out of range": Lie("categorical-binary", "flat_index", _set("cat_flat_index", _at(0, 99)),
                                      "outside [0, 5)"),
    "two features in one column": Lie("categorical-binary", "flat_index",
                                      _set("cat_flat_index", lambda a: _at(0, a[1])(a)), "permutation"),
    "hash table far larger than the file": Lie("categorical-binary", "cat_offsets",
                                               _set("table_offsets", lambda a: _at(-1, a[-1] + 2**40)(a)),
                                               "table_offsets"),
    "element offsets falling": Lie("categorical-binary", "cat_offsets",
                                   _set("element_offsets", lambda a: _at(1, a[2] + 1)(a)), "element_offsets"),
    "a one-hot value twice": Lie("categorical-binary", "one_hot", _same_as("one_hot_values", 0, 1), "twice"),
    "CTR type not in the table": Lie("categorical-binary", "tables", _set("table_type", _at(0, 9)), "CTR type"),
    "wrong stride": Lie("categorical-binary", "tables", _set("table_stride", _at(0, 4)), "hash_stride"),
    "regressor stride of 2": Lie("categorical-regressor", "tables", _set("table_stride", _at(0, 2)), "hash_stride"),
    "negative denominator": Lie("categorical-binary", "tables", _set("table_denominator", _at(0, -1)),
                                "counter_denominator"),
    "counts short": Lie("categorical-binary", "tables", _set("table_counts", lambda a: a[:-1]), "table_counts"),
    "negative count": Lie("categorical-binary", "keys", _set("table_counts", _at(3, -5)), "[0, 2147483647]"),
    "count past a C int": Lie("categorical-binary", "keys", _set("table_counts", _at(0, 2**40)), "2147483647"),
    "duplicate hash keys": Lie("categorical-binary", "keys", _same_as("table_keys", 0, 1), "twice"),
    "combination kind not in the table": Lie("categorical-binary", "elements", _set("element_kind", _at(0, 7)),
                                             "kind code 7"),
    "element feature out of range": Lie("categorical-binary", "elements", _set("element_feature", _at(0, 99)),
                                        "outside [0, 3)"),
    "element value out of range": Lie("categorical-binary", "elements",
                                      _set("element_value", lambda a: np.full(a.shape, 2**30, a.dtype)), "names value"),
    "a table of float borders only": Lie("categorical-binary", "elements", _floats_only, "no categorical"),
    "CTR of a table past the tables": Lie("categorical-binary", "ctrs", _set("ctr_table", _at(0, 99)), "hash table 99"),
    "target border past the classes": Lie("categorical-multiclass", "ctrs", _set("ctr_target_border", _at(0, 2)),
                                          "target_border_idx"),
    "NaN prior": Lie("categorical-binary", "ctrs", _set("ctr_prior_numerator", _at(0, np.nan)), "finite"),
    "infinite CTR scale": Lie("categorical-binary", "ctrs", _set("ctr_scale", _at(0, np.inf)), "finite"),
    "CTR borders out of order": Lie("categorical-multiclass", "ctrs",
                                    _set("ctr_borders", lambda a: a[::-1].copy()), "rise strictly"),
    "split kind code out of range": Lie("categorical-binary", "split_kind", _set("split_kind", _at(0, 3)),
                                        "kind code 3"),
    "a border not among the CTR's": Lie("categorical-binary", "split_kind", _at_kind("split_border", 2, 1000),
                                        "names value 1000 of CTR"),
    "CTR split past the CTRs": Lie("categorical-binary", "split_kind", _at_kind("split_feature", 2, 10**6),
                                   "outside"),
    "one-hot split of a missing value": Lie("categorical-binary", "split_kind", _at_kind("split_border", 1, 99),
                                            "names value 99 of categorical feature"),
    "categorical arrays without their names": Lie("categorical-binary", "meta", _booster(cat_feature_ids=None),
                                                  "cat_feature_ids"),
    "categorical names short": Lie("categorical-binary", "meta", _booster(cat_feature_ids=["colour"]),
                                   "categorical features"),
    "width of 2**40": Lie("binary", "meta", _booster(n_features=2**40), "n_features"),
    "best iteration past the trees": Lie("early-stopping", "meta", _booster(training={"metrics": {
        "best_iteration": 2**40}}), "best_iteration"),
    "training record with code": Lie("binary", "meta", _booster(training={"metrics": {
        "learn_best_error": {"Logloss\"}": 1.0}}}), "metric"),
    "tree count lie": Lie("binary", "meta", _attr("_tree_count", 1000), "_tree_count"),
    "feature count lie": Lie("binary", "meta", _attr("_n_features_in", 9), "_n_features_in"),
    "unknown attribute": Lie("binary", "meta", _attr("_evil_", 1), "_evil_"),
    "loss parameter of another role": Lie("binary", "meta", _param("loss_function", "RMSE"), "loss_function"),
    "train_dir outside": Lie("binary", "meta", _param("train_dir", "/etc/cron.d"), "train_dir"),
}


def test_every_rule_has_a_lie() -> None:
    assert {r.name for r in (*RULES, *CAT_RULES)} <= {lie.rule for lie in LIES.values()}


def _write(model: Any, edit: Edit, path: Path) -> str:
    state = to_state(model)
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta, tensors)
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))
    return str(path)


def test_every_lie_is_refused(tmp_path: Path) -> None:
    fits = {**CASES, **CATEGORICAL}
    models = {case: fits[case]() for case in {lie.model for lie in LIES.values()}}
    cases = {name: (_write(models[lie.model], lie.edit, tmp_path / f"{i}.safetensors"), "m.predict(X)")
             for i, (name, lie) in enumerate(LIES.items())}
    np.save(tmp_path / "X.npy", X)
    outcomes = load_and_use(cases, setup=f"import numpy as np\nX = np.load({str(tmp_path / 'X.npy')!r})\n")
    wrong = {name: outcome for name, outcome in outcomes.items()
             if not outcome.startswith("AprenderError") or LIES[name].says not in outcome}
    assert wrong == {}


def test_an_untouched_file_loads_in_the_child(tmp_path: Path) -> None:
    """The child loads the same file when nothing lies: the refusals above are the edits'."""
    model = CASES["binary"]()
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "p.npy", model.predict(X))
    path = _write(model, lambda meta, tensors: None, tmp_path / "m.safetensors")
    setup = (f"import numpy as np\nX = np.load({str(tmp_path / 'X.npy')!r})\n"
             f"expected = np.load({str(tmp_path / 'p.npy')!r})\n")
    assert load_and_use({"clean": (path, "assert (m.predict(X) == expected).all()")}, setup) == {"clean": "USED"}


def test_catboost_refusing_checked_text_is_a_format_error() -> None:
    """Should CatBoost's reader refuse text made from checked values, the load fails with a FormatError."""
    from aprender.codec.handlers import catboost_booster
    from aprender.exceptions import FormatError

    with pytest.raises(FormatError, match="CatBoost refused the checked model"):
        catboost_booster._load("not JSON", {}, "m")
