"""Birch's CF-tree and BisectingKMeans' bisecting tree: stored as flat arrays, checked as trees.

Round trips must predict, transform and (Birch) continue ``partial_fit`` bit for bit,
and save again to the same bytes. Crafted files (the library's own writer, one array
or value changed) are loaded *and used* in a child process: every one must raise an
``AprenderError`` at load, so no lie reaches scikit-learn's compiled k-means or
pairwise-distance code or its in-place table writes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp
from child import load_and_use

import aprender
from aprender.cluster import Birch, BisectingKMeans
from aprender.codec import ModelState, from_state, to_state
from aprender.exceptions import FormatError, InferenceOnlyError
from aprender.format import apr, gguf, safetensors

_X = np.random.RandomState(0).normal(size=(120, 3))
_MORE = np.random.RandomState(1).normal(size=(40, 3))
_FORMATS = [(safetensors.state_to_bytes, safetensors.state_from_bytes), (apr.state_to_bytes, apr.state_from_bytes),
            (gguf.state_to_bytes, gguf.state_from_bytes)]


def _birch(X=_X, **kw) -> Birch:
    return Birch(**{"branching_factor": 4, "threshold": 0.4, "n_clusters": 3, **kw}).fit(X)


def _bisecting(X=_X, **kw) -> BisectingKMeans:
    return BisectingKMeans(**{"n_clusters": 5, "random_state": 0, **kw}).fit(X)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
def test_birch_round_trip_predicts_and_continues_identically(dtype, sparse) -> None:
    X, more = _X.astype(dtype), _MORE.astype(dtype)
    if sparse:
        X, more = sp.csr_matrix(X), sp.csr_matrix(more)
    state = to_state(_birch(X))
    for dump, parse in _FORMATS:
        model, loaded = _birch(X), from_state(parse(dump(state)))
        assert np.array_equal(loaded.predict(X), model.predict(X))
        assert loaded.transform(X).tobytes() == model.transform(X).tobytes()
        # partial_fit grows the rebuilt tree in place exactly as it grows the original
        model.partial_fit(more)
        loaded.partial_fit(more)
        assert safetensors.state_to_bytes(to_state(loaded)) == safetensors.state_to_bytes(to_state(model))
        assert np.array_equal(loaded.predict(more), model.predict(more))


def test_birch_tree_keeps_scikit_learns_views_and_leaf_chain() -> None:
    loaded = from_state(to_state(_birch()))
    nodes, leaves = [loaded.root_], []
    for node in nodes:
        assert node.centroids_.base is node.init_centroids_ and node.squared_norm_.base is node.init_sq_norm_
        assert node.init_centroids_.shape == (node.branching_factor + 1, 3)
        nodes += [s.child_ for s in node.subclusters_ if s.child_ is not None]
    leaf = loaded.dummy_leaf_.next_leaf_
    assert leaf.prev_leaf_ is loaded.dummy_leaf_
    while leaf is not None:
        leaves.append(leaf)
        leaf = leaf.next_leaf_
    assert {id(n) for n in leaves} == {id(n) for n in nodes if n.is_leaf}
    assert np.array_equal(np.concatenate([n.centroids_ for n in leaves]), loaded.subcluster_centers_)


def test_birch_inference_only_file_refuses_partial_fit(tmp_path) -> None:
    model = _birch()
    path = tmp_path / "birch.apr"
    aprender.save(model, path, inference_only=True)
    loaded = aprender.load(path)
    assert np.array_equal(loaded.predict(_X), model.predict(_X))
    assert not any(name.startswith("root_") for name in to_state(loaded).tensors)
    with pytest.raises(InferenceOnlyError):
        loaded.partial_fit(_MORE)


@pytest.mark.parametrize("kw", [{}, {"algorithm": "elkan"}, {"bisecting_strategy": "largest_cluster"},
                                {"n_clusters": 1}, {"sparse": True}])
def test_bisecting_kmeans_round_trip_is_bit_identical(kw) -> None:
    kw = dict(kw)
    X = sp.csr_matrix(_X) if kw.pop("sparse", False) else _X
    model = _bisecting(X, **kw)
    state = to_state(model)
    for dump, parse in _FORMATS:
        loaded = from_state(parse(dump(state)))
        for method in ("predict", "transform", "score"):
            assert np.array_equal(getattr(loaded, method)(X), getattr(model, method)(X)), method
        assert loaded._kmeans_single is model._kmeans_single  # chosen from `algorithm`, never from the file
        assert type(loaded._bisecting_tree.center) is type(model._bisecting_tree.center)
        assert safetensors.state_to_bytes(to_state(loaded)) == safetensors.state_to_bytes(state)


def _set(name: str, value: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        tensors[name] = np.ascontiguousarray(value(tensors[name].copy()))
    return edit


def _at(index, new):
    def change(a: np.ndarray) -> np.ndarray:
        a[index] = new
        return a
    return change


def _json(attr: str, key: str, value: object) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        for item in meta["model"]["attrs"][attr]["items"]:
            if item[0] == key:
                item[1] = value
    return edit


def _fewer_centers(meta: dict, tensors: dict) -> None:
    """Centres, norms, labels and width consistent with each other, one fewer than the leaves hold."""
    for name in ("subcluster_centers_", "_subcluster_norms", "subcluster_labels_"):
        tensors[name] = np.ascontiguousarray(tensors[name][:-1])
    meta["model"]["attrs"]["_n_features_out"] -= 1


_FIRST_INNER_CHILD = 0  # the root's first subcluster: the root is an inner node in these trees

BIRCH_CASES: dict[str, Callable[[dict, dict], None]] = {
    "child-cycle": _set("root_.sub_child", _at(_FIRST_INNER_CHILD, 0)),
    "child-out-of-range": _set("root_.sub_child", _at(_FIRST_INNER_CHILD, 2**40)),
    "child-shared": _set("root_.sub_child", lambda a: np.where(a == 2, 1, a)),
    "child-negative": _set("root_.sub_child", _at(_FIRST_INNER_CHILD, -7)),
    "leaf-flipped": _set("root_.node_is_leaf", _at(0, True)),
    "leaf-order-repeats": _set("root_.leaf_order", lambda a: np.full_like(a, a[0])),
    "leaf-order-names-inner-node": _set("root_.leaf_order", _at(0, 0)),
    "offsets-decrease": _set("root_.node_offsets", lambda a: a[::-1]),
    "offsets-past-subclusters": _set("root_.node_offsets", _at(-1, 10**6)),
    "node-over-branching-factor": _set("root_.node_branching_factor", lambda a: np.full_like(a, 1)),
    "branching-factor-huge": _set("root_.node_branching_factor", _at(0, 2**40)),
    "branching-factor-wraps": _set("root_.node_branching_factor", lambda a: np.full_like(a, 2**62)),
    "threshold-zero": _set("root_.node_threshold", _at(1, 0.0)),
    "centroid-too-wide": _set("root_.sub_centroid", lambda a: np.zeros((a.shape[0], 4))),
    "linear-sum-nan": _set("root_.sub_linear_sum", _at((2, 1), np.nan)),
    "sq-norm-inf": _set("root_.sub_sq_norm", _at(0, np.inf)),
    "no-samples": _set("root_.sub_n_samples", _at(3, 0)),
    "dummy-branching-factor-huge": _json("root_", "dummy_branching_factor", 2**62),
    "node-dtype-object": _json("root_", "node_dtype", "object"),
    "norms-short": _set("_subcluster_norms", lambda a: a[:1]),
    "labels-short": _set("subcluster_labels_", lambda a: a[:-1]),
    "centers-too-narrow": _set("subcluster_centers_", lambda a: a[:, :2]),
    "centers-nan": _set("subcluster_centers_", _at((0, 0), np.nan)),
    "leaves-disagree-with-centers": _fewer_centers,
}

BISECTING_CASES: dict[str, Callable[[dict, dict], None]] = {
    "child-out-of-range": _set("_bisecting_tree.left", _at(0, 2**40)),
    "child-cycle": _set("_bisecting_tree.left", _at(0, 0)),
    "child-shared": _set("_bisecting_tree.right", lambda a: np.where(a == a.max(), a.max() - 1, a)),
    "one-child": _set("_bisecting_tree.right", _at(0, -1)),
    "label-out-of-range": _set("_bisecting_tree.label", lambda a: np.where(a >= 0, a + 100, a)),
    "label-repeated": _set("_bisecting_tree.label", lambda a: np.where(a >= 0, 0, a)),
    "too-few-nodes": _set("_bisecting_tree.left", lambda a: a[:-1]),
    "center-too-narrow": _set("_bisecting_tree.center", lambda a: a[:, :2]),
    "center-nan": _set("_bisecting_tree.center", _at((2, 0), np.nan)),
    "center-float32": _set("_bisecting_tree.center", lambda a: a.astype(np.float32)),
    "mean-too-short": _set("_X_mean", lambda a: a[:1]),
    "mean-inf": _set("_X_mean", _at(0, np.inf)),
    "matrix-flag-not-bool": _json("_bisecting_tree", "root_is_matrix", 1),
}

_USE = {"birch": "m.predict(X); m.transform(X); m.partial_fit(X)", "bisecting": "m.predict(X); m.transform(X)"}

_SETUP = "import numpy as np\nX = np.random.RandomState(2).normal(size=(60, 3))\n"


def _crafted(state: ModelState, edit: Callable[[dict, dict], None]) -> bytes:
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta, tensors)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> dict[str, tuple[str, str]]:
    folder = tmp_path_factory.mktemp("cf-trees")
    states = {"birch": to_state(_birch()), "bisecting": to_state(_bisecting())}
    files = {}
    for model, cases in (("birch", BIRCH_CASES), ("bisecting", BISECTING_CASES)):
        for case, edit in cases.items():
            path = folder / f"{model}-{case}.safetensors"
            path.write_bytes(_crafted(states[model], edit))
            files[f"{model}-{case}"] = (str(path), _USE[model])
    return files


@pytest.fixture(scope="module")
def child_results(crafted) -> dict[str, str]:
    return load_and_use(crafted, _SETUP)


@pytest.mark.parametrize("case", [f"birch-{c}" for c in BIRCH_CASES] + [f"bisecting-{c}" for c in BISECTING_CASES])
def test_crafted_tree_is_refused_at_load(case, crafted, child_results) -> None:
    with pytest.raises(FormatError):
        aprender.load(crafted[case][0])
    assert child_results[case].startswith("AprenderError:"), child_results[case]


def test_birch_node_tables_are_bounded_by_the_tree() -> None:
    """A node's branching factor preallocates its table: a file may not claim one far past what it stores."""
    state = to_state(_birch())
    with pytest.raises(FormatError, match="preallocate"):
        from_state(safetensors.state_from_bytes(_crafted(state, BIRCH_CASES["branching-factor-huge"])))


def test_birch_memory_mapped_continues_training(tmp_path) -> None:
    """The rebuilt tree owns its arrays: partial_fit of a memory-mapped load writes nothing into the file."""
    model, path = _birch(), tmp_path / "birch.apr"
    aprender.save(model, path)
    before = path.read_bytes()
    loaded = aprender.load(path, mmap=True)
    loaded.partial_fit(_MORE)
    model.partial_fit(_MORE)
    assert np.array_equal(loaded.predict(_MORE), model.predict(_MORE))
    assert path.read_bytes() == before
