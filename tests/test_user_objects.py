"""Objects users really put in models, which scikit-learn's gallery fits: each saves, loads and behaves the same.

``range`` in a search's grid, COO connectivity graphs, a splitter class as ``cv``,
``CalibratedClassifierCV(method="temperature")``, a ``joblib.Memory``-cached score
function and metadata routing requests (``set_fit_request``). Each is also lied about
in a file, and the lie is refused at load.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
import sklearn.calibration
from sklearn.calibration import CalibratedClassifierCV
from sklearn.cluster import AgglomerativeClustering, FeatureAgglomeration
from sklearn.datasets import make_classification
from sklearn.feature_selection import RFECV, SelectKBest, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from state_edit import find, hostile

import aprender
from aprender.codec.handlers.std import MAX_RANGE

X, Y = make_classification(80, 6, random_state=0)


def _roundtrip(model, tmp_path, suffix: str = ".apr"):
    path = tmp_path / f"model{suffix}"
    aprender.save(model, path)
    return aprender.load(path)


@pytest.mark.parametrize("suffix", [".apr", ".safetensors", ".gguf"])
def test_a_range_in_a_search_grid(suffix, tmp_path) -> None:
    search = GridSearchCV(SVC(), {"C": range(1, 4)}, cv=2).fit(X, Y)
    loaded = _roundtrip(search, tmp_path, suffix)
    assert loaded.param_grid["C"] == range(1, 4) and type(loaded.param_grid["C"]) is range
    assert np.array_equal(loaded.decision_function(X), search.decision_function(X))
    assert np.array_equal(loaded.fit(X, Y).decision_function(X), search.fit(X, Y).decision_function(X))


@pytest.mark.parametrize(("bounds", "message"), [
    ([0, MAX_RANGE + 1, 1], f"at most {MAX_RANGE} are stored"),
    ([0, 2**70, 1], "is outside the int64/uint64 range"),
    ([0, 10, 0], "invalid range bounds"),
])
def test_a_range_that_lies_is_refused(bounds, message, tmp_path) -> None:
    def edit(meta, tensors):
        node = find(meta, "GridSearchCV")["params"]["param_grid"]["items"][0][1]
        assert node["__t__"] == "range"
        node.update(zip(("start", "stop", "step"), bounds, strict=True))

    assert message in str(hostile(GridSearchCV(SVC(), {"C": range(1, 3)}, cv=2).fit(X, Y), edit, tmp_path))


def test_a_range_too_long_is_refused_at_save(tmp_path) -> None:
    search = GridSearchCV(SVC(), {"C": range(1, 3)}, cv=2).fit(X, Y)
    search.param_grid = {"C": range(MAX_RANGE + 1)}
    with pytest.raises(aprender.exceptions.UnsupportedTypeError, match="a stored range holds at most"):
        aprender.save(search, tmp_path / "m.apr")


def _chain(n: int, array: bool = False) -> sp.coo_matrix:
    rows = np.r_[np.arange(n - 1), np.arange(1, n)]
    cols = np.r_[np.arange(1, n), np.arange(n - 1)]
    return (sp.coo_array if array else sp.coo_matrix)((np.ones(2 * n - 2), (rows, cols)), shape=(n, n))


@pytest.mark.parametrize("array", [False, True], ids=["coo_matrix", "coo_array"])
def test_coo_connectivity(array, tmp_path) -> None:
    models = [AgglomerativeClustering(n_clusters=3, connectivity=_chain(80, array)).fit(X),
              FeatureAgglomeration(n_clusters=2, connectivity=_chain(6, array)).fit(X)]
    for model in models:
        loaded = _roundtrip(model, tmp_path)
        assert type(loaded.connectivity) is type(model.connectivity)
        assert (loaded.connectivity != model.connectivity).nnz == 0
        assert np.array_equal(loaded.labels_, model.labels_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(_roundtrip(models[0], tmp_path).fit_predict(X), models[0].fit_predict(X))
    assert np.array_equal(_roundtrip(models[1], tmp_path).transform(X), models[1].transform(X))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("row", 80, "COO 'row' indices must lie in [0, 80)"),
    ("col", -1, "COO 'col' indices must lie in [0, 80)"),
])
def test_coo_indices_that_lie_are_refused(field, value, message, tmp_path) -> None:
    def edit(meta, tensors):
        name = f"connectivity.{field}"
        tensors[name] = tensors[name].copy()
        tensors[name][3] = value

    assert message in str(hostile(AgglomerativeClustering(n_clusters=3, connectivity=_chain(80)).fit(X), edit,
                                  tmp_path))


def test_a_splitter_class_as_cv(tmp_path) -> None:
    model = RFECV(LogisticRegression(), cv=3).fit(X, Y)
    model.set_params(cv=StratifiedKFold)  # scikit-learn accepts the class itself where a splitter goes
    loaded = _roundtrip(model, tmp_path)
    assert loaded.cv is StratifiedKFold
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_a_class_value_outside_the_splitters_is_refused(tmp_path) -> None:
    model = RFECV(LogisticRegression(), cv=3).fit(X, Y)
    model.set_params(cv=StratifiedKFold)

    def edit(meta, tensors):
        find(meta, "RFECV")["params"]["cv"]["v"] = "sklearn.metrics._scorer._Scorer"

    assert "may not stand as a value" in str(hostile(model, edit, tmp_path))


@pytest.mark.skipif(not hasattr(sklearn.calibration, "_TemperatureScaling"),
                    reason="CalibratedClassifierCV(method='temperature') is new in 1.8")
def test_temperature_scaling(tmp_path) -> None:
    model = CalibratedClassifierCV(LogisticRegression(), method="temperature").fit(X, Y)
    loaded = _roundtrip(model, tmp_path)
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))


def test_a_memory_cached_score_function_is_stored_as_its_function(tmp_path) -> None:
    import joblib

    cached = joblib.Memory(tmp_path / "cache", verbose=0).cache(f_classif)
    model = SelectKBest(cached, k=3).fit(X, Y)
    loaded = _roundtrip(model, tmp_path)
    assert loaded.score_func is f_classif  # the cache folder's pickles are never kept
    assert np.array_equal(loaded.transform(X), model.transform(X))
    assert np.array_equal(loaded.fit(X, Y).scores_, model.scores_)


def _routed() -> Pipeline:
    weights = np.linspace(0.5, 2.0, len(Y))
    scaler = StandardScaler().set_fit_request(sample_weight=False)
    classifier = LogisticRegression().set_fit_request(sample_weight=True)
    return Pipeline([("scale", scaler), ("clf", classifier)]).fit(X, Y, sample_weight=weights)


def test_metadata_routing_requests_are_kept(tmp_path) -> None:
    weights = np.linspace(2.0, 0.5, len(Y))
    with sklearn.config_context(enable_metadata_routing=True):
        model = _routed()
        loaded = _roundtrip(model, tmp_path)
        assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
        assert str(loaded.get_metadata_routing()) == str(model.get_metadata_routing())
        loaded.fit(X, Y, sample_weight=weights)
        assert np.array_equal(loaded.predict_proba(X), model.fit(X, Y, sample_weight=weights).predict_proba(X))


def test_a_metadata_request_whose_owner_is_not_a_name_is_refused(tmp_path) -> None:
    def edit(meta, tensors):
        request = find(meta, "LogisticRegression")["attrs"]["_metadata_request"]
        request["state"]["owner"] = [1, 2]

    with sklearn.config_context(enable_metadata_routing=True):
        assert "names its owner by class name" in str(hostile(_routed(), edit, tmp_path))


_CALLBACKS = pytest.mark.skipif(importlib.util.find_spec("sklearn.callback") is None,
                                reason="scikit-learn's callbacks (sklearn.callback) are new in 1.9")


def _monitored() -> LogisticRegression:
    from sklearn.callback import ScoringMonitor

    return LogisticRegression().set_callbacks(ScoringMonitor(scoring="accuracy")).fit(X, Y)


@_CALLBACKS
def test_a_scoring_monitor_is_stored_as_its_configuration(tmp_path) -> None:
    from sklearn.callback import ProgressBar, ScoringMonitor

    model = _monitored()
    loaded = _roundtrip(model, tmp_path)
    (monitor,) = loaded._skl_callbacks
    assert type(monitor) is ScoringMonitor and monitor._scoring == ["accuracy"] and monitor._log == []
    assert np.array_equal(loaded.predict_proba(X), model.predict_proba(X))
    loaded.fit(X, Y)  # the rebuilt monitor monitors the refit as the original monitored the fit
    assert [r[-1] for r in monitor._log] == [r[-1] for r in model._skl_callbacks[0]._log]
    aprender.save(model, tmp_path / "again.apr")  # no session key, log or clock in the bytes
    assert (tmp_path / "again.apr").read_bytes() == (tmp_path / "model.apr").read_bytes()
    bar = _roundtrip(LogisticRegression().set_callbacks(ProgressBar(max_propagation_depth=2)).fit(X, Y), tmp_path)
    assert type(bar._skl_callbacks[0]) is ProgressBar and bar._skl_callbacks[0].max_propagation_depth == 2


@_CALLBACKS
@pytest.mark.parametrize(("edit_node", "message"), [
    (lambda node: node.update({"class": "ProgressBarX"}), "callback class 'ProgressBarX' is not allow-listed"),
    (lambda node: node["config"].update({"extra": 1}), "a ScoringMonitor is configured by exactly ['scoring']"),
    (lambda node: node["config"].update({"scoring": "not a metric"}), "invalid ScoringMonitor configuration"),
])
def test_a_callback_that_lies_is_refused(edit_node, message, tmp_path) -> None:
    def edit(meta, tensors):
        edit_node(find(meta, "LogisticRegression")["attrs"]["_skl_callbacks"][0])

    assert message in str(hostile(_monitored(), edit, tmp_path))
