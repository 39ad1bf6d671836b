"""What a loaded model's use costs, when the file decides it: counts an inference spends are bounded.

A transform or predict that reads a count of work from its hyperparameters (NMF's ``max_iter``, with
``tol=0`` turning the early exit off) lets a file of a few KB decide how long every call takes. Every
``sizes`` hyperparameter that an allow-listed class's inference methods read (found in scikit-learn's
source, tests/support/inference_reads.py) has a bound at load or a stored array that bounds its cost; so
does a fitted private copy of one, which is what inference reads.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import time

import numpy as np
import pytest
from inference_reads import inference_reads
from sklearn.decomposition import NMF, DictionaryLearning, LatentDirichletAllocation, MiniBatchNMF
from sklearn.ensemble import StackingClassifier, StackingRegressor
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.kernel_approximation import AdditiveChi2Sampler
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.manifold import Isomap
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import Normalizer, StandardScaler
from sklearn_instances import fitted
from state_edit import find, hostile

import aprender
from aprender import _limits
from aprender.codec._fitted import fitted_key
from aprender.codec._fitted_names import NAMES
from aprender.codec._out_widths import OUTPUT_WIDTHS, STORED_WIDTH, check_unbacked_names
from aprender.codec._param_rules import BOUNDED_BY_STATE, check_params
from aprender.codec._param_table import kinds_of
from aprender.codec._registry import allow_list
from aprender.codec.trust import Trust
from aprender.exceptions import FormatError

X = np.random.RandomState(0).rand(20, 5)
COUNTS = (X * 10).astype(int)
NO_TRUST = Trust({}, frozenset())


def _bounded_at_inference(owner: str, name: str) -> bool:
    return (name in _limits.MAX_INFERENCE_COUNT or name in _limits.MAX_INFERENCE_COUNT_OF.get(owner, {})
            or name in BOUNDED_BY_STATE)


def test_every_count_an_inference_reads_is_bounded():
    found, unbounded = set(), []
    for entry in allow_list(generic=True):
        kinds = kinds_of(entry.key) or {}
        reads = inference_reads(entry.cls)
        owner = entry.key.rpartition(".")[2]
        for name, kind in kinds.items():
            if kind == "sizes" and (name in reads or "_" + name in reads):
                found.add((owner, name))
                if not _bounded_at_inference(owner, name):
                    unbounded.append((entry.key, name))
    assert not unbounded, f"counts an inference reads, with no bound in aprender._limits: {unbounded}"
    # the reader finds what it must: the counts whose lies stalled a transform
    assert {("NMF", "max_iter"), ("MiniBatchNMF", "transform_max_iter"),
            ("LatentDirichletAllocation", "max_doc_update_iter"), ("GaussianProcessRegressor", "n_targets")} <= found
    assert ("LogisticRegression", "max_iter") not in found  # read by fit only


def _set_params(model, **changes):
    def edit(meta, tensors):
        node = find(meta, type(model).__name__, fitted=False)
        node["params"].update({k: v for k, v in changes.items() if not k.startswith("_")})
        node.get("attrs", {}).update({k: v for k, v in changes.items() if k.startswith("_")})
    return edit


@pytest.mark.parametrize(("make", "changes"), [
    (lambda: NMF(3, max_iter=500).fit(X), {"max_iter": 2**24, "tol": 0.0}),
    (lambda: NMF(3, solver="mu", max_iter=500).fit(X), {"max_iter": 2**24, "tol": 0.0}),
    (lambda: LatentDirichletAllocation(3, max_iter=2).fit(COUNTS), {"max_doc_update_iter": 2**24,
                                                                     "mean_change_tol": 0.0}),
    # the fitted copy told the same lie: a copy that disagrees is refused first (tests/test_agreements.py)
    (lambda: MiniBatchNMF(3, max_iter=5).fit(X), {"transform_max_iter": 2**20, "tol": 0.0,
                                                  "_transform_max_iter": 2**20}),
    (lambda: DictionaryLearning(3, max_iter=5, transform_algorithm="lasso_cd").fit(X), {"transform_max_iter": 2**20}),
    (lambda: GaussianProcessRegressor(), {"n_targets": 2**24}),
], ids=["nmf-cd", "nmf-mu", "lda", "minibatch-nmf", "dictionary-learning", "gpr-prior"])
def test_a_count_every_call_spends_is_refused_past_its_bound(tmp_path, make, changes):
    # each stalled (NMF, LDA: no one-row transform in 30 s) or asked GiBs (the prior's 50 means: 6.25 GiB)
    model = make()
    err = hostile(model, _set_params(model, **changes), tmp_path)
    name = next(n for n in changes if n not in ("tol", "mean_change_tol") and not n.startswith("_"))
    assert f"at '{name}'" in str(err) and "counts work" in str(err)


def test_a_fitted_copy_of_a_count_is_bounded_as_its_hyperparameter(tmp_path):
    model = MiniBatchNMF(3, max_iter=5).fit(X)

    def edit(meta, tensors):
        node = find(meta, "MiniBatchNMF")
        node["attrs"]["_transform_max_iter"] = 2**40  # what transform iterates; the parameter stays 200
        node["params"]["tol"] = 0.0

    err = hostile(model, edit, tmp_path)  # refused as a copy that disagrees with its parameter (_agreements)
    assert "'_transform_max_iter' is 1099511627776" in str(err)
    with pytest.raises(FormatError, match=f"at most {_limits.MAX_INFERENCE_COUNT['transform_max_iter']}"):
        check_params("sklearn.decomposition.MiniBatchNMF", {}, {"_transform_max_iter": 2**40}, NO_TRUST, "")


def _private_copies():
    for key, names in sorted(NAMES.items()):
        kinds = kinds_of(key) or {}
        for attr in sorted(names):
            if attr.startswith("_") and kinds.get(attr[1:]) == "sizes":
                yield key, attr


@pytest.mark.parametrize(("key", "attr"), list(_private_copies()))
def test_every_private_copy_of_a_count_follows_its_rule(key, attr):
    with pytest.raises(FormatError, match=f"at '{attr}': counts work"):
        check_params(key, {}, {attr: 2**40}, NO_TRUST, "")


def test_private_copies_are_found():
    assert len(list(_private_copies())) >= 10  # KMeans' _n_init ... MiniBatchNMF's _transform_max_iter


@pytest.mark.parametrize(("make", "changes", "data"), [
    (lambda: NMF(3, max_iter=500).fit(X), {"max_iter": _limits.MAX_INFERENCE_COUNT_OF["NMF"]["max_iter"]}, X),
    (lambda: MiniBatchNMF(3, max_iter=5).fit(X),
     {"_transform_max_iter": _limits.MAX_INFERENCE_COUNT["transform_max_iter"]}, X),
    (lambda: LatentDirichletAllocation(3, max_iter=2).fit(COUNTS),
     {"max_doc_update_iter": _limits.MAX_INFERENCE_COUNT["max_doc_update_iter"], "mean_change_tol": 0.0}, COUNTS),
], ids=["nmf", "minibatch-nmf", "lda"])
def test_a_call_at_the_bounds_returns_in_seconds(make, changes, data):
    model = make()
    if hasattr(model, "tol"):
        model.tol = 0.0  # no early exit: every iteration is spent
    for name, value in changes.items():
        setattr(model, name, value)
    start = time.perf_counter()
    model.transform(data[:1])
    assert time.perf_counter() - start < 15  # about 1 s alone; the machine running the suite is shared


def _width_property_reads(cls: type) -> str | None:
    """The fitted attribute a class's ``_n_features_out`` property returns as it is (``self.n_components_``)."""
    member = inspect.getattr_static(cls, STORED_WIDTH, None)
    if not isinstance(member, property):
        return None
    returned = [node.value for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(member.fget))))
                if isinstance(node, ast.Return)]
    return next((r.attr for r in returned if isinstance(r, ast.Attribute) and isinstance(r.value, ast.Name)
                 and r.value.id == "self"), None)


