"""Every hyperparameter of every allowed class has a kind, and each kind's rule refuses its lie at load.

The crafted files are real models whose hyperparameters (and, for a neighbors search, the
fitted copy of them) were changed before saving: valid in every byte, lying in meaning.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.image import PatchExtractor
from sklearn.kernel_approximation import AdditiveChi2Sampler, PolynomialCountSketch, RBFSampler
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, TheilSenRegressor
from sklearn.manifold import TSNE
from sklearn.model_selection import TunedThresholdClassifierCV
from sklearn.multiclass import OutputCodeClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import KBinsDiscretizer, SplineTransformer
from sklearn.random_projection import GaussianRandomProjection
from sklearn.svm import SVC, SVR, LinearSVC

import aprender
from aprender import _limits
from aprender.codec._param_rules import check_params
from aprender.codec._param_table import KINDS, kinds_of
from aprender.codec._registry import allow_list, is_builtin_key, public_key
from aprender.codec._table import NAMESAKES
from aprender.codec.trust import NONE
from aprender.exceptions import AprenderError, FormatError, UntrustedParameterError
from aprender.feature_extraction.text import CountVectorizer, HashingVectorizer
from aprender.text import NgramLm
from tests.support.state_edit import find, hostile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from gen_param_table import BEGIN, END, block, classify, constructor_parameters, module_text  # noqa: E402

KINDS_ALLOWED = {"checked", "sizes", "path", "kwargs", "resource", "estimator", "refused"}
X = np.random.default_rng(0).random((30, 4))
Y = np.arange(30) % 2
TEXTS = ["the cat sat", "a dog ran far", "the dog sat on a mat", "cats and dogs"]


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, str]]:
    return classify()


def test_every_parameter_of_every_class_is_classified(table):
    for entry in allow_list(generic=True):
        if not (is_builtin_key(entry.key) or entry.key.startswith("aprender.")):
            continue  # a class another test registered at run time: only PARAM_RULES hold for it
        names = constructor_parameters(entry.cls)
        kinds = kinds_of(entry.key)
        assert kinds is not None, entry.key
        assert sorted(kinds) == sorted(names), entry.key
        assert set(kinds.values()) <= KINDS_ALLOWED, entry.key


def test_checked_in_table_is_what_the_tool_generates(table):
    path = ROOT / "aprender" / "codec" / "_param_table.py"
    assert path.read_text() == module_text(table), "run python tools/gen_param_table.py"
    page = (ROOT / "docs" / "threat-model.md").read_text()
    assert page[page.index(BEGIN):page.index(END) + len(END)] == block(table), "run python tools/gen_param_table.py"


def test_a_namesake_shares_its_parents_row_only_when_the_rows_agree(table):
    shared = [key for key in NAMESAKES if key in table and key not in KINDS]
    assert shared, "no namesake shares a row"
    for key in shared:
        assert kinds_of(key) == table[key] == table[NAMESAKES[key][2]], key


@pytest.mark.parametrize(("key", "name", "kind"), [
    ("sklearn.svm.SVC", "kernel", "path"), ("sklearn.neighbors.KNeighborsClassifier", "metric_params", "kwargs"),
    ("sklearn.kernel_approximation.AdditiveChi2Sampler", "sample_steps", "sizes"),
    ("sklearn.feature_extraction.text.CountVectorizer", "token_pattern", "resource"),
    ("aprender.text.NgramLm", "token_pattern", "resource"), ("sklearn.pipeline.Pipeline", "steps", "estimator"),
    ("sklearn.svm.SVC", "C", "checked"),
])
def test_known_parameters_have_their_kind(key, name, kind):
    assert kinds_of(key)[name] == kind


def _crafted(est, tmp_path, **changes):
    """``est`` with ``changes`` set on it as it is saved; the load's error."""
    for name, value in changes.items():
        setattr(est, name, value)
    return hostile(est, lambda meta, tensors: None, tmp_path)


def _roundtrip(est, tmp_path):
    path = tmp_path / "legit.safetensors"
    aprender.save(est, path)
    return aprender.load(path)


@pytest.mark.parametrize(("metric", "key", "good", "bad"), [
    ("mahalanobis", "VI", np.eye(4), np.eye(3)),
    ("seuclidean", "V", np.ones(4), np.ones(7)),
    ("minkowski", "w", np.ones(4), np.ones(2)),
])
def test_metric_params_must_fit_the_features(tmp_path, metric, key, good, bad):
    legit = KNeighborsClassifier(metric=metric, metric_params={key: good}, algorithm="brute").fit(X, Y)
    np.testing.assert_array_equal(_roundtrip(legit, tmp_path).predict(X), legit.predict(X))
    err = _crafted(legit, tmp_path, metric_params={key: bad}, effective_metric_params_={key: bad})
    assert f"metric_params.{key}" in str(err) and "4 features" in str(err)


