"""What a file may name or set without the caller's trust: the function table, partial arguments, hyperparameters.

The crafted files are real models saved by aprender's own writer whose metadata was
then edited, as a reviewer attacking the previous module-wide allow-list wrote them.
"""

from __future__ import annotations

import copy
import functools
import json

import numpy as np
import pytest
import scipy.special
from sklearn.cluster import FeatureAgglomeration
from sklearn.ensemble import RandomForestClassifier
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.feature_selection import SelectKBest, f_classif, mutual_info_classif
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import SVC
from zoo import iris

import aprender
from aprender.codec import ModelState, to_state, trust
from aprender.exceptions import FormatError, UnsupportedTypeError, UntrustedFunctionError, UntrustedParameterError
from aprender.format import apr, gguf, safetensors
from aprender.preprocessing import FunctionTransformer as AprFunctionTransformer

#: Functions that must never be trusted by default: I/O, imports, test runners, process-wide
#: state, and functions that take a callable or a path (or compute without bound).
NEVER = [
    "numpy.fromfunction", "numpy.vectorize", "numpy.frompyfunc", "numpy.apply_along_axis", "numpy.apply_over_axes",
    "numpy.piecewise", "numpy.load", "numpy.save", "numpy.savez", "numpy.loadtxt", "numpy.savetxt",
    "numpy.genfromtxt", "numpy.fromfile", "numpy.fromregex", "numpy.memmap", "numpy.seterr", "numpy.seterrcall",
    "numpy.set_printoptions", "numpy.errstate", "numpy.setbufsize", "numpy.info", "numpy.show_config",
    "numpy.isscalar", "numpy.flatnonzero", "numpy.diff", "scipy.special.test", "scipy.special.seterr",
    "scipy.special.errstate", "scipy.special.factorial", "scipy.special.comb", "sklearn.metrics.make_scorer",
    "sklearn.metrics.get_scorer", "sklearn.metrics.check_scoring", "sklearn.metrics.pairwise_distances",
    "sklearn.metrics.pairwise.pairwise_kernels", "sklearn.metrics.pairwise.config_context",
    "sklearn.metrics.pairwise.delayed", "sklearn.metrics.pairwise.effective_n_jobs",
]


# -- the default table ---------------------------------------------------------------------


def test_every_default_function_is_a_ufunc_or_reviewed_with_a_reason() -> None:
    table = trust.default_functions()
    assert len(table) > 300  # numpy's and scipy.special's ufuncs and the reviewed names
    for name, func in table.items():
        module, _, short = name.rpartition(".")
        if isinstance(func, np.ufunc):
            assert module in trust.UFUNC_MODULES, name
        else:
            reason = trust.REVIEWED.get(module, {}).get(short)
            assert isinstance(reason, str) and len(reason) > 20, f"{name} is in the table without a reviewed reason"


@pytest.mark.parametrize("name", NEVER)
def test_functions_that_run_code_or_touch_the_process_are_not_trusted_by_default(name) -> None:
    assert name not in trust.default_functions()


def test_what_the_zoo_and_scikit_learn_defaults_store_is_trusted_by_default() -> None:
    table = trust.default_functions()
    for name, func in {"numpy.log1p": np.log1p, "numpy.expm1": np.expm1, "numpy.mean": np.mean,
                       "numpy.clip": np.clip, "scipy.special.expit": scipy.special.expit,
                       "sklearn.feature_selection.f_classif": f_classif,
                       "sklearn.metrics.balanced_accuracy_score": aprender_metric("balanced_accuracy_score"),
                       "sklearn.metrics.f1_score": aprender_metric("f1_score"),
                       "sklearn.metrics.mean_absolute_error": aprender_metric("mean_absolute_error")}.items():
        assert table[name] is func, name
    # names older files hold for pairwise functions that sklearn.metrics also exports
    assert table["sklearn.metrics.euclidean_distances"] is table["sklearn.metrics.pairwise.euclidean_distances"]


def aprender_metric(name: str):
    import sklearn.metrics

    return getattr(sklearn.metrics, name)