def test_every_class_whose_fits_store_an_output_width_says_where_it_comes_from():
    storing = {key: STORED_WIDTH for key, names in NAMES.items() if STORED_WIDTH in names}
    for entry in allow_list():
        stored = _width_property_reads(entry.cls)
        if stored is not None:  # SparseCoder's n_components_, KernelCenterer's n_features_in_
            storing[fitted_key(entry.cls)] = stored
    assert storing == {key: width.stored for key, width in OUTPUT_WIDTHS.items()}


@pytest.mark.parametrize("key", sorted(OUTPUT_WIDTHS))
def test_a_stored_output_width_is_the_one_the_fitted_state_gives(tmp_path, key):
    model, _ = fitted(key.rpartition(".")[2])
    stored = OUTPUT_WIDTHS[key].stored
    assert OUTPUT_WIDTHS[key].of(vars(model), model.get_params(deep=False)) == getattr(model, stored)

    def edit(meta, tensors):  # get_feature_names_out then made 10**9 names (28 s to a MemoryError at 2 GB)
        find(meta, type(model).__name__)["attrs"][stored] = 10**9

    err = str(hostile(model, edit, tmp_path))  # Birch's, BisectingKMeans' and the graphs' schemas say it first
    assert f"'{stored}'" in err, err


@pytest.mark.parametrize(("make", "lie"), [
    (lambda: StackingClassifier([("a", LogisticRegression()), ("b", LogisticRegression())], cv=2), [10**9, 3]),
    (lambda: StackingClassifier([("a", LogisticRegression())], cv=2, passthrough=True), [3, 3]),
    (lambda: StackingRegressor([("a", Ridge()), ("b", Ridge())], cv=2), [1, 10**9]),
], ids=["classifier", "one-member-more", "regressor"])
def test_a_stacks_column_counts_are_its_members(tmp_path, make, lie):
    model = make().fit(X, np.arange(len(X)) % 3)  # get_feature_names_out made 10**9 names (7 s to a MemoryError)

    def edit(meta, tensors):
        find(meta, type(model).__name__)["attrs"]["_n_feature_outs"] = lie

    assert "at '_n_feature_outs'" in str(hostile(model, edit, tmp_path))


