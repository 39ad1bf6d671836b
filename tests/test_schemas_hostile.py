"""Crafted files against the family schemas of classes whose fitted state reaches compiled code.

Each case is a real model's state edited the way a reviewer crafted it (valid file,
inconsistent fitted arrays). Loading must raise a :class:`FormatError` naming the
attribute. Every file is also loaded -- and, were it to load, used the way that crashed
or corrupted memory (predict, kneighbors, transform, partial_fit) -- in one child
process, so a segfault fails the test instead of killing pytest.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import pytest
from child import load_and_use
from sklearn.cluster import Birch, FeatureAgglomeration
from sklearn.decomposition import NMF, LatentDirichletAllocation, MiniBatchNMF
from sklearn.feature_extraction import DictVectorizer
from sklearn.impute import KNNImputer
from sklearn.linear_model import LogisticRegression, Perceptron, SGDClassifier, SGDOneClassSVM, SGDRegressor
from sklearn.neighbors import (
    KernelDensity,
    KNeighborsTransformer,
    LocalOutlierFactor,
    NearestNeighbors,
    RadiusNeighborsClassifier,
    RadiusNeighborsRegressor,
)
from sklearn.preprocessing import MultiLabelBinarizer, PolynomialFeatures, SplineTransformer
from sklearn.svm import NuSVC, NuSVR, OneClassSVM
from sklearn.tree import DecisionTreeClassifier

import aprender
import aprender._limits
from aprender.codec import ModelState, from_state, to_state
from aprender.exceptions import FormatError
from aprender.format import safetensors

_RNG = np.random.RandomState(0)
X = _RNG.normal(size=(40, 5))
Y3 = (X[:, 0] > 0.5).astype(int) + (X[:, 0] > -0.5)
YR = X @ np.arange(1.0, 6.0)
COUNTS = _RNG.poisson(2.0, size=(40, 5)).astype(float)


def _mlb() -> MultiLabelBinarizer:
    mlb = MultiLabelBinarizer().fit([[1, 2], [3], [2, 4]])
    mlb.transform([[1]])  # builds the _cached_dict the file then carries
    return mlb


MODELS: dict[str, Callable[[], object]] = {
    "nusvc": lambda: NuSVC().fit(X, Y3),
    "nusvr": lambda: NuSVR().fit(X, YR),
    "ocsvm": lambda: OneClassSVM().fit(X),
    "rnc": lambda: RadiusNeighborsClassifier(radius=3.0, algorithm="brute").fit(X, Y3),
    "rnr": lambda: RadiusNeighborsRegressor(radius=3.0).fit(X, YR),
    "nn": lambda: NearestNeighbors(algorithm="brute").fit(X[:20, :1]),
    "knt": lambda: KNeighborsTransformer(n_neighbors=3).fit(X),
    "lof": lambda: LocalOutlierFactor(n_neighbors=5, novelty=True).fit(X),
    "kde": lambda: KernelDensity().fit(X),
    "dv": lambda: DictVectorizer(sparse=False).fit([{"a": 1.0, "b": 2.0}, {"c": 3.0}]),
    "mlb": _mlb,
    "sgd": lambda: SGDClassifier(average=True, random_state=0, max_iter=5, tol=None).fit(X, Y3 > 0),
    "sgd3": lambda: SGDClassifier(random_state=0, max_iter=5, tol=None).fit(X, Y3),
    "sgd3avg": lambda: SGDClassifier(average=True, random_state=0, max_iter=5, tol=None).fit(X, Y3),
    "perceptron": lambda: Perceptron(random_state=0, max_iter=5, tol=None).fit(X, Y3),
    "sgdr": lambda: SGDRegressor(average=True, random_state=0, max_iter=5, tol=None).fit(X, YR),
    "sgd1": lambda: SGDOneClassSVM(random_state=0, max_iter=5, tol=None).fit(X),
    "tree": lambda: DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, Y3),
    "nmf": lambda: NMF(n_components=2, max_iter=50, random_state=0).fit(COUNTS),
    "mbnmf": lambda: MiniBatchNMF(n_components=2, max_iter=5, random_state=0).fit(COUNTS),
    "lda": lambda: LatentDirichletAllocation(n_components=2, max_iter=2, random_state=0).fit(COUNTS),
    "poly": lambda: PolynomialFeatures(degree=2).fit(X),
    "knnimp": lambda: KNNImputer().fit(X),
    "agglo": lambda: FeatureAgglomeration(n_clusters=2).fit(X),
    "spline": lambda: SplineTransformer(n_knots=4).fit(X),
}


def _set(attr: str, value: object = None, tensor: np.ndarray | None = None) -> Callable[[dict, dict], None]:
    """An edit replacing a top-level fitted attribute's JSON value, or the contents of its tensor."""
    def edit(meta: dict, tensors: dict) -> None:
        node = meta["model"]["attrs"]
        *parents, last = attr.split(".")
        for part in parents:
            node = node[part]
        if tensor is None:
            node[last] = value
        else:
            tensors[node[last]["name"]] = tensor
    return edit