def test_a_log1p_function_transformer_needs_no_extra_step(tmp_path) -> None:
    X = np.abs(iris()[0])
    model = Pipeline([("log", FunctionTransformer(np.log1p, inverse_func=np.expm1)), ("scale", StandardScaler()),
                      ("select", SelectKBest(f_classif, k=2))]).fit(X, iris()[1])
    path = tmp_path / "m.safetensors"
    aprender.save(model, path)
    loaded = aprender.load(path)
    assert loaded.steps[0][1].func is np.log1p
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


# -- crafted files: the reviewer's two attacks ------------------------------------------------


def _pipeline():
    X = iris()[0]
    return Pipeline([
        ("a", FunctionTransformer(np.log1p)),
        ("b", FunctionTransformer(functools.partial(np.clip, a_min=0.0, a_max=5.0))),
    ]).fit(X)


def _craft(model, edit) -> bytes:
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    edit(meta)
    return safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta))


def _step_func(meta: dict, i: int) -> dict:
    return meta["model"]["params"]["steps"][i]["v"][1]["params"]["func"]


def test_scipy_special_test_runner_in_a_partial_is_refused(tmp_path) -> None:
    report = tmp_path / "report.xml"

    def edit(meta):
        _step_func(meta, 0)["name"] = "numpy.isscalar"
        partial = _step_func(meta, 1)
        partial["func"]["name"] = "scipy.special.test"
        partial["keywords"] = {"extra_argv": ["-p", "os", f"--junitxml={report}", "--doctest-glob=*.safetensors"]}

    path = tmp_path / "attack.safetensors"
    path.write_bytes(_craft(_pipeline(), edit))
    with pytest.raises(UntrustedFunctionError, match=r"'numpy.isscalar' at 'steps.0.a.func' is not trusted"):
        aprender.load(path)
    path.write_bytes(_craft(_pipeline(), lambda meta: (edit(meta), _step_func(meta, 0).update(name="numpy.log1p"))))
    with pytest.raises(UntrustedFunctionError, match=r"'scipy.special.test' at 'steps.1.b.func.func'") as info:
        aprender.load(path)
    assert "aprender.load(path, trusted=[scipy.special.test])" in str(info.value)
    assert "aprender.register_function" in str(info.value)
    assert not report.exists()


@pytest.mark.parametrize("target, args", [
    ("scipy.special.factorial", [100000000]),  # a hang with exact=True
    ("scipy.special.seterr", []),  # process-wide change
])
def test_fromfunction_of_an_allowed_function_is_refused(target, args) -> None:
    def edit(meta):
        partial = _step_func(meta, 1)
        partial["func"]["name"] = "numpy.fromfunction"
        partial["args"] = [{"__t__": "function", "name": target}, *args]
        partial["keywords"] = {"exact": True} if args else {"all": "raise"}

    before = scipy.special.geterr()
    with pytest.raises(UntrustedFunctionError, match=r"'numpy.fromfunction' at 'steps.1.b.func.func'"):
        safetensors.loads(_craft(_pipeline(), edit))
    assert scipy.special.geterr() == before


@pytest.mark.parametrize("arg, why", [
    ({"__t__": "function", "name": "scipy.special.expit"}, "a 'function' node"),
    ({"__t__": "partial", "func": {"__t__": "function", "name": "numpy.exp"}, "args": [], "keywords": {}},
     "a 'partial' node"),
    ({"__t__": "tensor", "name": "steps.0.a.x"}, "a 'tensor' node"),
    ({"__t__": "estimator", "class": "sklearn.preprocessing.StandardScaler", "params": {}, "attrs": {}},
     "an? 'estimator' node"),
    ("x" * 257, "longer than 256"),
    (list(range(65)), "more than 64 items"),
    ([[[[1.0]]]], "nested deeper than 3"),
    ({"__t__": "dict", "items": [[1, 2.0]]}, "keys that are not strings"),
])
def test_partial_arguments_must_be_bounded_literals(arg, why) -> None:
    def edit(meta):
        _step_func(meta, 1)["args"] = [arg]

    with pytest.raises(FormatError, match=rf"steps\.1\.b\.func\.0.*bounded literals, found .*{why}"):
        safetensors.loads(_craft(_pipeline(), edit))