#: Classes whose fits store no array as wide as their input, and that name their features from it: each such
#: class of scikit-learn's instance generator that no other rule holds (MissingIndicator's ``_n_features`` and
#: PolynomialFeatures' output count are checked by their schemas; Isomap, LocallyLinearEmbedding and TSNE name
#: their outputs from ``_n_features_out``).
UNBACKED = ["AdditiveChi2Sampler", "Binarizer", "ColumnTransformer", "Normalizer"]


@pytest.mark.parametrize("name", UNBACKED)
def test_a_width_no_stored_array_carries_makes_a_bounded_number_of_names(tmp_path, name):
    model, _ = fitted(name)

    def edit(meta, tensors):  # a 336-byte Normalizer: get_feature_names_out took 17 s and 1.4 GB
        find(meta, name)["attrs"]["n_features_in_"] = 2**24

    err = str(hostile(model, edit, tmp_path))
    assert "at 'n_features_in_'" in err and "feature names at every get_feature_names_out" in err, err


def test_a_width_a_stored_array_carries_loads():
    n = _limits.MAX_UNBACKED_NAMES * 2
    wide = np.broadcast_to(0.0, (n,))  # a scaler's mean_ that wide: the file paid for it
    check_unbacked_names("sklearn.preprocessing.StandardScaler", StandardScaler, {"n_features_in_": n, "mean_": wide},
                         {}, "")
    with pytest.raises(FormatError, match="make 4194304 feature names"):
        check_unbacked_names("sklearn.preprocessing.Normalizer", Normalizer, {"n_features_in_": n}, {}, "")
    steps = {"sample_steps": 2}  # three names per feature: the stored width does not pay for the other two
    with pytest.raises(FormatError, match="make 12582912 feature names"):
        check_unbacked_names("sklearn.kernel_approximation.AdditiveChi2Sampler", AdditiveChi2Sampler,
                             {"n_features_in_": n, "feature_names_in_": wide}, steps, "")
    check_unbacked_names("sklearn.manifold.Isomap", Isomap, {"n_features_in_": n}, {}, "")  # names from its outputs


def _nested(levels: int):
    """``levels`` estimators one inside the next: Pipelines around a fitted StandardScaler."""
    model = StandardScaler()
    for _ in range(levels - 1):
        model = Pipeline([("p", model)])
    return model


def test_estimators_nested_past_the_bound_are_refused(tmp_path):
    bound = _limits.MAX_NESTED_ESTIMATORS
    # to_state of the deeper one would itself pay the tags' cost: the file is made by wrapping the state's tree
    model = _nested(bound).fit(X)

    def wrap(meta, tensors):  # one Pipeline more around the model (its tensors keep their names)
        meta["model"] = {"__t__": "estimator", "class": "sklearn.pipeline.Pipeline", "attrs": {},
                         "params": {"memory": None, "steps": [{"__t__": "tuple", "v": ["p", meta["model"]]}],
                                    "transform_input": None, "verbose": False}}

    err = str(hostile(model, wrap, tmp_path))  # 13 levels took 30 s per two-row transform
    assert f"estimators nested {bound + 1} deep: at most {bound}" in err and "at 'steps.0.1" in err


def test_estimators_nested_to_the_bound_load_and_are_used_in_a_fraction_of_a_second(tmp_path):
    model = _nested(_limits.MAX_NESTED_ESTIMATORS).fit(X)
    path = tmp_path / "deep.safetensors"
    aprender.save(model, path)
    loaded = aprender.load(path)
    start = time.perf_counter()
    np.testing.assert_array_equal(loaded.transform(X[:2]), model.transform(X[:2]))
    assert time.perf_counter() - start < 5  # 0.1 s alone
