"""IsolationForest in ONNX decides and scores as scikit-learn does (aprender/format/onnx/_iforest.py).

Probed at every split threshold, the float32 values on either side of it and the float64
values on either side of it, with missing values, alone and after a scaler, in both graph
precisions; each case runs the graph in ONNX Runtime.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.ensemble import IsolationForest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from aprender.exceptions import ExportPrecisionWarning
from aprender.format.onnx import input_feed, to_onnx


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.normal(size=(200, 4)) * [1.0, 10.0, 0.01, 1000.0]


def _run(onx, X) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return {k: v.ravel() for k, v in zip([o.name for o in sess.get_outputs()], sess.run(None, input_feed(onx, X)),
                                         strict=True)}


def _at_thresholds(forest: IsolationForest, base: np.ndarray) -> np.ndarray:
    """Rows of ``base`` with one feature set to a threshold or one of its float32 / float64 neighbours."""
    rows = []
    subsample = forest._max_features != forest.n_features_in_
    for est, features in zip(forest.estimators_, forest.estimators_features_, strict=True):
        tree = est.tree_
        for f, t in zip(tree.feature[tree.feature >= 0], tree.threshold[tree.feature >= 0], strict=True):
            t32 = np.float32(t)
            for value in (t, t32, np.nextafter(t32, np.float32(-np.inf)), np.nextafter(t32, np.float32(np.inf)),
                          np.nextafter(t, -np.inf), np.nextafter(t, np.inf)):
                row = base[len(rows) % len(base)].copy()
                row[features[f] if subsample else f] = value
                rows.append(row)
    return np.asarray(rows)


def _assert_same(forest_or_pipe, onx, X, exact: bool) -> None:
    out = _run(onx, X)
    np.testing.assert_array_equal(out["label"], forest_or_pipe.predict(X))
    tol = {"rtol": 1e-12, "atol": 1e-12} if exact else {"rtol": 1e-6, "atol": 1e-7}
    np.testing.assert_allclose(out["scores"], forest_or_pipe.decision_function(X), **tol)
    np.testing.assert_allclose(out["score_samples"], forest_or_pipe.score_samples(X), **tol)


@pytest.mark.parametrize("dtype", [None, np.float32], ids=["default-double", "float32"])
@pytest.mark.parametrize("params", [{}, {"max_features": 0.6}, {"bootstrap": True, "max_samples": 50}],
                         ids=["defaults", "max-features", "bootstrap"])
def test_isolation_forest_decides_at_every_threshold_as_scikit_learn(data, dtype, params) -> None:
    forest = IsolationForest(n_estimators=10, random_state=0, **params).fit(data)
    X = _at_thresholds(forest, data)
    if dtype is not None:  # a float32 graph's input is float32: scikit-learn given the same rows
        X = X.astype(np.float32).astype(np.float64)
    onx = to_onnx(forest, dtype=dtype, options={"score_samples": True})
    assert onx.graph.input[0].type.tensor_type.elem_type == (11 if dtype is None else 1)
    _assert_same(forest, onx, X, exact=dtype is None)


def test_missing_values_go_where_scikit_learn_sends_them(data) -> None:
    rng = np.random.default_rng(1)
    X = data.copy()
    X[rng.random(X.shape) < 0.1] = np.nan
    forest = IsolationForest(n_estimators=10, random_state=0).fit(X)
    probe = data.copy()
    probe[rng.random(probe.shape) < 0.3] = np.nan
    _assert_same(forest, to_onnx(forest, options={"score_samples": True}), probe, exact=True)


@pytest.mark.parametrize("sample", [False, True], ids=["no-sample", "sample"])
def test_after_a_scaler_the_default_graph_is_double_and_exact(data, sample) -> None:
    pipe = make_pipeline(StandardScaler(), IsolationForest(n_estimators=10, random_state=0)).fit(data)
    X = pipe[0].inverse_transform(_at_thresholds(pipe[-1], pipe[0].transform(data)))
    onx = to_onnx(pipe, X=data[:5] if sample else None)
    parity = json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])
    assert parity["verified"] and parity["source"] == ("sample+synthesized" if sample else "synthesized")
    out = _run(onx, X)
    np.testing.assert_array_equal(out["label"], pipe.predict(X))
    np.testing.assert_allclose(out["scores"], pipe.decision_function(X), rtol=1e-12, atol=1e-12)


def test_a_float32_graph_after_a_scaler_is_warned_about(data) -> None:
    # the scaler computed in float32 sends rows at the thresholds the other way: the caller's choice, warned
    pipe = make_pipeline(StandardScaler(), IsolationForest(n_estimators=10, random_state=0)).fit(data)
    with pytest.warns(ExportPrecisionWarning, match="StandardScaler in float32 before its trees"):
        to_onnx(pipe, dtype=np.float32)