def _both(*edits: Callable[[dict, dict], None]) -> Callable[[dict, dict], None]:
    def edit(meta: dict, tensors: dict) -> None:
        for e in edits:
            e(meta, tensors)
    return edit


def _map_entry(attr: str, index: int, column: int) -> Callable[[dict, dict], None]:
    """An edit sending the ``index``-th key of a stored dict to ``column``."""
    def edit(meta: dict, tensors: dict) -> None:
        meta["model"]["attrs"][attr]["items"][index][1] = column
    return edit


_BIG = 2**31 - 1
#: case -> (model, edit, attribute the error must name, how the child uses a model that loads)
CASES: dict[str, tuple[str, Callable[[dict, dict], None], str, str]] = {
    # The reviewer's files.
    "nusvc-support-longer-than-vectors": ("nusvc", _set("support_", tensor=np.arange(200, dtype=np.int32) % 40),
                                          "_n_support", "m.predict(X)"),
    "ocsvm-support-longer-than-vectors": ("ocsvm", _set("support_", tensor=np.arange(200, dtype=np.int32) % 40),
                                          "_n_support", "m.predict(X)"),
    "nusvc-3000-n-support": ("nusvc", lambda meta, tensors: tensors.__setitem__(
        "_n_support", np.concatenate([tensors["_n_support"], np.zeros(2997, np.int32)])), "_n_support",
        "m.predict(X)"),
    "ocsvm-3000-n-support": ("ocsvm", lambda meta, tensors: tensors.__setitem__(
        "_n_support", np.concatenate([tensors["_n_support"], np.zeros(2998, np.int32)])), "_n_support",
        "m.predict(X)"),
    "rnc-label-2**40": ("rnc", _set("_y", tensor=np.full(40, 2**40, dtype=np.int64)), "_y", "m.predict_proba(X)"),
    "nn-fit-X-narrower-than-n-features": ("nn", _set("n_features_in_", 200_000), "_fit_X",
                                          "m.kneighbors(np.zeros((1, 200_000)))"),
    "dictvectorizer-column-2**31-1": ("dv", _map_entry("vocabulary_", 0, _BIG), "vocabulary_",
                                      "m.transform([{'a': 1.0}])"),
    "sgd-average-coef-shorter": ("sgd", _both(_set("_average_coef", tensor=np.zeros((1, 2))),
                                              _set("_standard_coef", tensor=np.zeros((1, 2)))),
                                 "_standard_coef", "m.partial_fit(X, Y3 > 0)"),
    "tree-claims-2**31-1-features": ("tree", _both(_set("n_features_in_", _BIG), _set("max_features_", _BIG),
                                                   _set("tree_.n_features", _BIG)),
                                     "n_features_in_", "m.feature_importances_"),
    # One per new schema.
    "mlb-cached-column-past-width": ("mlb", _map_entry("_cached_dict", 1, 10**6), "_cached_dict",
                                     "m.transform([[2]])"),
    "nusvr-dual-coef-short": ("nusvr", lambda meta, tensors: tensors.__setitem__(
        "_dual_coef_", tensors["_dual_coef_"][:, :3].copy()), "_dual_coef_", "m.predict(X)"),
    "ocsvm-two-offsets": ("ocsvm", _set("offset_", tensor=np.zeros(2)), "offset_", "m.predict(X)"),
    "rnr-y-rows": ("rnr", _set("_y", tensor=np.zeros(3)), "_y", "m.predict(X)"),
    "knt-samples-fit-short": ("knt", _set("n_samples_fit_", 10), "_fit_X", "m.transform(X).toarray()"),
    "knt-graph-width": ("knt", _set("_n_features_out", 7), "_n_features_out", "m.transform(X)"),
    "lof-neighbors-past-samples": ("lof", _set("n_neighbors_", 400), "n_neighbors_", "m.score_samples(X)"),
    "lof-lrd-short": ("lof", _set("_lrd", tensor=np.ones(3)), "_lrd", "m.score_samples(X)"),
    "kde-feature-count": ("kde", _set("n_features_in_", 7), "tree_", "m.score_samples(np.zeros((1, 7)))"),
    "sgd-multiclass-average-raveled": ("sgd3avg", _set("_average_coef", tensor=np.zeros(15)), "_average_coef",
                                       "m.partial_fit(X, Y3)"),
    "sgd-rows-for-classes": ("sgd3", _set("coef_", tensor=np.zeros((2, 5))), "coef_", "m.partial_fit(X, Y3)"),
    "perceptron-intercepts": ("perceptron", _set("intercept_", tensor=np.zeros(1)), "intercept_",
                              "m.partial_fit(X, Y3)"),
    "sgdr-average-intercept": ("sgdr", _set("_average_intercept", tensor=np.zeros(4)), "_average_intercept",
                               "m.partial_fit(X, YR)"),
    "sgd-one-class-offset": ("sgd1", _set("offset_", tensor=np.zeros(3)), "offset_", "m.partial_fit(X)"),
    "nmf-component-count": ("nmf", _set("_n_components", 50), "_n_components", "m.transform(COUNTS)"),
    "mbnmf-numerator-shape": ("mbnmf", _set("_components_numerator", tensor=np.ones((1, 5))),
                              "_components_numerator", "m.partial_fit(COUNTS)"),
    "lda-dirichlet-shape": ("lda", _set("exp_dirichlet_component_", tensor=np.ones((2, 3))),
                            "exp_dirichlet_component_", "m.transform(COUNTS)"),
    "poly-output-width": ("poly", _set("n_output_features_", 10**6), "n_output_features_", "m.transform(X)"),
    "poly-degree-past-params": ("poly", _set("_max_degree", 40), "_max_degree", "m.transform(X)"),
    "knnimputer-mask-shape": ("knnimp", _set("_mask_fit_X", tensor=np.zeros((3, 5), dtype=bool)), "_mask_fit_X",
                              "m.transform(X)"),
    "spline-output-width": ("spline", _set("n_features_out_", 2**40), "n_features_out_", "m.transform(X)"),
    "agglo-label-2**40": ("agglo", _set("labels_", tensor=np.full(5, 2**40)), "labels_", "m.transform(X)"),
}