def test_fitted_metric_params_are_checked_too(tmp_path):
    est = KNeighborsClassifier(metric="seuclidean", metric_params={"V": np.ones(4)}, algorithm="brute").fit(X, Y)
    err = _crafted(est, tmp_path, effective_metric_params_={"V": np.ones(9)})
    assert "effective_metric_params_.V" in str(err)


def test_a_metric_takes_only_its_own_parameters(tmp_path):
    est = KNeighborsClassifier(metric="euclidean", algorithm="brute").fit(X, Y)
    err = _crafted(est, tmp_path, metric_params={"VI": np.eye(4)})
    assert "takes no parameter 'VI'" in str(err)


def test_keyword_arguments_follow_param_rules(tmp_path):
    est = KNeighborsClassifier(algorithm="brute").fit(X, Y)
    err = _crafted(est, tmp_path, metric_params={"n_jobs": 5000})
    assert isinstance(err, UntrustedParameterError) and err.name == "n_jobs"
    ridge = KernelRidge(kernel="rbf").fit(X, Y)
    err = _crafted(ridge, tmp_path, kernel_params={"n_jobs": 5000})
    assert isinstance(err, UntrustedParameterError) and "kernel_params" in str(err)


def test_kernel_params_hold_only_what_the_kernel_takes(tmp_path):
    ridge = KernelRidge(kernel="poly", kernel_params={"degree": 2}).fit(X, Y)
    np.testing.assert_array_equal(_roundtrip(ridge, tmp_path).predict(X), ridge.predict(X))
    err = _crafted(ridge, tmp_path, kernel="rbf")
    assert "kernel_params.degree" in str(err)


@pytest.mark.parametrize("kernel", ["precomputed", "poly"])
def test_a_kernel_must_fit_the_stored_arrays(tmp_path, kernel):
    fitted_on = "rbf" if kernel == "precomputed" else "precomputed"
    data = X @ X.T if fitted_on == "precomputed" else X
    svc = SVC(kernel=fitted_on).fit(data, Y)
    np.testing.assert_array_equal(_roundtrip(svc, tmp_path).predict(data), svc.predict(data))
    assert "support_vectors_" in str(_crafted(svc, tmp_path, kernel=kernel))
    ridge = KernelRidge(kernel=fitted_on).fit(data, Y)
    if kernel == "precomputed":
        assert "kernel 'precomputed' does not fit the stored 'X_fit_'" in str(_crafted(ridge, tmp_path, kernel=kernel))


def test_counts_of_work_are_bounded(tmp_path):
    legit = AdditiveChi2Sampler(sample_steps=2).fit(X)
    np.testing.assert_array_equal(_roundtrip(legit, tmp_path).transform(X), legit.transform(X))
    err = _crafted(legit, tmp_path, sample_steps=10**6)
    assert "sample_steps" in str(err) and f"at most {_limits.MAX_INFERENCE_COUNT['sample_steps']}" in str(err)
    svc = SVC(max_iter=-1).fit(X, Y)
    assert "max_iter" in str(_crafted(svc, tmp_path, max_iter=2**40))
    # how many thresholds a refit scores: 2**31 - 1 was a MemoryError in fit (a fuzz campaign's)
    tuned = TunedThresholdClassifierCV(LogisticRegression(), thresholds=5, cv=2).fit(X, Y)
    assert "thresholds" in str(_crafted(tuned, tmp_path, thresholds=2**31 - 1))


@pytest.mark.parametrize(("make", "changes"), [
    (lambda: LinearSVC(), {"C": 1e100}),
    (lambda: LinearSVC(), {"intercept_scaling": 1e80}),
    (lambda: LogisticRegression(solver="liblinear"), {"C": float("inf")}),
    (lambda: SVR(), {"C": 1e300}),
    (lambda: LogisticRegressionCV(Cs=[0.1, 1.0], solver="liblinear", cv=2), {"Cs": [0.1, 1e100]}),
    (lambda: TSNE(perplexity=5), {"early_exaggeration": 1e50}),
    (lambda: TSNE(perplexity=5), {"learning_rate": 1e300}),
], ids=["linearsvc-C", "linearsvc-intercept-scaling", "liblinear-inf", "svr", "cv-grid", "tsne-exaggeration",
        "tsne-learning-rate"])