def test_a_partial_may_not_change_the_callers_data_in_place() -> None:
    X = iris()[0].copy()
    X[0, 0] = np.nan
    model = FunctionTransformer(functools.partial(np.nan_to_num, nan=0.0)).fit(X)

    def edit(meta):
        meta["model"]["params"]["func"]["keywords"]["copy"] = False

    with pytest.raises(FormatError, match=r"func\.copy.*copy=False, which changes the caller's data in place"):
        safetensors.loads(_craft(model, edit))
    with pytest.raises(UnsupportedTypeError, match="in place"):
        safetensors.dumps(FunctionTransformer(functools.partial(np.nan_to_num, copy=False)).fit(X))
    loaded = safetensors.loads(safetensors.dumps(model))
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
    assert np.isnan(X[0, 0])


@pytest.mark.parametrize(("where", "kwargs", "message"), [
    ("kw_args", {"where": False}, "where=False, which leaves the result's elements uninitialized"),
    ("kw_args", {"out": np.zeros((150, 4))}, "out=ndarray, which makes every call write into and return one"),
    ("inv_kw_args", {"copy": False}, "copy=False, which changes the caller's data in place"),
    ("kw_args", {"overwrite_input": True}, "overwrite_input=True, which changes the caller's data in place"),
], ids=["where", "out", "copy", "overwrite-input"])
def test_keyword_arguments_may_not_decide_where_a_call_writes(where, kwargs, message) -> None:
    """Measured: where=False returned heap contents (addresses such as 4.6e-310) from transform, and out=
    returned the same array from every call (a server's concurrent requests shared one result)."""
    X = iris()[0]
    model = FunctionTransformer(np.positive, inverse_func=np.positive, kw_args={"dtype": "float64"},
                                inv_kw_args={"dtype": "float64"}).fit(X)
    loaded = safetensors.loads(safetensors.dumps(model))
    np.testing.assert_array_equal(loaded.transform(X), X)
    setattr(model, where, kwargs)  # the file's author sets it before saving
    with pytest.raises(FormatError, match=rf"'{where}\.{next(iter(kwargs))}'.*{message}"):
        safetensors.loads(_craft(model, lambda meta: None))


def test_a_partial_may_not_leave_its_result_uninitialized() -> None:
    model = FunctionTransformer(functools.partial(np.positive, where=True)).fit(iris()[0])

    def edit(meta):
        meta["model"]["params"]["func"]["keywords"]["where"] = False

    with pytest.raises(FormatError, match=r"func\.where.*where=False, which leaves the result's elements"):
        safetensors.loads(_craft(model, edit))


@pytest.mark.parametrize("dtype", ["V1000000000", "O", "f8,f8", "(3,)f8", "U2000000000", "x" * 40])
def test_a_dtype_named_by_a_string_must_be_numeric(dtype) -> None:
    model = CountVectorizer(dtype=np.float32).fit(["a cat sat", "a dog ran"])
    loaded = safetensors.loads(safetensors.dumps(model))
    assert loaded.transform(["a cat"]).dtype == np.float32

    def edit(meta):
        meta["model"]["params"]["dtype"] = dtype

    with pytest.raises(UntrustedParameterError, match=r"hyperparameter 'dtype'.*a numeric numpy dtype"):
        safetensors.loads(_craft(model, edit))


def test_every_default_dtype_is_numeric() -> None:
    import inspect

    from aprender.codec._registry import allow_list

    allowed, seen = trust.PARAM_RULES["dtype"][0], 0
    for entry in allow_list(generic=True):
        parameter = inspect.signature(entry.cls.__init__).parameters.get("dtype")
        if parameter is not None:
            seen += 1
            assert allowed(parameter.default), entry.key
    assert seen >= 10


@pytest.mark.parametrize("name", ["func", "inverse_func"])
def test_a_function_called_on_every_requests_rows_may_not_be_pairwise(name) -> None:
    """A FunctionTransformer of rbf_kernel (trusted, as a kernel) asked 6.7 GiB for a 30,000-row transform."""
    from sklearn.metrics.pairwise import euclidean_distances, paired_euclidean_distances, rbf_kernel

    X = iris()[0]
    model = FunctionTransformer(np.log1p, inverse_func=np.expm1).fit(X)
    for func in (rbf_kernel, functools.partial(euclidean_distances, squared=True)):
        setattr(model, name, func)
        with pytest.raises(FormatError, match=rf"'{name}'.*a row per pair of them"):
            safetensors.loads(_craft(model, lambda meta: None))
    assert trust.is_pairwise(rbf_kernel) and not trust.is_pairwise(paired_euclidean_distances)
    knn = KNeighborsClassifier(n_neighbors=3, weights=np.reciprocal).fit(X, iris()[1])
    np.testing.assert_array_equal(safetensors.loads(safetensors.dumps(knn)).predict(X), knn.predict(X))
    knn.weights = rbf_kernel
    with pytest.raises(FormatError, match=r"'weights'.*a row per pair of them"):
        safetensors.loads(_craft(knn, lambda meta: None))
    assert not trust.is_pairwise(np.log1p) and not trust.is_pairwise(np.mean)