@pytest.fixture(scope="module")
def states() -> dict[str, ModelState]:
    return {name: to_state(build()) for name, build in MODELS.items()}


def _crafted(state: ModelState, edit: Callable[[dict, dict], None]) -> bytes:
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta, tensors)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))


def _birch_file(template: ModelState) -> bytes:
    """A Birch file of the crafter's arrays: one precomputed norm for three centres."""
    meta = copy.deepcopy(template.meta)
    meta["model"].update({"class": "sklearn.cluster.Birch", "params": Birch().get_params(), "attrs": {
        "n_features_in_": 5, "subcluster_centers_": {"__t__": "tensor", "name": "c"},
        "_subcluster_norms": {"__t__": "tensor", "name": "n"}}})
    return safetensors.state_to_bytes(ModelState(tensors={"c": np.zeros((3, 5)), "n": np.zeros(1)}, meta=meta))


@pytest.fixture(scope="module")
def files(states, tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("schemas-hostile")
    out = {}
    for case, (model, edit, _, _) in CASES.items():
        out[case] = str(folder / f"{case}.safetensors")
        (folder / f"{case}.safetensors").write_bytes(_crafted(states[model], edit))
    out["birch"] = str(folder / "birch.safetensors")
    (folder / "birch.safetensors").write_bytes(_birch_file(states["agglo"]))
    return out


_SETUP = """
    import numpy as np
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 5))
    Y3 = (X[:, 0] > 0.5).astype(int) + (X[:, 0] > -0.5)
    YR = X @ np.arange(1.0, 6.0)
    COUNTS = rng.poisson(2.0, size=(40, 5)).astype(float)
"""


@pytest.fixture(scope="module")
def child_results(files) -> dict[str, str]:
    uses = {case: (files[case], CASES[case][3]) for case in CASES} | {"birch": (files["birch"], "m.predict(X)")}
    return load_and_use(uses, _SETUP)


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_file_is_refused_naming_the_attribute(case, files, child_results) -> None:
    with pytest.raises(FormatError, match=f"'{CASES[case][2]}'"):
        aprender.load(files[case])
    assert child_results[case].startswith("AprenderError:"), child_results[case]


def test_crafted_birch_norms_are_refused(files, child_results) -> None:
    """Birch hands ``_subcluster_norms`` to a pairwise-distance reduction as one norm per centre."""
    with pytest.raises(FormatError, match="_subcluster_norms"):
        aprender.load(files["birch"])
    assert child_results["birch"].startswith("AprenderError:"), child_results["birch"]


def test_feature_bound_is_raised_by_assignment(states, monkeypatch) -> None:
    """A model wider than MAX_FEATURES loads once the bound is raised, and not before."""
    wide = 2**24 + 1
    edit = _both(_set("n_features_in_", wide), _set("max_features_", wide), _set("tree_.n_features", wide))
    raw = _crafted(states["tree"], edit)
    with pytest.raises(FormatError, match=r"'n_features_in_' is 16777217.*MAX_FEATURES"):
        safetensors.loads(raw)
    monkeypatch.setattr(aprender._limits, "MAX_FEATURES", 2**25)
    assert safetensors.loads(raw).n_features_in_ == wide


@pytest.mark.parametrize("name", ["n_outputs_", "n_classes_"])
def test_output_and_class_counts_are_bounded(states, name) -> None:
    with pytest.raises(FormatError, match=f"'{name}' is {2**40}"):
        safetensors.loads(_crafted(states["tree"], _set(name, 2**40)))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_unedited_files_load_and_predict_identically(model, states) -> None:
    original, loaded = MODELS[model](), safetensors.loads(safetensors.state_to_bytes(states[model]))
    for method in ("predict", "transform", "score_samples", "kneighbors"):
        if hasattr(original, method) and not (model == "lof" and method == "predict"):
            data = COUNTS if model in ("nmf", "mbnmf", "lda") else X[:, :1] if model == "nn" else X
            if model in ("dv", "mlb"):
                data = [{"a": 2.0, "c": 1.0}] if model == "dv" else [[1, 4]]
            a, b = getattr(original, method)(data), getattr(loaded, method)(data)
            for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,), strict=True):
                x, y = (v.toarray() if hasattr(v, "toarray") else np.asarray(v) for v in (x, y))
                assert np.array_equal(x, y), (model, method)


