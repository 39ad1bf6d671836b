"""Converters never silently wrong: each model scikit-learn's example gallery exported wrong or crashed on.

Issue 38 ran the gallery through ``aprender.save(est, "m.onnx")`` (skl2onnx 1.20, ONNX
Runtime 1.32). One case per model here: small data, real ONNX Runtime; each either
exports with parity, asserted on the rows ONNX Runtime runs, or is refused with an
aprender error whose message gives the reason. docs/onnx.md has the same table.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from aprender.format.onnx import input_feed, to_onnx


@pytest.fixture(scope="module")
def iris() -> tuple[np.ndarray, np.ndarray]:
    return load_iris(return_X_y=True)


def _run(onx, X) -> dict[str, np.ndarray]:
    """Every output of the graph on ``X``, by name, as ONNX Runtime computes it."""
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, input_feed(onx, X)), strict=True))


def _parity(onx) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


def _rounded(onx, X: np.ndarray) -> np.ndarray:
    """The rows as the graph sees them (a float32 input rounds them): what the estimator is compared on."""
    return X.astype(np.float32).astype(np.float64) if onx.graph.input[0].type.tensor_type.elem_type == 1 else X


@pytest.mark.parametrize("wrap", ["alone", "binary", "pipeline", "search", "string labels"])
def test_one_vs_rest_over_linear_svc_exports_its_decision_function(iris, wrap) -> None:
    # skl2onnx read one column of each LinearSVC's [-d, d] and normalised the scores: 11.2 off
    X, y = iris
    y = {"binary": (y > 0).astype(int), "string labels": np.array(["a", "b", "c"])[y]}.get(wrap, y)
    ovr = OneVsRestClassifier(LinearSVC())
    model = {"pipeline": lambda: make_pipeline(StandardScaler(), ovr),
             "search": lambda: GridSearchCV(ovr, {"estimator__C": [0.5, 1.0]}, cv=2)}.get(wrap, lambda: ovr)()
    model.fit(X, y)
    onx = to_onnx(model, X)
    got, seen = _run(onx, X), _rounded(onx, X)
    np.testing.assert_array_equal(got["label"], model.predict(seen))
    scores = model.decision_function(seen)
    if scores.ndim == 1:
        np.testing.assert_array_equal(got["probabilities"][:, 0], -got["probabilities"][:, 1])
        scores = np.column_stack([-scores, scores])
    np.testing.assert_allclose(got["probabilities"], scores, rtol=1e-4, atol=1e-5)
    assert _parity(onx)["outputs"]["label"]["differing_rows"] == 0
