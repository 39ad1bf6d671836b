"""The KD/Ball tree of neighbors estimators: stored as its arrays, checked on load, never rebuilt.

Round trips give sklearn's own arrays back and the same answers; crafted trees (written with
the library's own writer) are refused with a FormatError naming the field, and are loaded
and queried in a child process, so a segfault in the Cython query code fails the test
instead of killing pytest.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from child import load_and_use
from sklearn.neighbors import (
    KDTree,
    KNeighborsTransformer,
    LocalOutlierFactor,
    NearestNeighbors,
    RadiusNeighborsClassifier,
    RadiusNeighborsRegressor,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import aprender
from aprender.codec import ModelState, from_state, to_state
from aprender.codec.schemas import neighbors as schema
from aprender.codec.schemas._binary_tree import FIELDS, layout, levels
from aprender.exceptions import FormatError, UnsupportedTypeError
from aprender.format import safetensors
from aprender.neighbors import KNeighborsClassifier, KNeighborsRegressor

_RNG = np.random.RandomState(0)
X = _RNG.normal(size=(30, 3))
Y = (X[:, 0] > 0).astype(int)
Q = _RNG.normal(size=(5, 3))  # queries away from the training rows


def _fits() -> dict[str, Callable[[], Any]]:
    return {
        "kd": lambda: NearestNeighbors(algorithm="kd_tree", leaf_size=4).fit(X),
        "ball": lambda: NearestNeighbors(algorithm="ball_tree", leaf_size=4).fit(X),
        "kd-one-leaf": lambda: NearestNeighbors(algorithm="kd_tree", leaf_size=40).fit(X),
        "knc-ball-minkowski3": lambda: KNeighborsClassifier(algorithm="ball_tree", p=3, leaf_size=2).fit(X, Y),
        "knr-kd-manhattan": lambda: KNeighborsRegressor(algorithm="kd_tree", metric="manhattan").fit(X, X[:, 0]),
        "knr-float32": lambda: KNeighborsRegressor(algorithm="kd_tree", leaf_size=3).fit(X.astype(np.float32), Y),
        "rnc": lambda: RadiusNeighborsClassifier(radius=3.0, algorithm="kd_tree", leaf_size=5).fit(X, Y),
        "rnr-chebyshev": lambda: RadiusNeighborsRegressor(radius=3.0, algorithm="ball_tree",
                                                           metric="chebyshev").fit(X, X[:, 1]),
        "knt": lambda: KNeighborsTransformer(n_neighbors=3, algorithm="kd_tree", leaf_size=2).fit(X),
        "lof": lambda: LocalOutlierFactor(n_neighbors=4, novelty=True, algorithm="ball_tree", leaf_size=3).fit(X),
        "pipeline": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier(algorithm="kd_tree")).fit(X, Y),
    }


def _answers(model: Any) -> list[np.ndarray]:
    est = model[-1] if hasattr(model, "steps") else model
    out = []
    for method in ("predict", "predict_proba", "score_samples", "transform"):
        if hasattr(model, method):
            value = getattr(model, method)(Q)
            out.append(value.toarray() if hasattr(value, "toarray") else value)
    data = model[:-1].transform(Q) if hasattr(model, "steps") else Q
    if hasattr(est, "kneighbors"):
        out += list(est.kneighbors(data, 3))
    if hasattr(est, "radius_neighbors"):
        dist, ind = est.radius_neighbors(data, 2.5, sort_results=True)
        out += [np.concatenate(dist), np.concatenate(ind)]
    return out


@pytest.mark.parametrize("name", sorted(_fits()))
@pytest.mark.parametrize("mmap", [False, True])
def test_tree_round_trips_bit_for_bit(name, mmap, tmp_path) -> None:
    model = _fits()[name]()
    path = tmp_path / "m.apr"
    aprender.save(model, path)
    loaded = aprender.load(path, mmap=mmap)
    est, back = (model[-1], loaded[-1]) if hasattr(model, "steps") else (model, loaded)
    assert type(back._tree) is type(est._tree)
    for a, b in zip(est._tree.get_arrays(), back._tree.get_arrays(), strict=True):  # data, idx, nodes, bounds
        assert a.dtype == b.dtype and np.array_equal(a, b)
    state = est._tree.__getstate__()
    assert back._tree.__getstate__()[4:7] == state[4:7]  # leaf_size, n_levels, n_nodes
    assert type(back._tree.__getstate__()[11]) is type(state[11])  # the metric
    for a, b in zip(_answers(model), _answers(loaded), strict=True):
        assert np.array_equal(a, b), name
    assert np.array_equal(est._tree.query(Q, 3, dualtree=True)[1], back._tree.query(Q, 3, dualtree=True)[1])


@pytest.mark.parametrize("mmap", [False, True])
def test_a_loaded_model_saves_again_as_it_was(mmap, tmp_path) -> None:
    model = KNeighborsClassifier(algorithm="ball_tree", leaf_size=3).fit(X, Y)
    aprender.save(model, tmp_path / "a.apr")
    loaded = aprender.load(tmp_path / "a.apr", mmap=mmap)
    assert np.shares_memory(loaded._tree.__getstate__()[0], loaded._fit_X)  # the data is held once
    again = to_state(loaded)
    for name, tensor in to_state(model).tensors.items():
        assert np.array_equal(again.tensors[name], tensor), name


def test_the_tree_is_neither_rebuilt_on_save_nor_on_load(monkeypatch) -> None:
    model = KNeighborsClassifier(algorithm="kd_tree", leaf_size=3).fit(X, Y)

    def refuse(*args: Any) -> None:
        raise AssertionError("the tree was rebuilt")

    monkeypatch.setattr(schema, "_build_tree", refuse)
    loaded = safetensors.loads(safetensors.dumps(model))
    assert np.array_equal(loaded.predict(Q), model.predict(Q))


@pytest.mark.parametrize("stored", ["leaf-size-only", "binary-tree-handler"])
def test_older_files_without_the_arrays_rebuild_the_tree(stored) -> None:
    model = KNeighborsClassifier(algorithm="ball_tree", leaf_size=3).fit(X, Y)
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    tensors = {name: t for name, t in state.tensors.items() if not name.startswith("_tree.")}
    if stored == "leaf-size-only":
        meta["model"]["attrs"]["_tree"] = {"__t__": "dict", "items": [["leaf_size", 3]]}
    else:
        meta["model"]["attrs"]["_tree"] = {"__t__": "binary_tree", "kind": "BallTree", "leaf_size": 3,
                                           "metric": "euclidean", "data": {"__t__": "tensor", "name": "_tree.data"}}
        tensors["_tree.data"] = X[::-1].copy()  # whatever the stored tree held, _fit_X decides
    loaded = safetensors.loads(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))
    for a, b in zip(model._tree.get_arrays(), loaded._tree.get_arrays(), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(loaded.predict_proba(Q), model.predict_proba(Q))


def test_a_tree_over_other_data_or_metric_is_refused_on_save() -> None:
    model = NearestNeighbors(algorithm="kd_tree").fit(KDTree(X, metric="manhattan"))  # the model says euclidean
    with pytest.raises(UnsupportedTypeError, match="the tree's metric is not effective_metric_"):
        to_state(model)
    model = NearestNeighbors(algorithm="kd_tree").fit(X)
    model._fit_X = X + 1.0
    with pytest.raises(UnsupportedTypeError, match="the tree does not hold _fit_X"):
        to_state(model)
    prebuilt = NearestNeighbors(algorithm="kd_tree").fit(KDTree(X, leaf_size=5))  # the tree's own data: stored
    assert np.array_equal(from_state(to_state(prebuilt)).kneighbors(Q)[1], prebuilt.kneighbors(Q)[1])


def test_layout_is_the_constructors() -> None:
    for n, leaf_size in [(1, 1), (2, 1), (3, 1), (30, 4), (1000, 7), (1023, 40), (5000, 1)]:
        tree = KDTree(np.arange(n, dtype=float)[:, None], leaf_size=leaf_size)
        _, _, node_data, _ = tree.get_arrays()
        n_levels = levels(n, leaf_size)
        assert len(node_data) == 2**n_levels - 1
        starts, ends = layout(n, n_levels)
        assert np.array_equal(starts, node_data["idx_start"]) and np.array_equal(ends, node_data["idx_end"])
        assert np.array_equal(node_data["is_leaf"], np.arange(len(node_data)) >= len(node_data) // 2)


# -- crafted trees ----------------------------------------------------------------------

Edit = Callable[[dict[str, Any], dict[str, np.ndarray]], None]


def _field(name: str, value: Any) -> Edit:
    """Set the stored tree's JSON field ``name``."""
    def edit(items: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        items[name] = value

    return edit


def _tensor(name: str, change: Callable[[np.ndarray], Any]) -> Edit:
    """Replace the stored tree's tensor ``name`` by ``change(a copy of it)``."""
    def edit(items: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        key = f"_tree.{name}"
        tensors[key] = np.ascontiguousarray(change(tensors[key].copy()))

    return edit


def _poke(index: Any, value: Any) -> Callable[[np.ndarray], np.ndarray]:
    def change(a: np.ndarray) -> np.ndarray:
        a[index] = value
        return a

    return change


def _more_levels(items: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
    """A consistent tree of one more level than the data and leaf size give (leaves of 1-2 rows)."""
    n_levels = items["n_levels"] + 1
    items["n_levels"], items["n_nodes"] = n_levels, 2**n_levels - 1
    starts, ends = layout(30, n_levels)
    tensors["_tree.idx_start"], tensors["_tree.idx_end"] = starts, ends
    tensors["_tree.is_leaf"] = (np.arange(len(starts)) >= len(starts) // 2).astype(np.intp)
    tensors["_tree.radius"] = np.ones(len(starts))
    bounds = tensors["_tree.node_bounds"]
    tensors["_tree.node_bounds"] = np.ascontiguousarray(np.repeat(bounds[:, :1], len(starts), axis=1))


def _drop_last_leaf_mark(a: np.ndarray) -> np.ndarray:
    a[-1] = 0  # the query would step to node 2 * 6 + 1 = 13, past the 7 nodes
    return a


def _invert_leaf_box(bounds: np.ndarray) -> np.ndarray:
    bounds[1, 6, 2] = bounds[0, 6, 2] - 1.0  # the last leaf's box inside out along one feature
    return bounds


def _leaf_outside_parent(bounds: np.ndarray) -> np.ndarray:
    bounds[:, 3] += 100.0  # a leaf moved away, its points (and its parent's box) left behind
    return bounds


#: case -> (model, edit, what the error says)
CASES: dict[str, tuple[str, Edit, str]] = {
    "idx-end-off-by-one": ("kd", _tensor("idx_end", _poke(3, 9)), "'idx_end' does not match the tree's layout"),
    "idx-end-past-data": ("kd", _tensor("idx_end", _poke(6, 10**6)), "'idx_end' does not match"),
    "idx-start-negative": ("ball", _tensor("idx_start", _poke(5, -8)), "'idx_start' does not match"),
    "idx-array-duplicate": ("kd", _tensor("idx_array", _poke(1, 0)), "'idx_array' must be a permutation of range(30)"),
    "idx-array-past-data": ("ball", _tensor("idx_array", _poke(0, 10**9)), "must be a permutation of range(30)"),
    "idx-array-negative": ("kd", _tensor("idx_array", _poke(29, -1)), "must be a permutation of range(30)"),
    "idx-array-short": ("kd", _tensor("idx_array", lambda a: a[:29]), "'idx_array' has shape (29,); axis 0 must be 30"),
    "idx-array-float": ("kd", _tensor("idx_array", lambda a: a.astype(float)), "'idx_array' has dtype float64"),
    "node-count-lie": ("kd", _field("n_nodes", 15), "'n_nodes' is 15, a tree of 3 levels has 7"),
    "node-count-huge": ("ball", _field("n_nodes", 2**62), "'n_nodes' is 4611686018427387904"),
    "n-levels-lie": ("kd", _field("n_levels", 4), "'n_levels' is 4, a tree of 30 samples with leaf_size 4 has 3"),
    "n-levels-lie-consistent": ("ball", _more_levels, "'n_levels' is 4, a tree of 30 samples with leaf_size 4 has 3"),
    "leaf-size-lie": ("kd", _field("leaf_size", 1), "'n_levels' is 3, a tree of 30 samples with leaf_size 1 has 5"),
    "leaf-size-zero": ("kd", _field("leaf_size", 0), "'leaf_size' is 0, must be >= 1"),
    "node-arrays-short": ("kd", _tensor("is_leaf", lambda a: a[:6]), "'is_leaf' has shape (6,); axis 0 must be 7"),
    "last-node-not-a-leaf": ("kd", _tensor("is_leaf", _drop_last_leaf_mark), "'is_leaf' does not match"),
    "root-a-leaf": ("ball", _tensor("is_leaf", _poke(0, 1)), "'is_leaf' does not match"),
    "swapped-node-bounds": ("kd", _tensor("node_bounds", lambda a: a[::-1]), "lower bound exceeds its upper bound"),
    "leaf-box-inverted": ("kd", _tensor("node_bounds", _invert_leaf_box), "lower bound exceeds its upper bound"),
    "box-outside-parent": ("kd", _tensor("node_bounds", _leaf_outside_parent), "not inside its parent's"),
    "node-bounds-narrow": ("kd", _tensor("node_bounds", lambda a: a[:, :, :2]), "'node_bounds' has shape (2, 7, 2)"),
    "ball-two-corners": ("ball", _tensor("node_bounds", lambda a: np.concatenate([a, a])), "axis 0 must be 1"),
    "ball-nan-centroid": ("ball", _tensor("node_bounds", _poke((0, 2, 1), np.nan)), "'node_bounds' must be finite"),
    "nan-radius": ("kd", _tensor("radius", _poke(2, np.nan)), "'radius' must hold finite, non-negative"),
    "negative-radius": ("ball", _tensor("radius", _poke(0, -1.0)), "'radius' must hold finite, non-negative"),
    "missing-field": ("kd", lambda items, tensors: items.pop("n_levels"), "'_tree' must hold the fields"),
}


def _crafted(model: str, edit: Edit) -> bytes:
    state = to_state(_fits()[model]())
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    node = meta["model"]["attrs"]["_tree"]
    items = dict(node["items"])
    edit(items, tensors)
    node["items"] = [[key, value] for key, value in items.items()]
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


@pytest.fixture(scope="module")
def crafted() -> dict[str, bytes]:
    return {case: _crafted(model, edit) for case, (model, edit, _) in CASES.items()}


@pytest.fixture(scope="module")
def child_results(crafted, tmp_path_factory) -> dict[str, str]:
    """Load and query every crafted file in one child process: case -> "AprenderError: ..." or "USED" (queried)."""
    folder = tmp_path_factory.mktemp("trees")
    paths = {}
    for case, raw in {**crafted, "unedited": _crafted("kd", lambda items, tensors: None)}.items():
        paths[case] = str(folder / f"{case}.safetensors")
        (folder / f"{case}.safetensors").write_bytes(raw)
    use = """
m.kneighbors(queries, 5)
m.radius_neighbors(queries, 2.0)
for dual in (False, True):
    m._tree.query(queries, 5, dualtree=dual, breadth_first=not dual)
"""
    setup = "import numpy as np\nqueries = np.random.RandomState(1).normal(size=(20, 3)) * 3\n"
    return load_and_use({case: (path, use) for case, path in paths.items()}, setup)


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_tree_is_refused_before_any_query(case, crafted, child_results) -> None:
    with pytest.raises(FormatError) as info:
        safetensors.loads(crafted[case])
    assert CASES[case][2] in str(info.value)
    assert "_tree" in str(info.value)
    assert child_results[case].startswith("AprenderError:"), child_results[case]


def test_the_crafting_keeps_an_unedited_tree_loadable(child_results) -> None:
    """The editing itself breaks nothing: the same round trip with no edit loads and answers, here and in the child."""
    assert child_results["unedited"] == "USED"
    loaded = safetensors.loads(_crafted("kd", lambda items, tensors: None))
    assert np.array_equal(loaded.kneighbors(Q)[1], _fits()["kd"]().kneighbors(Q)[1])
    assert set(dict(to_state(_fits()["ball"]()).meta["model"]["attrs"]["_tree"]["items"])) == FIELDS


# -- KernelDensity's tree_ (the binary_tree handler) -------------------------------------------------

_W = _RNG.uniform(0.5, 2.0, size=30)


def _kdes() -> dict[str, Callable[[], Any]]:
    from sklearn.neighbors import KernelDensity

    return {
        "kde-kd": lambda: KernelDensity(algorithm="kd_tree", leaf_size=4, bandwidth=0.7).fit(X),
        "kde-ball-weighted": lambda: KernelDensity(algorithm="ball_tree", leaf_size=3).fit(X, sample_weight=_W),
        "kde-kd-minkowski3": lambda: KernelDensity(algorithm="kd_tree", leaf_size=2, metric="minkowski",
                                                   metric_params={"p": 3}, kernel="tophat").fit(X),
    }


@pytest.mark.parametrize("name", sorted(_kdes()))
@pytest.mark.parametrize("mmap", [False, True])
def test_kernel_density_tree_is_restored_not_rebuilt(name, mmap, tmp_path, monkeypatch) -> None:
    model = _kdes()[name]()
    aprender.save(model, tmp_path / "k.apr")
    tree_cls = type(model.tree_)

    def refuse(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the tree was rebuilt")

    monkeypatch.setattr(tree_cls, "__init__", refuse)
    loaded = aprender.load(tmp_path / "k.apr", mmap=mmap)
    monkeypatch.undo()
    assert type(loaded.tree_) is tree_cls
    for a, b in zip(model.tree_.get_arrays(), loaded.tree_.get_arrays(), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert loaded.tree_.sum_weight == model.tree_.sum_weight
    assert np.array_equal(loaded.score_samples(Q), model.score_samples(Q))
    assert np.array_equal(loaded.sample(4, random_state=0), model.sample(4, random_state=0))


def test_an_older_kernel_density_file_rebuilds_its_tree() -> None:
    model = _kdes()["kde-ball-weighted"]()
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    node = meta["model"]["attrs"]["tree_"]
    dropped = {"n_levels", "n_nodes", "idx_array", "node_bounds", *schema_fields()}
    meta["model"]["attrs"]["tree_"] = {k: v for k, v in node.items() if k not in dropped}
    tensors = {k: v for k, v in state.tensors.items() if k.split(".")[-1] not in dropped}
    loaded = safetensors.loads(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))
    for a, b in zip(model.tree_.get_arrays(), loaded.tree_.get_arrays(), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(loaded.score_samples(Q), model.score_samples(Q))


def schema_fields() -> tuple[str, ...]:
    from aprender.codec.schemas._binary_tree import NODE_FIELDS

    return NODE_FIELDS


def _kde_tensor(name: str, change: Callable[[np.ndarray], Any]) -> Callable[[dict, dict], None]:
    def edit(node: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        tensors[f"tree_.{name}"] = np.ascontiguousarray(change(tensors[f"tree_.{name}"].copy()))

    return edit


#: case -> (model, edit of the tree_ node and tensors, what the error says)
KDE_CASES: dict[str, tuple[str, Callable[[dict, dict], None], str]] = {
    "kde-idx-array-past-data": ("kde-kd", _kde_tensor("idx_array", _poke(0, 2**40)), "permutation of range(30)"),
    "kde-idx-array-duplicate": ("kde-ball-weighted", _kde_tensor("idx_array", _poke(1, 0)), "permutation"),
    "kde-idx-end-off-by-one": ("kde-kd", _kde_tensor("idx_end", _poke(3, 9)), "'idx_end' does not match"),
    "kde-last-node-not-a-leaf": ("kde-kd", _kde_tensor("is_leaf", _drop_last_leaf_mark), "'is_leaf' does not match"),
    "kde-swapped-bounds": ("kde-kd", _kde_tensor("node_bounds", lambda a: a[::-1]), "lower bound exceeds"),
    "kde-nan-radius": ("kde-ball-weighted", _kde_tensor("radius", _poke(2, np.nan)), "'radius' must hold finite"),
    "kde-node-count-huge": ("kde-kd", lambda node, tensors: node.update(n_nodes=2**62), "'n_nodes' is"),
    "kde-levels-for-other-data": ("kde-kd", _kde_tensor("data", lambda a: a[:7]), "'n_levels' is 3, a tree of 7"),
    "kde-partial-tree": ("kde-kd", lambda node, tensors: node.pop("idx_array"), "a stored tree needs all of"),
    "kde-null-levels": ("kde-kd", lambda node, tensors: node.update(n_levels=None), "'n_levels' must be an integer"),
    "kde-negative-levels": ("kde-ball-weighted", lambda node, tensors: node.update(n_levels=-1),
                            "'n_levels' is -1, must be >= 1"),
}


def _crafted_kde(model: str, edit: Callable[[dict, dict], None]) -> bytes:
    state = to_state(_kdes()[model]())
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta["model"]["attrs"]["tree_"], tensors)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


@pytest.fixture(scope="module")
def kde_child_results(tmp_path_factory) -> dict[str, str]:
    """Load and use every crafted KernelDensity file in one child: case -> "AprenderError: ..." or "USED"."""
    folder = tmp_path_factory.mktemp("kde")
    paths = {}
    for case, (model, edit, _) in {**KDE_CASES, "unedited": ("kde-kd", lambda n, t: None, "")}.items():
        paths[case] = str(folder / f"{case}.safetensors")
        (folder / f"{case}.safetensors").write_bytes(_crafted_kde(model, edit))
    use = "m.score_samples(queries)\nm.sample(5, random_state=0)\n"
    setup = "import numpy as np\nqueries = np.random.RandomState(1).normal(size=(20, 3)) * 3\n"
    return load_and_use({case: (path, use) for case, path in paths.items()}, setup)


@pytest.mark.parametrize("case", sorted(KDE_CASES))
def test_crafted_kernel_density_tree_is_refused_before_use(case, kde_child_results) -> None:
    model, edit, message = KDE_CASES[case]
    with pytest.raises(FormatError) as info:
        safetensors.loads(_crafted_kde(model, edit))
    assert message in str(info.value) and str(info.value).startswith("at 'tree_': ")
    assert kde_child_results[case].startswith("AprenderError:"), kde_child_results[case]
    assert kde_child_results["unedited"] == "USED"