def test_solver_scales_past_where_liblinear_returns_are_refused(tmp_path, make, changes):
    est = make().fit(X, Y % 2)
    (name,) = changes
    err = _crafted(est, tmp_path, **changes)
    assert f"'{name}'" in str(err) or f".{name}" in str(err)
    assert f"at most {_limits.MAX_SOLVER_SCALE[name]:g} in magnitude" in str(err)


def test_solvers_return_at_the_solver_scale_bounds() -> None:
    """The bounds are inside where the solvers terminate: a refit at them returns (in a child, so a hang or
    crash fails)."""
    import subprocess

    bound, tsne = _limits.MAX_SOLVER_SCALE["C"], _limits.MAX_SOLVER_SCALE["early_exaggeration"]
    assert _limits.MAX_SOLVER_SCALE["learning_rate"] == tsne
    code = ("import warnings; warnings.simplefilter('ignore'); from sklearn.datasets import load_iris; "
            "from sklearn.svm import LinearSVC; from sklearn.linear_model import LogisticRegression; "
            "from sklearn.manifold import TSNE; X, y = load_iris(return_X_y=True); "
            f"LinearSVC(C={bound!r}, intercept_scaling={bound!r}).fit(X, y); "
            f"LogisticRegression(C={bound!r}, intercept_scaling={bound!r}, solver='liblinear').fit(X, y > 0); "
            f"TSNE(perplexity=5, early_exaggeration={tsne!r}, learning_rate={tsne!r}).fit(X[::3]); "
            "print('returned')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "returned", done.stderr[-500:]


def test_gallery_sized_solver_scales_load(tmp_path):  # plot_rbf_parameters searches C up to 1e10
    est = SVC(C=1e10, gamma=1e-3).fit(X, Y)
    np.testing.assert_array_equal(_roundtrip(est, tmp_path).predict(X), est.predict(X))


@pytest.mark.parametrize(("make", "name"), [
    (lambda: TheilSenRegressor(max_subpopulation=100, random_state=0), "max_subpopulation"),
    (lambda: OutputCodeClassifier(LogisticRegression(), code_size=1.5, random_state=0), "code_size"),
])
def test_real_valued_counts_of_work_are_bounded(tmp_path, make, name):  # TheilSen's 1e300 spun a refit forever
    est = make().fit(X, Y)
    np.testing.assert_array_equal(_roundtrip(est, tmp_path).predict(X), est.predict(X))
    err = _crafted(est, tmp_path, **{name: 1e300})
    assert name in str(err) and f"at most {_limits.MAX_WORK_COUNT}" in str(err)


@pytest.mark.parametrize(("make", "fit_on", "name", "lie"), [
    (lambda: CountVectorizer(ngram_range=(1, 2)), TEXTS, "ngram_range", (1, 5000)),
    (lambda: HashingVectorizer(analyzer="char", ngram_range=(1, 3)), TEXTS, "ngram_range", (1, 20000)),
    (lambda: RBFSampler(n_components=8, random_state=0), X, "n_components", 2**24),
    (lambda: GaussianRandomProjection(n_components=2, random_state=0), X, "n_components", 2**24),
    (lambda: KBinsDiscretizer(n_bins=3, quantile_method="averaged_inverted_cdf"), X, "n_bins", 2**24),
    (lambda: SplineTransformer(n_knots=4), X, "n_knots", 2**24),
    (lambda: MLPClassifier(hidden_layer_sizes=(3,), max_iter=5, random_state=0), X, "hidden_layer_sizes",
     (2**14, 2**14)),
    (lambda: PolynomialCountSketch(degree=2, n_components=8, random_state=0), X, "degree", 2**24),
    (lambda: PatchExtractor(patch_size=(4, 4)), np.zeros((1, 40, 40)), "patch_size", (150, 150)),
], ids=["word-ngrams", "char-ngrams", "rbf-sampler", "random-projection", "kbins", "spline", "mlp", "count-sketch",
        "patches"])
def test_counts_a_use_or_refit_allocates_by_are_bounded(tmp_path, make, fit_on, name, lie):
    """Each lie was measured on a model of under 8 KB: 40 s and more on one 9 KB document (word n-grams),
    2.4 GB on 20,000 characters (char n-grams), refits asking 8 GiB, 25 GiB, 2 PiB and 2 GiB, transforms
    asking 25 GiB for 20 rows (count sketch) and 3.8 GiB for one 300x300 image (patches)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make().fit(fit_on, None if fit_on is TEXTS else Y)
    bound = {**_limits.MAX_FIT_DIMENSION, **_limits.MAX_INFERENCE_COUNT}[name]
    err = _crafted(est, tmp_path, **{name: lie})
    if "but the fitted state gives" in str(err):  # RBFSampler: the width its weights give is checked first
        assert f"gives [{lie}] output columns" in str(err)
        with pytest.raises(FormatError, match=f"'{name}'.*at most {bound}"):
            check_params(public_key(type(est)), {name: lie}, {}, NONE, "")
        return
    assert f"'{name}'" in str(err) and f"at most {bound}" in str(err)


def test_layer_widths_are_bounded_by_their_weights(tmp_path):
    mlp = MLPClassifier(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp.fit(X, Y)
    width = _limits.MAX_FIT_DIMENSION["hidden_layer_sizes"]
    err = _crafted(mlp, tmp_path, hidden_layer_sizes=[width] * 3)  # each width allowed, 2 * 2**24 weights not
    assert "'hidden_layer_sizes'" in str(err) and f"{2 * width * width} weights" in str(err)
    mlp.hidden_layer_sizes = (width, width)  # exactly MAX_WORK_COUNT weights
    assert _roundtrip(mlp, tmp_path).hidden_layer_sizes == (width, width)


def test_refits_at_the_fit_dimension_bounds_are_cheap():
    """The bounds are where a refit of a small model still costs little (measured: under 0.5 s each)."""
    bounds = _limits.MAX_FIT_DIMENSION
    for est in [SplineTransformer(n_knots=bounds["n_knots"]), KBinsDiscretizer(n_bins=bounds["n_bins"]),
                RBFSampler(n_components=bounds["n_components"]),
                GaussianRandomProjection(n_components=bounds["n_components"])]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert est.fit_transform(X).shape[0] == len(X)


def test_helper_objects_follow_the_hyperparameter_rules(tmp_path):
    """A kernel's or a splitter's parameters are hyperparameters too: pairwise_kernels_kwargs={'n_jobs': 5000}
    loaded (predict then asked joblib for 5000 workers), as did a RepeatedKFold repeating 2**40 times."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import PairwiseKernel
    from sklearn.model_selection import GridSearchCV, RepeatedKFold

    gp = GaussianProcessRegressor(kernel=PairwiseKernel(metric="rbf", pairwise_kernels_kwargs={"dense_output": True}))
    gp.fit(X, X.sum(axis=1))
    np.testing.assert_array_equal(_roundtrip(gp, tmp_path).predict(X), gp.predict(X))
    gp.kernel_.pairwise_kernels_kwargs = {"n_jobs": 5000}
    err = _crafted(gp, tmp_path)
    assert isinstance(err, UntrustedParameterError) and "kernel_.pairwise_kernels_kwargs" in str(err)
    gp.kernel_.pairwise_kernels_kwargs = {"dense_output": True, "out": np.zeros(3)}
    assert "kernel_.pairwise_kernels_kwargs.out" in str(_crafted(gp, tmp_path))
    search = GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=RepeatedKFold(n_splits=2, n_repeats=2))
    search.fit(X, Y)
    search.cv.n_repeats = 2**40
    assert "n_repeats" in str(_crafted(search, tmp_path)) and f"at most {_limits.MAX_WORK_COUNT}" in str(
        _crafted(search, tmp_path))