def test_saving_a_partial_of_an_array_is_refused() -> None:
    model = FunctionTransformer(functools.partial(np.clip, a_min=np.zeros(4))).fit(iris()[0])
    with pytest.raises(UnsupportedTypeError, match=r"func\.a_min.*bounded literals.*a 'tensor' node"):
        safetensors.dumps(model)


def test_a_partial_with_a_literal_list_roundtrips() -> None:
    X = iris()[0]
    model = FunctionTransformer(functools.partial(np.percentile, q=[25.0, 75.0], axis=1)).fit(X)
    loaded = safetensors.loads(safetensors.dumps(model))
    np.testing.assert_array_equal(loaded.transform(X), model.transform(X))


# -- trusted= ---------------------------------------------------------------------------------


def _cube(x):
    return np.asarray(x) ** 3


def _other(x):
    return x


def test_a_user_function_loads_only_when_the_caller_trusts_it(tmp_path) -> None:
    X = iris()[0]
    model = AprFunctionTransformer(func=_cube).fit(X)
    loaders = {
        "safetensors": (tmp_path / "m.safetensors", model.save_safetensors, AprFunctionTransformer.load_safetensors),
        "apr": (tmp_path / "m.apr", model.save_apr, AprFunctionTransformer.load_apr),
        "gguf": (tmp_path / "m.gguf", model.save_gguf, AprFunctionTransformer.load_gguf),
    }
    for path, save, load_as in loaders.values():
        save(path)
        with pytest.raises(UntrustedFunctionError, match=r"_cube' at 'func' is not trusted.*trusted=\["):
            aprender.load(path)
        with pytest.raises(UntrustedFunctionError):
            aprender.load(path, trusted=[_other])  # another function does not stand in for it
        for loaded in (aprender.load(path, trusted=[_cube]), load_as(path, trusted=[_cube])):
            assert loaded.func is _cube
            np.testing.assert_array_equal(loaded.transform(X), model.transform(X))
        with pytest.raises(UntrustedFunctionError):  # the trust was for that load only
            aprender.load(path)
    data = safetensors.dumps(model)
    assert safetensors.loads(data, trusted=[_cube]).func is _cube
    assert apr.loads(apr.dumps(model), trusted=[_cube]).func is _cube
    assert gguf.loads(gguf.dumps(model), trusted=[_cube]).func is _cube


def test_trusted_takes_function_objects_not_names(tmp_path) -> None:
    path = tmp_path / "m.safetensors"
    aprender.save(FunctionTransformer(func=_cube).fit(iris()[0]), path)
    name = json.loads(json.dumps(to_state(FunctionTransformer(func=_cube)).meta))["model"]["params"]["func"]["name"]
    with pytest.raises(ValueError, match="functions are trusted by passing the function object"):
        aprender.load(path, trusted=[name])
    with pytest.raises(TypeError, match="function objects or hyperparameter names"):
        aprender.load(path, trusted=[3])


# -- hyperparameters ----------------------------------------------------------------------------


def _with_param(model, cls_name: str, name: str, value) -> bytes:
    def edit(meta):
        nodes = [meta["model"]]
        while nodes:
            node = nodes.pop()
            if isinstance(node, dict):
                if node.get("__t__") == "estimator" and node["class"].endswith("." + cls_name):
                    node["params"][name] = value
                nodes.extend(node.values())
            elif isinstance(node, list):
                nodes.extend(node)

    return _craft(model, edit)


