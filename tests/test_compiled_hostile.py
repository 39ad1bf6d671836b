"""Hostile files against values that reach compiled code: KD/Ball trees, interp1d, BSpline, SGD losses, HDBSCAN.

Each crafted file is loaded in a fresh subprocess, so a segfault fails the test
instead of killing pytest; the child must raise an ``AprenderError``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from child import load_and_use
from sklearn.cluster import HDBSCAN
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import SGDClassifier
from sklearn.neighbors import KernelDensity, NearestNeighbors
from sklearn.preprocessing import SplineTransformer

from aprender.codec import ModelState, canonical_json, from_state, to_state
from aprender.codec.schemas._binary_tree import FIELDS
from aprender.exceptions import FormatError
from aprender.format import safetensors

_X = np.random.RandomState(0).normal(size=(30, 3))


def _models() -> dict[str, object]:
    return {
        "nn": NearestNeighbors(algorithm="kd_tree", leaf_size=4).fit(_X),
        "kde": KernelDensity(algorithm="ball_tree").fit(_X),
        "iso": IsotonicRegression().fit(_X[:, 0], _X[:, 1]),
        "spline": SplineTransformer(n_knots=4).fit(_X),
        "sgd": SGDClassifier(random_state=0).fit(_X, (_X[:, 0] > 0).astype(int)),
        "hdbscan": HDBSCAN(min_cluster_size=3, copy=True).fit(_X),
    }


def _edit(state: ModelState, attr: str, field: str, value: object = None, tensor: np.ndarray | None = None) -> bytes:
    """A file whose ``attr`` node has ``field`` replaced (a JSON value, or a tensor's contents)."""
    meta = json.loads(canonical_json(state.meta))
    node = meta["model"]["attrs"][attr]
    node = node[0] if isinstance(node, list) else node
    *parents, field = field.split(".")  # "columns.0": the first column of a record array
    for part in parents:
        node = node[int(part) if part.isdigit() else part]
    tensors = dict(state.tensors)
    if tensor is not None:
        tensors[node[int(field) if field.isdigit() else field]["name"]] = tensor
    else:
        node[field] = value
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


def _load_in_subprocess(paths: dict[str, str]) -> dict[str, str]:
    """Load every file in one child process; case -> "AprenderError: ..." or "USED" (loaded)."""
    return load_and_use({case: (path, "") for case, path in paths.items()})


CASES = {
    "tree-leaf-size-zero": ("kde", "tree_", "leaf_size", 0, None),
    "tree-unknown-kind": ("kde", "tree_", "kind", "os.system", None),
    "tree-unknown-metric": ("kde", "tree_", "metric", "pyfunc", None),
    "tree-nan-data": ("kde", "tree_", "data", None, np.full((30, 3), np.nan)),
    "tree-empty-data": ("kde", "tree_", "data", None, np.zeros((0, 3))),
    "tree-1d-data": ("kde", "tree_", "data", None, np.zeros(90)),
    "interp-unsorted-x": ("iso", "f_", "x", None, np.array([3.0, 2.0, 1.0])),
    "interp-bad-kind": ("iso", "f_", "kind", "spline42", None),
    "interp-axis-out-of-range": ("iso", "f_", "axis", 7, None),
    "bspline-unsorted-knots": ("spline", "bsplines_", "t", None, np.arange(10.0)[::-1].copy()),
    "bspline-huge-degree": ("spline", "bsplines_", "k", 1 << 40, None),
    "bspline-few-coefficients": ("spline", "bsplines_", "c", None, np.zeros(1)),
    "sgd-unknown-loss": ("sgd", "_loss_function_", "loss", "Log", None),
    "sgd-loss-args": ("sgd", "_loss_function_", "args", [1.0, 2.0], None),
    # HDBSCAN's single-linkage tree: merges index a union-find in compiled code (dbscan_clustering).
    "linkage-merge-ahead": ("hdbscan", "_single_linkage_tree_", "columns.0", None, np.full(29, 10**6)),
    "linkage-negative-merge": ("hdbscan", "_single_linkage_tree_", "columns.1", None, np.full(29, -1)),
    "records-object-field": ("hdbscan", "_single_linkage_tree_", "fields",
                             [["left_node", "|O"], ["right_node", "<i8"], ["value", "<f8"], ["cluster_size", "<i8"]],
                             None),
    "records-duplicate-field": ("hdbscan", "_single_linkage_tree_", "fields",
                                [["a", "<i8"], ["a", "<i8"], ["value", "<f8"], ["cluster_size", "<i8"]], None),
    "records-huge-shape": ("hdbscan", "_single_linkage_tree_", "shape", [2**40], None),
    "records-short-column": ("hdbscan", "_single_linkage_tree_", "columns.2", None, np.zeros(3)),
}


@pytest.fixture(scope="module")
def states() -> dict[str, ModelState]:
    return {name: to_state(model) for name, model in _models().items()}


@pytest.fixture(scope="module")
def hostile(states, tmp_path_factory) -> dict[str, bytes]:
    return {case: _edit(states[m], attr, field, value, tensor)
            for case, (m, attr, field, value, tensor) in CASES.items()}


@pytest.fixture(scope="module")
def child_results(hostile, tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for case, raw in hostile.items():
        paths[case] = str(folder / f"{case}.safetensors")
        (folder / f"{case}.safetensors").write_bytes(raw)
    return _load_in_subprocess(paths)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_compiled_values_raise_aprender_errors(case, hostile, child_results) -> None:
    with pytest.raises(FormatError):  # in this process too: a FormatError, not a crash
        safetensors.loads(hostile[case])
    assert child_results[case].startswith("AprenderError:"), child_results[case]


def test_linkage_tree_round_trips_as_records(states) -> None:
    model = _models()["hdbscan"]
    loaded = from_state(states["hdbscan"])
    assert loaded._single_linkage_tree_.dtype == model._single_linkage_tree_.dtype
    assert loaded._single_linkage_tree_.tobytes() == model._single_linkage_tree_.tobytes()
    assert np.array_equal(loaded.dbscan_clustering(0.8), model.dbscan_clustering(0.8))
    node = states["hdbscan"].meta["model"]["attrs"]["_single_linkage_tree_"]
    assert node["fields"] == [["left_node", "<i8"], ["right_node", "<i8"], ["value", "<f8"], ["cluster_size", "<i8"]]


def test_trees_round_trip(states) -> None:
    kde, nn = _models()["kde"], _models()["nn"]
    loaded = from_state(states["kde"])
    for a, b in zip(kde.tree_.get_arrays(), loaded.tree_.get_arrays(), strict=True):
        assert np.array_equal(a, b)
    attrs = states["kde"].meta["model"]["attrs"]["tree_"]
    # KernelDensity's tree: its data and settings, and the tree's own arrays (restored once checked)
    assert sorted(attrs) == sorted({"__t__", "data", "kind", "metric", *FIELDS})
    # A neighbors estimator stores its tree's node arrays, checked on load, and its data once (as _fit_X).
    assert sorted(key for key, _ in states["nn"].meta["model"]["attrs"]["_tree"]["items"]) == sorted(FIELDS)
    assert not any(name.endswith("data") for name in states["nn"].tensors)
    loaded = from_state(states["nn"])
    for a, b in zip(nn._tree.get_arrays(), loaded._tree.get_arrays(), strict=True):
        assert np.array_equal(a, b) and a.dtype == b.dtype
    assert np.shares_memory(loaded._tree.data, loaded._fit_X)