@pytest.mark.parametrize(("template", "message"), [
    ("{feature_name:>1000000000}", "no format spec"),  # get_feature_names_out asked over 1 GB per name
    ("{feature_name.__class__.__mro__}", "bare names"),
    ("{feature_name!r}", "or conversion"), ("{0}", "bare names"), ("{", "is not a format template"),
    ("x" * 300 + "{feature_name}", "at most 256 characters"),
])
def test_a_feature_name_template_names_only_its_fields(tmp_path, template, message):
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    legit = ColumnTransformer([("s", StandardScaler(), ["a", "b"])],
                              verbose_feature_names_out="{feature_name}_by_{transformer_name}").fit(frame)
    assert list(_roundtrip(legit, tmp_path).get_feature_names_out()) == ["a_by_s", "b_by_s"]
    err = _crafted(legit, tmp_path, verbose_feature_names_out=template)
    assert "'verbose_feature_names_out'" in str(err) and message in str(err)


def test_text_a_transform_repeats_per_value_is_short(tmp_path):
    from sklearn.feature_extraction import DictVectorizer

    records = [{"a": "x", "b": 1.0}, {"a": "y", "b": 2.0}]
    legit = DictVectorizer(separator="::").fit(records)
    assert (_roundtrip(legit, tmp_path).transform(records) != legit.transform(records)).nnz == 0
    err = _crafted(legit, tmp_path, separator="=" * 10**6)  # a 20,000-row transform took 23 s
    assert "'separator'" in str(err) and "at most 256 characters" in str(err)


