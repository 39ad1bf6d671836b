"""Feature selectors in ONNX: a final RFE / RFECV answers its predictions, every selector its columns.

The gallery (issue 38) exported Pipeline(MinMaxScaler, RFE(LogisticRegression)) and RFECV as
graphs of their selected columns, which verification compared with ``transform`` while the
models predict: every label "wrong". Each case here runs the graph in ONNX Runtime.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import skl2onnx
from sklearn.datasets import make_classification
from sklearn.feature_selection import RFE, RFECV, SelectKBest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from aprender.exceptions import ExportParityError
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._verify import verify


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_samples=120, n_features=8, n_informative=3, n_redundant=1, n_classes=3,
                               n_clusters_per_class=1, random_state=0)


def _run(onx, X) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, input_feed(onx, X)), strict=True))


def _rfe() -> RFE:
    return RFE(LogisticRegression(max_iter=500), n_features_to_select=3)


@pytest.mark.parametrize("kind", ["rfe", "pipeline", "rfecv", "search", "tree"])
def test_a_final_rfe_exports_its_predictions(data, kind) -> None:
    X, y = data
    model = {"rfe": _rfe(),
             "pipeline": make_pipeline(MinMaxScaler(), _rfe()),
             "rfecv": RFECV(LogisticRegression(max_iter=500), cv=StratifiedKFold(3)),
             "search": GridSearchCV(make_pipeline(StandardScaler(), _rfe()), {"rfe__n_features_to_select": [2, 3]},
                                    cv=2),
             "tree": RFE(DecisionTreeClassifier(max_depth=4, random_state=0), n_features_to_select=3)}[kind].fit(X, y)
    onx = to_onnx(model, X[:5])
    out = _run(onx, X)
    assert sorted(out) == ["label", "probabilities"]
    np.testing.assert_array_equal(out["label"].ravel(), model.predict(X))
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), atol=1e-5)


def test_a_regressor_rfe_exports_its_predictions(data) -> None:
    X, y = data
    model = RFE(LinearRegression(), n_features_to_select=2).fit(X, y + 0.5)
    out = _run(to_onnx(model, dtype=np.float64), X)
    np.testing.assert_allclose(out["variable"].ravel(), model.predict(X), rtol=1e-12)


def test_an_rfe_before_another_step_stays_a_selector(data) -> None:
    X, y = data
    rfe = RFE(LogisticRegression(max_iter=500), n_features_to_select=3)
    model = make_pipeline(StandardScaler(), rfe, LogisticRegression(max_iter=500)).fit(X, y)
    out = _run(to_onnx(model, dtype=np.float64), X)
    np.testing.assert_array_equal(out["label"].ravel(), model.predict(X))
    np.testing.assert_allclose(out["probabilities"], model.predict_proba(X), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("selector", ["rfe", "kbest"])
def test_a_selector_keeping_only_the_first_column_selects_it(data, selector) -> None:
    # skl2onnx tested its indices with index.any(), False for [0]: a ConstantOfShape graph
    X, y = data
    X = np.column_stack([y + 0.01 * X[:, 0], X[:, 1:]])  # column 0 is the informative one
    model = (RFE(LogisticRegression(max_iter=500), n_features_to_select=1) if selector == "rfe"
             else SelectKBest(k=1)).fit(X, y)
    assert model.get_support(indices=True).tolist() == [0]
    transform = model.transform(X)
    if selector == "rfe":
        model = make_pipeline(model, LogisticRegression(max_iter=500)).fit(X, y)  # the RFE as a selector
        out = _run(to_onnx(model, dtype=np.float64), X)
        np.testing.assert_array_equal(out["label"].ravel(), model.predict(X))
    else:
        out = _run(to_onnx(model, dtype=np.float64), X)
        np.testing.assert_array_equal(out["variable"], transform)


def test_verification_compares_a_predictors_output_with_predict(data) -> None:
    # skl2onnx's own graph of an RFE: its selected columns, which verification took for transform
    X, y = data
    model = _rfe().fit(X, y)
    selection = skl2onnx.to_onnx(model, X[:1].astype(np.float32))
    assert [o.name for o in selection.graph.output] == ["variable"]
    with pytest.raises(ExportParityError, match=r"variable: (\d+) of \1 rows differ, shape \[\1, 3\] vs \[\1\]"):
        verify(selection, model, X[:5])


def test_verification_refuses_a_graph_without_the_models_predictions(data) -> None:
    X, y = data
    model = LogisticRegression(max_iter=500).fit(X, y)
    onx = skl2onnx.to_onnx(model, X[:1].astype(np.float32), options={"zipmap": False})
    label = next(o for o in onx.graph.output if o.name == "label")
    onx.graph.output.remove(label)  # probabilities only
    with pytest.raises(ExportParityError, match=r"no output answers predict \(the graph's outputs: probabilities\)"):
        verify(onx, model, X[:5])
