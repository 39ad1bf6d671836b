"""Files that lie about a column selector, a search's distributions, an IterativeImputer or pd.NA.

Each crafted file is the library's own state of a real fitted model with one value
changed (tests/state_edit.py), written as SafeTensors: the load must refuse it with a
FormatError that names what is wrong, before anything is built. None of these values
reaches compiled code (selectors run in pandas at ``fit``, distributions in NumPy's
samplers, the imputer's indices in NumPy's checked indexing), so the loads run in
this process.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.experimental import enable_iterative_imputer  # noqa: F401
from sklearn.impute import IterativeImputer, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RandomizedSearchCV
from state_edit import hostile

from aprender.codec.handlers.column_selector import MAX_PATTERN, MAX_SPECS, check_pattern

Edit = Callable[[dict, dict], None]


def _nodes(node: Any, tag: str) -> list[dict]:
    """Every node of ``tag`` in a metadata tree, depth first."""
    if isinstance(node, dict):
        found = [node] if node.get("__t__") == tag else []
        return found + [n for v in node.values() for n in _nodes(v, tag)]
    if isinstance(node, list):
        return [n for v in node for n in _nodes(v, tag)]
    return []


def _first(tag: str) -> Callable[[dict], dict]:
    return lambda meta: _nodes(meta["model"], tag)[0]


def _deep_list(levels: int) -> list:
    node: list = [1.0]
    for _ in range(levels):
        node = [node]
    return node


def _deep_tuple(levels: int) -> dict:
    node: Any = "str:number"
    for _ in range(levels):
        node = {"__t__": "tuple", "v": [node]}
    return node


def _set(where: Callable[[dict], dict], field: str, value: Any) -> Edit:
    def edit(meta: dict, tensors: dict) -> None:
        where(meta)[field] = value
    return edit


# -- make_column_selector ------------------------------------------------------------------


@cache
def _selector_model() -> Any:
    df = pd.DataFrame({"num_a": [1.0, 2.0, 3.0], "num_b": [1, 2, 3], "cat": pd.Categorical(["x", "y", "x"])})
    selector = make_column_selector(pattern="^num_", dtype_include=("number",), dtype_exclude=pd.CategoricalDtype())
    return ColumnTransformer([("n", "passthrough", selector)]).fit(df)


_SELECTOR = _first("column_selector")
SELECTOR_EDITS: dict[str, tuple[Edit, str]] = {
    "dtype-unknown-name": (_set(_SELECTOR, "dtype_include", "type:os.system"),
                           "dtype 'type:os.system' is not among the dtypes a selector may name"),
    "dtype-bare-string": (_set(_SELECTOR, "dtype_include", ["number"]), "dtype 'number' is not among"),
    "dtype-pandas-unknown": (_set(_SELECTOR, "dtype_exclude", "pandas:DatetimeTZDtype"),
                             "dtype 'pandas:DatetimeTZDtype' is not among"),
    "dtype-int-in-tuple": (_set(_SELECTOR, "dtype_include", {"__t__": "tuple", "v": [7]}), "dtype 7 is not among"),
    "dtype-too-many": (_set(_SELECTOR, "dtype_include", ["str:number"] * (MAX_SPECS + 1)),
                       f"must be 1 to {MAX_SPECS} names"),
    "dtype-empty-list": (_set(_SELECTOR, "dtype_include", []), f"must be 1 to {MAX_SPECS} names"),
    "dtype-wrong-json-type": (_set(_SELECTOR, "dtype_include", 5),
                              "'column_selector' field 'dtype_include' must be str or list or dict or null"),
    "dtype-dict-node": (_set(_SELECTOR, "dtype_include", {"__t__": "dict", "items": []}),
                        "must be a name, a list or a tuple of names"),
    "dtype-deep-nesting": (_set(_SELECTOR, "dtype_include", _deep_tuple(70)), "nested deeper than 64 levels"),
    "pattern-too-long": (_set(_SELECTOR, "pattern", "a" * (MAX_PATTERN + 1)),
                         f"a pattern is at most {MAX_PATTERN} characters"),
    "pattern-invalid": (_set(_SELECTOR, "pattern", "num_("), "is not a valid regular expression"),
    "pattern-nested-repeat": (_set(_SELECTOR, "pattern", "^(a+)+$"), "nests a repetition inside another"),
    "pattern-repeated-alternation": (_set(_SELECTOR, "pattern", "(a|ab)*c"), "repeats an alternation"),
    # side by side, not nested: 30 of them backtrack for minutes on a 25-character column name
    "pattern-many-repetitions": (_set(_SELECTOR, "pattern", "a*" * 30 + "b"), "holds 30 repetitions, at most 4"),
    "pattern-wrong-json-type": (_set(_SELECTOR, "pattern", ["^num"]),
                                "'column_selector' field 'pattern' must be str or null, found list"),
    "unknown-field": (_set(_SELECTOR, "callback", "os.system"), "'column_selector' node has an unknown field"),
}


@pytest.mark.parametrize("name", sorted(SELECTOR_EDITS))
def test_hostile_column_selector_is_refused(name: str, tmp_path) -> None:
    edit, message = SELECTOR_EDITS[name]
    assert message in str(hostile(_selector_model(), edit, tmp_path))


@pytest.mark.parametrize(("pattern", "allowed"), [
    ("^num_", True), (r"^(?!review)", True), (r".*_k$", True), (r"^(age|income)\b", True), (r"\d{2,4}", True),
    ("(a*)*", False), ("(?:x+y?)+", False), ("((ab)*c)*", False), ("(a{1,3})+", False), ("(x|y)+", True),
    (r"^(\w+)_(\d+)_(\w+)_(\d+)$", True), ("a*a*a*a*b", True), ("a*a*a*a*a*b", False), ("(?=a*)b+c*d+e?f*", False),
    # optional repetitions count: 28 of them before 28 a's try 2**28 ways (26 took 4.5 s on 26 a's)
    ("a?" * 28 + "a" * 28, False), ("(?:a?){28}a{28}", False), (r"\b\w+(?:'\w+)?\b", True), ("(?:ab){3}c?", True),
    # a backreference repeats its group's match: (a*)\1*b took 13 s on 3,000 a's
    (r"(a*)\1*b", False), (r"(?P<x>a)(?(x)b|c)", False), (r"(\w)\1", False),
])
def test_pattern_check(pattern: str, allowed: bool) -> None:
    why = check_pattern(pattern, on_text=False)  # a selector's pattern runs on column names only
    assert (why is None) is allowed, why


# -- frozen scipy.stats distributions -------------------------------------------------------


@cache
def _search_model() -> Any:
    rng = np.random.RandomState(0)
    X, y = rng.rand(30, 3), np.arange(30) % 2
    own = stats.uniform(0.5, 2.0)
    own.random_state = 3
    grid = {"C": stats.loguniform(1e-2, 1e2), "intercept_scaling": own}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RandomizedSearchCV(LogisticRegression(), grid, n_iter=2, cv=2, random_state=0).fit(X, y)


def _distribution(name: str) -> Callable[[dict], dict]:
    return lambda meta: next(n for n in _nodes(meta["model"], "distribution") if n["name"] == name)


_LOGUNIFORM, _UNIFORM = _distribution("loguniform"), _distribution("uniform")
DISTRIBUTION_EDITS: dict[str, tuple[Edit, str]] = {
    "name-unknown": (_set(_LOGUNIFORM, "name", "os.system"),
                     "distribution 'os.system' is not among those a file may name"),
    "name-not-in-table": (_set(_LOGUNIFORM, "name", "rv_histogram"), "distribution 'rv_histogram' is not among"),
    "name-wrong-json-type": (_set(_LOGUNIFORM, "name", ["norm"]), "'distribution' field 'name' must be str"),
    "too-many-args": (_set(_LOGUNIFORM, "args", [0.1, 1.0, 0.0, 1.0, 5.0]), "loguniform takes at most 4 parameters"),
    "arg-infinite": (_set(_LOGUNIFORM, "args", [{"__t__": "float", "v": "inf"}, 1.0]), "must be finite numbers"),
    "arg-nan-scalar": (_set(_LOGUNIFORM, "args", [{"__t__": "scalar", "dtype": "float64", "v": "nan"}, 1.0]),
                       "must be finite numbers"),
    "arg-string": (_set(_LOGUNIFORM, "args", ["0.1", 1.0]), "must be finite numbers"),
    "arg-bool": (_set(_LOGUNIFORM, "args", [True, 2.0]), "must be finite numbers"),
    "arg-huge-int": (_set(_LOGUNIFORM, "args", [1, 2**70]), "must be finite numbers"),
    "arg-deep-nesting": (_set(_LOGUNIFORM, "args", _deep_list(70)), "must be finite numbers"),
    "args-invalid-for-distribution": (_set(_LOGUNIFORM, "args", [0.0, 1.0]), "has invalid parameters"),
    "scale-negative": (_set(_UNIFORM, "args", [0.5, -1.0]), "has invalid parameters"),
    "kwd-unknown": (_set(_LOGUNIFORM, "kwds", [["os", 1.0]]), "loguniform has no further parameter 'os'"),
    "kwd-twice": (_set(_LOGUNIFORM, "kwds", [["loc", 0.0], ["loc", 1.0]]), "has no further parameter 'loc'"),
    "kwd-repeats-positional": (_set(_LOGUNIFORM, "kwds", [["a", 0.5]]), "has no further parameter 'a'"),
    "kwd-not-a-pair": (_set(_LOGUNIFORM, "kwds", [["loc"]]), "'kwds' must be [name, number] pairs"),
    "kwd-infinite": (_set(_LOGUNIFORM, "kwds", [["scale", {"__t__": "float", "v": "inf"}]]),
                     "parameter scale must be a finite number"),
    "random-state-a-function": (_set(_UNIFORM, "random_state", {"__t__": "function", "name": "numpy.sum"}),
                                "a distribution's random_state must be a RandomState or Generator"),
    "random-state-wrong-json-type": (_set(_UNIFORM, "random_state", 3),
                                     "'distribution' field 'random_state' must be dict or null, found int"),
    "random-state-bad-keys": (lambda m, t: t.__setitem__(
        _UNIFORM(m)["random_state"]["keys"]["name"], np.zeros(3, dtype=np.uint32)), "624 uint32 keys"),
    "unknown-field": (_set(_LOGUNIFORM, "module", "os"), "'distribution' node has an unknown field 'module'"),
    "unfrozen-with-args": (_set(_LOGUNIFORM, "frozen", False), "the distribution object loguniform itself takes no "
                                                               "parameters"),
    "frozen-wrong-json-type": (_set(_LOGUNIFORM, "frozen", "no"), "'distribution' field 'frozen' must be bool or null"),
}


@pytest.mark.parametrize("name", sorted(DISTRIBUTION_EDITS))
def test_hostile_distribution_is_refused(name: str, tmp_path) -> None:
    edit, message = DISTRIBUTION_EDITS[name]
    assert message in str(hostile(_search_model(), edit, tmp_path))


# -- IterativeImputer ------------------------------------------------------------------------


@cache
def _imputer() -> IterativeImputer:
    rng = np.random.RandomState(0)
    X = rng.rand(30, 3)
    X[rng.rand(30, 3) < 0.2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return IterativeImputer(random_state=0, max_iter=2).fit(X)


def _step(i: int = 0) -> Callable[[dict], dict]:
    return lambda meta: meta["model"]["attrs"]["imputation_sequence_"][i]


def _neighbors(change: Callable[[np.ndarray, int], np.ndarray]) -> Edit:
    def edit(meta: dict, tensors: dict) -> None:
        step = _step()(meta)
        name = step["neighbor_feat_idx"]["name"]
        tensors[name] = change(tensors[name].copy(), step["feat_idx"]["v"])
    return edit


def _first_to(value: int) -> Callable[[np.ndarray, int], np.ndarray]:
    def change(a: np.ndarray, feat: int) -> np.ndarray:
        a[0] = value
        return a
    return change


def _attr(name: str, value: Any) -> Edit:
    return lambda m, t: m["model"]["attrs"].__setitem__(name, value)


_INT = {"__t__": "scalar", "dtype": "int64"}
_LINEAR = {"__t__": "estimator", "class": "sklearn.linear_model.LinearRegression", "params": {}, "attrs": {}}
IMPUTER_EDITS: dict[str, tuple[Edit, str]] = {
    "feat-idx-huge": (_set(_step(), "feat_idx", {**_INT, "v": 2**40}),
                      "'imputation_sequence_.0.feat_idx' is 1099511627776, must be [0, 2]"),
    "feat-idx-negative": (_set(_step(), "feat_idx", -1), "'feat_idx' is -1, must be >= 0"),
    "feat-idx-string": (_set(_step(), "feat_idx", "1"), "'feat_idx' must be an integer, found str"),
    "feat-idx-bool": (_set(_step(), "feat_idx", True), "'feat_idx' must be an integer, found bool"),
    "feat-idx-deep-nesting": (_set(_step(), "feat_idx", _deep_list(70)), "nested deeper than 64 levels"),
    "neighbor-huge": (_neighbors(_first_to(2**40)), "'imputation_sequence_.0.neighbor_feat_idx' must be column "
                                                    "indices in [0, 3)"),
    "neighbor-negative": (_neighbors(_first_to(-1)), "must be column indices in [0, 3)"),
    "neighbor-duplicate": (_neighbors(lambda a, f: np.repeat(a[:1], a.size)), "must be distinct columns"),
    "neighbor-is-the-imputed-column": (_neighbors(lambda a, f: np.r_[a[:-1], f].astype(a.dtype)),
                                       "must be distinct columns other than feat_idx"),
    "neighbor-float": (_neighbors(lambda a, f: a.astype(np.float64)), "expected kind 'iu'"),
    "neighbor-2d": (_neighbors(lambda a, f: a.reshape(1, -1)), "'neighbor_feat_idx' must be 1-d"),
    "neighbor-fewer-than-fitted": (_neighbors(lambda a, f: a[:1]), "was fitted on 2 features, but the step gives it 1"),
    "estimator-other-class": (_attr("_estimator", _LINEAR), "is a BayesianRidge, but the imputer fits clones of "
                                                            "LinearRegression"),
    "estimator-not-an-estimator": (_set(_step(), "estimator", {"__t__": "dict", "items": []}),
                                   "'estimator' must be an estimator node"),
    "estimator-wrong-json-type": (_set(_step(), "estimator", 1), "'imputer_triplet' field 'estimator' must be dict"),
    "step-not-a-triplet": (lambda m, t: m["model"]["attrs"]["imputation_sequence_"].__setitem__(0, 5),
                           "must be an imputer step"),
    "step-unknown-field": (_set(_step(), "exec", "os.system"), "'imputer_triplet' node has an unknown field 'exec'"),
    "rounds-do-not-divide-steps": (_attr("n_iter_", 4), "which is not 4 rounds of at most 3 columns"),
    "no-round-but-steps": (_attr("n_iter_", 0), "which is not 0 rounds"),
    "n-iter-negative": (_attr("n_iter_", -1), "'n_iter_' is -1, must be >= 0"),
    "min-value-short": (lambda m, t: t.__setitem__(m["model"]["attrs"]["_min_value"]["name"], np.zeros(2)),
                        "'_min_value' has shape (2,); axis 0 must be 3"),
    "empty-mask-long": (lambda m, t: t.__setitem__(m["model"]["attrs"]["_is_empty_feature"]["name"],
                                                   np.zeros(4, dtype=bool)), "'_is_empty_feature' has shape (4,)"),
    "initial-imputer-missing": (_attr("initial_imputer_", None), "'initial_imputer_' must be a SimpleImputer"),
    "random-state-not-a-random-state": (_attr("random_state_", 0), "'random_state_' must be a RandomState"),
}


@pytest.mark.parametrize("name", sorted(IMPUTER_EDITS))
def test_hostile_iterative_imputer_is_refused(name: str, tmp_path) -> None:
    edit, message = IMPUTER_EDITS[name]
    assert message in str(hostile(_imputer(), edit, tmp_path))


def test_every_imputer_step_is_distinct_and_inside_the_columns() -> None:
    """The checks hold for what scikit-learn fits, nearest-feature subsets and random order included."""
    rng = np.random.RandomState(1)
    X = rng.rand(40, 6)
    X[rng.rand(40, 6) < 0.3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = IterativeImputer(random_state=0, n_nearest_features=3, imputation_order="random", max_iter=3).fit(X)
    from aprender.codec import from_state, to_state

    loaded = from_state(to_state(est))
    assert len(loaded.imputation_sequence_) == len(est.imputation_sequence_) > 0
    assert np.array_equal(loaded.transform(X), est.transform(X))


# -- pd.NA ----------------------------------------------------------------------------------


@cache
def _na_imputer() -> SimpleImputer:
    df = pd.DataFrame({"code": pd.array(["x", None, "y", "x"], dtype="string")})
    return SimpleImputer(missing_values=pd.NA, strategy="most_frequent").fit(df)


@pytest.mark.parametrize(("value", "message"), [
    ("os", "pandas missing value 'os' is not one of NA, NaT"),
    (0, "'pandas_missing' field 'v' must be str, found int"),
])
def test_hostile_pandas_missing_value_is_refused(value: Any, message: str, tmp_path) -> None:
    assert message in str(hostile(_na_imputer(), _set(_first("pandas_missing"), "v", value), tmp_path))


# -- sets ------------------------------------------------------------------------------------


@cache
def _set_vocabulary() -> Any:
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(vocabulary={"cat", "dog"}).fit(["the cat", "the dog"])


@pytest.mark.parametrize(("field", "value", "message"), [
    ("v", ["cat", "cat"], "a set holds each value once"),
    ("v", [["cat"], "dog"], "a set holds only hashable values"),
    ("v", "cat", "'set' field 'v' must be list, found str"),
    ("frozen", 1, "'set' field 'frozen' must be bool, found int"),
    ("v", _deep_list(70), "nested deeper than 64 levels"),
], ids=["duplicate", "unhashable", "not-a-list", "frozen-int", "deep-nesting"])
def test_hostile_set_is_refused(field: str, value: Any, message: str, tmp_path) -> None:
    assert message in str(hostile(_set_vocabulary(), _set(_first("set"), field, value), tmp_path))


# -- date arrays -------------------------------------------------------------------------------


@cache
def _date_encoder() -> Any:
    from sklearn.preprocessing import OneHotEncoder

    return OneHotEncoder().fit(pd.DataFrame({"d": pd.to_datetime(["2020-01-01", "2021-06-30"] * 3)}))


def _date_tensor(change: Callable[[np.ndarray], np.ndarray]) -> Edit:
    def edit(meta: dict, tensors: dict) -> None:
        name = _first("datetime")(meta)["v"]["name"]
        tensors[name] = change(tensors[name])
    return edit


@pytest.mark.parametrize(("edit", "message"), [
    (_set(_first("datetime"), "unit", "ps"), "unit 'ps' is not allowed"),
    (_set(_first("datetime"), "kind", "O"), "kind 'O' / unit 'us' is not allowed"),
    (_set(_first("datetime"), "unit", ["us"]), "'datetime' field 'unit' must be str, found list"),
    (_date_tensor(lambda a: a.astype(np.float64)), "expected kind 'i'"),
    (_date_tensor(lambda a: a.astype(np.int32)), "a date array is stored as int64, found int32"),
    (_date_tensor(lambda a: a[::-1].copy()), "'categories_.0' must be sorted"),
], ids=["unit-unknown", "kind-unknown", "unit-list", "tensor-float", "tensor-int32", "unsorted"])
def test_hostile_date_array_is_refused(edit: Edit, message: str, tmp_path) -> None:
    assert message in str(hostile(_date_encoder(), edit, tmp_path))