def _fitted(name: str):
    X, y = iris()
    return {
        "pipeline": lambda: Pipeline([("s", StandardScaler())]).fit(X),
        "agglomeration": lambda: FeatureAgglomeration(n_clusters=2).fit(X),
        "forest": lambda: RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y),
        "search": lambda: GridSearchCV(SVC(), {"C": [1.0]}, cv=2).fit(X, y),
        "svc": lambda: SVC().fit(X, y),
        "vectorizer": lambda: CountVectorizer().fit(["ab bc", "bc cd"]),
    }[name]()


@pytest.mark.parametrize("model, cls, name, value", [
    ("pipeline", "Pipeline", "memory", "/tmp/aprender-cache"),
    ("agglomeration", "FeatureAgglomeration", "memory", "/tmp/aprender-cache"),
    ("forest", "RandomForestClassifier", "n_jobs", 1000000),
    ("forest", "RandomForestClassifier", "n_jobs", -5000),
    ("search", "GridSearchCV", "pre_dispatch", "9**9**9"),
    ("search", "GridSearchCV", "pre_dispatch", "__import__('os')"),
    ("search", "GridSearchCV", "n_jobs", 2048),
    ("svc", "SVC", "cache_size", 1e12),
    ("vectorizer", "CountVectorizer", "input", "filename"),
])
def test_hostile_hyperparameters_are_refused_unless_trusted(model, cls, name, value) -> None:
    fitted = _fitted(model)
    data = _with_param(fitted, cls, name, value)
    expected = rf"'{name}' at .* a file may set it only to.*trusted=\['{name}'\]"
    with pytest.raises(UntrustedParameterError, match=expected):
        safetensors.loads(data)
    loaded = safetensors.loads(data, trusted=[name])
    found = [est for est in [loaded, *getattr(loaded, "named_steps", {}).values()] if type(est).__name__ == cls]
    assert found[0].get_params(deep=False)[name] == value


@pytest.mark.parametrize("model, cls, name, value", [
    ("forest", "RandomForestClassifier", "n_jobs", -1),
    ("forest", "RandomForestClassifier", "n_jobs", 8),
    ("search", "GridSearchCV", "pre_dispatch", "3*n_jobs"),
    ("search", "GridSearchCV", "pre_dispatch", "all"),
    ("search", "GridSearchCV", "pre_dispatch", 16),
    ("svc", "SVC", "cache_size", 500.0),
])
def test_ordinary_hyperparameters_load_and_predict(model, cls, name, value) -> None:
    fitted = _fitted(model)
    loaded = safetensors.loads(_with_param(fitted, cls, name, value))
    assert loaded.get_params(deep=False)[name] == value
    np.testing.assert_array_equal(loaded.predict(iris()[0]), fitted.predict(iris()[0]))


def test_a_partial_keyword_follows_the_hyperparameter_rules() -> None:
    X, y = iris()
    model = SelectKBest(functools.partial(mutual_info_classif, random_state=0, n_jobs=1), k=2).fit(X, y)

    def edit(meta):
        meta["model"]["params"]["score_func"]["keywords"]["n_jobs"] = 100000

    data = _craft(model, edit)
    with pytest.raises(UntrustedParameterError, match=r"'n_jobs' at 'score_func'"):
        safetensors.loads(data)
    assert safetensors.loads(data, trusted=["n_jobs"]).score_func.keywords["n_jobs"] == 100000
    np.testing.assert_array_equal(safetensors.loads(safetensors.dumps(model)).transform(X), model.transform(X))


def test_a_scorers_keyword_arguments_are_bounded_literals_too() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, make_scorer

    X, y = iris()
    search = GridSearchCV(LogisticRegression(max_iter=300), {"C": [1.0]}, cv=2,
                          scoring=make_scorer(f1_score, average="macro")).fit(X, y)
    assert safetensors.loads(safetensors.dumps(search)).scorer_._kwargs == {"average": "macro"}

    def edit(meta):
        meta["model"]["attrs"]["scorer_"]["state"]["_kwargs"]["items"].append(
            ["sample_weight", {"__t__": "estimator", "class": "sklearn.preprocessing.StandardScaler",
                               "params": {}, "attrs": {}}])

    with pytest.raises(FormatError, match=r"scorer_\._kwargs.*bounded literals, found an? 'estimator' node"):
        safetensors.loads(_craft(search, edit))