@pytest.mark.parametrize(("space", "name", "error"), [
    ({"memory": ["/tmp/aprender-cache"]}, "memory", UntrustedParameterError),  # a refit made the cache there
    ({"m__n_jobs": [5000]}, "n_jobs", UntrustedParameterError),
    ([{"m__C": [1.0]}, {"m__C": [1e100], "m__solver": ["liblinear"]}], "m__C", FormatError),
    ({"m__max_iter": np.array([10, 2**40])}, "max_iter", FormatError),
    ({"v__token_pattern": ["(a+)+$"]}, "token_pattern", FormatError),
], ids=["memory", "n-jobs", "solver-scale", "sizes", "regex"])
def test_a_search_spaces_candidates_follow_their_parameters_rules(tmp_path, space, name, error):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([("v", CountVectorizer()), ("m", LogisticRegression())])
    search = GridSearchCV(pipe, {"m__C": [0.5, 1.0], "v__ngram_range": [(1, 1), (1, 2)]}, cv=2).fit(TEXTS * 2, Y[:8])
    assert _roundtrip(search, tmp_path).predict(TEXTS).tolist() == search.predict(TEXTS).tolist()
    search.param_grid = space
    err = _crafted(search, tmp_path)
    assert isinstance(err, error) and "param_grid" in str(err) and name in str(err)


def test_every_default_count_of_work_loads():
    """A ``sizes`` default past the cap (RANSAC's inf) would refuse every model of its class: each is listed."""
    import inspect
    import math

    from aprender.codec._param_rules import check_params
    from aprender.codec.trust import Trust

    for entry in allow_list(generic=True):
        kinds = kinds_of(entry.key) or {}
        try:
            signature = inspect.signature(entry.cls.__init__).parameters
        except (TypeError, ValueError):
            continue
        defaults = {n: signature[n].default for n, k in kinds.items() if k == "sizes" and n in signature
                    and isinstance(signature[n].default, float)}
        check_params(entry.key, defaults, {}, Trust({}, frozenset()), entry.key)
        past = {n for n, d in defaults.items() if math.isinf(d) or d > _limits.MAX_WORK_COUNT}
        assert past <= _limits.UNBOUNDED_COUNTS, (entry.key, past)


def test_a_backtracking_token_pattern_is_refused(tmp_path):
    legit = CountVectorizer().fit(TEXTS)
    assert (_roundtrip(legit, tmp_path).transform(TEXTS) != legit.transform(TEXTS)).nnz == 0
    err = _crafted(legit, tmp_path, token_pattern="(a+)+$")
    assert "token_pattern" in str(err) and "nests a repetition" in str(err)


@pytest.mark.parametrize(("pattern", "message"), [
    ("a?" * 26 + "a" * 26, "holds 26 repetitions"),  # transform of one 26-letter word took 4.5 s
    ("(?:a?){28}a{28}", "nests a repetition"),
    (r"(a*)\1*b", "refers back to a group"),  # 13 s on a 3,000-letter document
])
def test_token_patterns_that_backtrack_without_nesting_are_refused(tmp_path, pattern, message):
    err = _crafted(CountVectorizer().fit(TEXTS), tmp_path, token_pattern=pattern)
    assert "token_pattern" in str(err) and message in str(err)


@pytest.mark.parametrize("pattern", [
    r"\w+\w+x",  # took 15 s on one 2,000-letter word
    "(?=a*a*a*a*b)",  # did not finish on 300 letters
])
def test_token_patterns_that_backtrack_polynomially_on_long_documents_are_refused(tmp_path, pattern):
    err = _crafted(CountVectorizer().fit(TEXTS), tmp_path, token_pattern=pattern)
    assert "token_pattern" in str(err) and "can match the same characters" in str(err)
    assert isinstance(err, AprenderError)


def test_a_bit_flipped_ngram_pattern_is_refused_at_load(tmp_path):
    lm = NgramLm(n=2).fit(TEXTS)

    def flip(meta, tensors):
        node = find(meta, "NgramLm")
        pattern = node["params"]["token_pattern"]
        node["params"]["token_pattern"] = pattern.replace("]", chr(ord("]") ^ 0x01))

    err = hostile(lm, flip, tmp_path)
    assert "token_pattern" in str(err) and "not a valid regular expression" in str(err)
