"""What a booster's file says about its features reaches XGBoost and the ONNX converter only as checked.

- ``num_feature`` is the one count of an XGBoost booster that no array of the file backs
  (``feature_names`` and ``feature_types`` may be empty): a few-KB file claiming 2**24 features
  made every predict, ``feature_importances_``, ``pred_contribs`` and an ONNX export spend hundreds
  of MB or run for minutes. It is charged to the load budget
  (``schemas/_xgb_structure.UNBACKED_COUNTS``); every other count is backed by arrays, so each
  count at its bound is refused in a small file.
- The ONNX converter read each split's feature from the booster's feature *names* (``f<k>`` or a
  number as column ``k``): a model whose columns are named ``f4 .. f0`` or ``4 .. 0`` (a file may
  name them anything) exported a graph reading its input reversed, ``f4000000`` one reading past it.
  The converter now reads a copy named by position.
- onnxmltools chains one node per category of a LightGBM categorical split and walks the chain
  recursively: a 412 KB file listing 65,536 categories in three full bitsets ran 79 s before a
  RecursionError. An export of a split past ``MAX_SPLIT_CATEGORIES`` is refused before converting.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

xgboost = pytest.importorskip("xgboost", reason="XGBoost is an optional extra: pip install 'aprender[xgboost]'")
ort = pytest.importorskip("onnxruntime", reason="ONNX export needs the onnx extra")

import pandas as pd  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402

from aprender import _limits  # noqa: E402
from aprender.codec import ModelState, canonical_json, to_state  # noqa: E402
from aprender.codec.schemas._xgb_structure import UNBACKED_COUNTS  # noqa: E402
from aprender.exceptions import AprenderError, LoadBudgetExceeded, UnsupportedExportError  # noqa: E402
from aprender.format import safetensors  # noqa: E402
from aprender.format.onnx import to_onnx  # noqa: E402
from aprender.format.onnx._boosters import MAX_SPLIT_CATEGORIES, _lightgbm_split_categories  # noqa: E402

_X, _Y = make_classification(80, 5, n_informative=3, random_state=0)
#: Every count setting of a stored XGBoost booster and its largest value by the count rules.
_COUNTS = {"num_feature": _limits.MAX_FEATURES, "num_class": _limits.MAX_CLASSES, "num_target": _limits.MAX_OUTPUTS,
           "num_parallel_tree": _limits.MAX_WORK_COUNT}


@pytest.fixture(scope="module")
def state() -> ModelState:
    return to_state(xgboost.XGBClassifier(n_estimators=3, max_depth=3).fit(_X, _Y))


def _with(state: ModelState, **settings: object) -> bytes:
    meta = json.loads(canonical_json(state.meta))
    meta["model"]["attrs"]["_Booster"].update(settings)
    return safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta))


@pytest.mark.parametrize("name", sorted(_COUNTS))
def test_every_count_at_its_bound_is_refused_in_a_small_file(state: ModelState, name: str) -> None:
    raw = _with(state, **{name: _COUNTS[name]})
    assert len(raw) < 20_000
    with pytest.raises(AprenderError) as info:
        safetensors.loads(raw)
    if name in UNBACKED_COUNTS:
        assert isinstance(info.value, LoadBudgetExceeded) and name in str(info.value)


def test_a_wide_sparse_model_still_loads(state: ModelState) -> None:
    # A booster fitted on 2**20 hashed text features has small trees: its width is within the budget.
    loaded = safetensors.loads(_with(state, num_feature=2**20))
    assert loaded.n_features_in_ == 2**20


def _onnx_probabilities(model: object, X: np.ndarray) -> np.ndarray:
    onx = to_onnx(model)
    session = ort.InferenceSession(onx.SerializeToString())
    return session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})[1]


@pytest.mark.parametrize("columns", [["f4", "f3", "f2", "f1", "f0"], [4, 3, 2, 1, 0], ["a", "b", "c", "d", "e"]])
def test_feature_names_do_not_move_the_graphs_columns(columns: list) -> None:
    frame = pd.DataFrame(_X, columns=columns)
    model = xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(frame, _Y)
    np.testing.assert_allclose(_onnx_probabilities(model, _X), model.predict_proba(frame), atol=1e-6)
    assert model.get_booster().feature_names == [str(c) for c in columns]  # the estimator's own is untouched


@pytest.mark.parametrize("names", [["f0", "f1", "f2", "f3", "f4000000"], ["f0", "f1", "f2", "f3", "f-5"]])
def test_crafted_feature_names_export_the_trees_columns(state: ModelState, names: list[str]) -> None:
    model = safetensors.loads(_with(state, feature_names=names))
    plain = copy.copy(model)
    plain._Booster = model.get_booster().copy()
    plain._Booster.feature_names = None
    np.testing.assert_allclose(_onnx_probabilities(model, _X), plain.predict_proba(_X), atol=1e-6)


def test_a_split_of_more_categories_than_converts_is_refused_before_converting() -> None:
    lightgbm = pytest.importorskip("lightgbm", reason="LightGBM is an optional extra")
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(size=400), rng.integers(0, 20, 400)]).astype(float)
    y = (np.isin(X[:, 1], [0, 2, 4, 7, 11, 13, 17]) ^ (X[:, 0] > 1.5)).astype(int)
    model = lightgbm.LGBMClassifier(n_estimators=3, num_leaves=4, verbose=-1, min_child_samples=5,
                                    min_data_per_group=5, cat_smooth=1, max_cat_to_onehot=2)
    model.fit(X, y, categorical_feature=[1])
    assert 0 < _lightgbm_split_categories(model) <= 32  # a fit's: at most max_cat_threshold
    state = to_state(model)
    meta = json.loads(canonical_json(state.meta))
    words = 2 * MAX_SPLIT_CATEGORIES // 32
    meta["model"]["attrs"]["_Booster"]["feature_infos"][1] = ":".join(map(str, range(32 * words)))
    tensors = dict(state.tensors)
    n_trees = state.tensors["_Booster.num_cat"].shape[0]
    tensors["_Booster.cat_boundaries"] = np.array([0, words] * n_trees, dtype=np.int32)
    tensors["_Booster.cat_threshold"] = np.full(n_trees * words, 0xFFFFFFFF, dtype=np.uint32)
    crafted = safetensors.loads(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))
    with pytest.raises(UnsupportedExportError, match=f"tests {2 * MAX_SPLIT_CATEGORIES} categories"):
        to_onnx(crafted)