@pytest.mark.parametrize("model", ["sgd", "sgd3avg", "sgdr", "sgd1", "perceptron"])
def test_loaded_sgd_models_continue_training_identically(model, states) -> None:
    original, loaded = MODELS[model](), safetensors.loads(safetensors.state_to_bytes(states[model]))
    target = {"sgdr": (YR,), "sgd1": (), "sgd": (Y3 > 0,)}.get(model, (Y3,))
    for est in (original, loaded):
        est.partial_fit(X, *target)
    assert np.array_equal(original.coef_, loaded.coef_)


@pytest.mark.parametrize("build", [MODELS["sgd3"], lambda: LogisticRegression().fit(X, Y3)])
def test_sparsified_classifiers_load(build) -> None:
    original = build().sparsify()
    loaded = safetensors.loads(safetensors.state_to_bytes(to_state(original)))
    assert np.array_equal(original.predict(X), loaded.predict(X))
    bad = to_state(MODELS["sgd"]().sparsify())  # a binary model's one row, under three classes
    meta = copy.deepcopy(bad.meta)
    meta["model"]["attrs"]["classes_"] = {"__t__": "tensor", "name": "classes_"}
    tensors = {**bad.tensors, "classes_": np.arange(3)}
    with pytest.raises(FormatError, match="sparse 'coef_' has shape"):
        safetensors.loads(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))


def test_neighbors_file_with_a_stored_tree_still_loads(states) -> None:
    """Files written before NearestNeighbors had a schema hold its tree as a binary_tree node: it is rebuilt."""
    model = NearestNeighbors(algorithm="kd_tree", leaf_size=7).fit(X)
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    tensors = {name: t for name, t in state.tensors.items() if not name.startswith("_tree.")}
    meta["model"]["attrs"]["_tree"] = {"__t__": "binary_tree", "kind": "KDTree", "leaf_size": 7,
                                       "metric": "euclidean", "data": {"__t__": "tensor", "name": "_tree.data"}}
    tensors["_tree.data"] = np.ascontiguousarray(X[::-1])  # whatever the stored tree held, _fit_X decides
    loaded = from_state(ModelState(tensors=tensors, meta=meta))
    assert loaded._tree.__getstate__()[4] == 7
    for a, b in zip(model._tree.get_arrays(), loaded._tree.get_arrays(), strict=True):
        assert np.array_equal(a, b)
    assert all(np.array_equal(a, b) for a, b in zip(model.kneighbors(X), loaded.kneighbors(X), strict=True))
