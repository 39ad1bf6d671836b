"""Verified ONNX export: a graph that disagrees with its estimator is never written silently.

Each wrong export here was found by running scikit-learn's example gallery through
``aprender.save(est, "m.onnx")`` (issue 38); each must now export with parity or be
refused with a reason. Small data keeps the module fast.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import onnx
import pytest
from cli_run import invoke
from sklearn.datasets import load_iris
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import aprender
from aprender.exceptions import ExportParityError, UnsupportedExportError
from aprender.format.onnx import to_onnx
from aprender.format.onnx._sample_probe import probe
from aprender.format.onnx._verify import verify


def _parity(onx) -> dict:
    return json.loads({p.key: p.value for p in onx.metadata_props}["aprender.parity"])


@pytest.fixture(scope="module")
def iris() -> tuple[np.ndarray, np.ndarray]:
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def wrong(iris):
    """A model and a graph that predicts otherwise: the graph of one fit, checked against another."""
    X, y = iris
    return LinearRegression().fit(X, y), LinearRegression().fit(X, y[::-1].copy())


def test_a_wrong_graph_is_refused_with_the_difference_and_the_remedies(iris, wrong) -> None:
    model, other = wrong
    onx = to_onnx(other, verify=False)
    with pytest.raises(ExportParityError) as info:
        verify(onx, model, iris[0])
    text = str(info.value)
    rows = len(probe(model, iris[0])[0])
    assert f"variable: {rows} of {rows} rows differ" in text and "max |difference|" in text
    assert f"the sample's 150 rows and {rows - 150} rows made around them" in text
    assert info.value.outputs["variable"]["differing_rows"] == rows
    for remedy in ("dtype=numpy.float64", "tolerance=", "verify=False"):
        assert remedy in text
    assert isinstance(info.value, UnsupportedExportError)  # callers catching refusals catch it too


def test_a_looser_tolerance_accepts_what_it_says(iris, wrong) -> None:
    model, other = wrong
    onx = to_onnx(other, verify=False)
    probed = probe(model, iris[0])[0].astype(np.float32)
    diff = float(np.abs(model.predict(probed) - other.predict(probed)).max())
    record = verify(onx, model, iris[0], tolerance={"atol": diff * 1.01})
    assert record["verified"] and record["outputs"]["variable"]["max_abs"] == pytest.approx(diff, rel=1e-3)
    with pytest.raises(ExportParityError):
        verify(onx, model, iris[0], tolerance={"atol": diff * 0.5})


def test_verify_false_writes_it_unverified_and_says_so(iris) -> None:
    onx = to_onnx(LogisticRegression(max_iter=500).fit(*iris), verify=False)
    assert _parity(onx) == {"verified": False, "reason": "verify=False",
                            "dtype": {"chosen": "float32", "reason": "default: nothing in the model asks for double"}}


@pytest.mark.parametrize("with_sample", [True, False], ids=["sample", "synthesized"])
def test_parity_metadata_is_written_and_inspect_shows_it(iris, tmp_path, capsys, with_sample) -> None:
    X, y = iris
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, y)
    path = tmp_path / "m.onnx"
    aprender.save(model, path, X=X if with_sample else None)
    report = functools.partial(invoke, capsys)("inspect", path, "--json").json
    parity = report["metadata"]["parity"]
    assert parity["verified"] is True
    assert parity["source"] == ("sample+synthesized" if with_sample else "synthesized")
    assert parity.get("sample_rows") == (150 if with_sample else None) and parity["rows"] > 150 * with_sample
    assert parity["dtype"] == {"chosen": "float32", "reason": "default: nothing in the model asks for double"}
    assert parity["outputs"]["label"]["differing_rows"] == 0
    assert parity["outputs"]["probabilities"]["max_abs"] <= 1e-5


def test_float_transforms_before_trees_that_change_predictions_are_refused_with_the_fix(iris) -> None:
    X, y = iris  # StandardScaler in float32 sends 2 of 150 iris rows down another branch (0.1 off)
    model = make_pipeline(StandardScaler(), RandomForestClassifier(10, random_state=0)).fit(X, y)
    with pytest.warns(Warning), pytest.raises(ExportParityError, match=r"StandardScaler in float32.*dtype=None"):
        to_onnx(model, X, dtype=np.float32)  # the compact graph
    assert _parity(to_onnx(model, X))["outputs"]["label"]["differing_rows"] == 0  # the default, exact graph


def test_hgb_poisson_and_gamma_get_their_inverse_link(iris) -> None:
    X, y = iris
    for loss in ("poisson", "gamma"):  # the gallery measured 2.14 off without exp()
        model = HistGradientBoostingRegressor(loss=loss, max_iter=20).fit(X, y + 1)
        parity = _parity(to_onnx(model, X))
        assert parity["verified"] and parity["outputs"]["variable"]["max_abs"] < 1e-4


@pytest.mark.parametrize("wrap", ["pipeline", "search"])
def test_linear_svc_inside_a_meta_estimator_exports(iris, wrap) -> None:
    X, y = iris  # skl2onnx used to fail with "Option 'zipmap' not in [...] for class 'LinearSVC'"
    model = {"pipeline": lambda: make_pipeline(StandardScaler(), LinearSVC()),
             "search": lambda: GridSearchCV(LinearSVC(), {"C": [0.5, 1.0]}, cv=2)}[wrap]().fit(X, y)
    parity = _parity(to_onnx(model, X))
    assert parity["outputs"]["label"]["differing_rows"] == 0
    assert parity["outputs"]["probabilities"]["max_abs"] < 1e-4  # decision_function


def test_a_graph_onnx_runtime_cannot_load_is_refused(iris) -> None:
    X, y = iris  # skl2onnx's com.microsoft:Solve (GaussianProcessClassifier's, before aprender rewrote it)
    model = LinearRegression().fit(X, y)
    onx = to_onnx(model, verify=False)
    onx.graph.node.append(onnx.helper.make_node("Solve", ["X", "X"], ["solved"], domain="com.microsoft"))
    onx.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    with pytest.raises(UnsupportedExportError, match=r"cannot run the graph.*com.microsoft:Solve"):
        verify(onx, model, X)
