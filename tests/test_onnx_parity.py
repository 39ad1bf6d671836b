"""Every zoo model in ONNX Runtime: checker, labels, probabilities and values, float32 and float64.

Each zoo case is exported with ``to_onnx(model, X, dtype=...)`` and run with
``onnxruntime.InferenceSession`` on the case's rows. Outputs are matched to the
estimator's own methods by name:

- ``label`` -> ``predict``: 100% agreement for linear models and KNN, >= 99.9% otherwise;
- ``probabilities`` -> ``predict_proba`` (``decision_function`` for classifiers without it);
- ``scores`` -> ``transform`` (cluster distances);
- any other single output -> ``predict`` (regressors, pipelines) or ``transform``.

float32: rtol 1e-4 / atol 1e-5. float64: rtol 1e-9 / atol 1e-10, unless the double graph
computes in single precision somewhere: the tolerances, their measured exceptions and the
output-to-method matching are the library's own (aprender.format.onnx._verify), which
verifies every export the same way. A case that
cannot be exported must raise UnsupportedExportError for one of the reasons listed in
``GAPS`` / ``GAPS_FLOAT64``; nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import scipy.sparse as sp

from aprender.exceptions import UnsupportedExportError
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._verify import reference, single_precision_inside, tolerance_for

#: ONNX Runtime's StringNormalizer defaults to the en_US.UTF-8 locale, which this
#: machine (like most minimal Linux images) lacks; C.UTF-8 is always present on Linux.
TEXT_OPTIONS = {"locale": "C.UTF-8"}


def parts(model: Any) -> Iterator[Any]:
    """``model`` and every estimator nested in it (pipeline steps, fitted transformers)."""
    yield model
    children = [step for _, step in getattr(model, "steps", [])]
    children += [t for _, t, _ in getattr(model, "transformers_", []) if hasattr(t, "fit")]
    for child in children:
        yield from parts(child)


def has(model: Any, name: str, test: Callable[[Any], bool] = lambda est: True) -> bool:
    return any(type(est).__name__ == name and test(est) for est in parts(model))


@dataclass(frozen=True)
class Gap:
    """A model skl2onnx / ONNX Runtime cannot export faithfully, and why."""

    matches: Callable[[Any], bool]
    message: str  # regex the UnsupportedExportError must match
    reason: str


def _multilabel(est: Any) -> bool:
    return getattr(est, "out_activation_", None) == "logistic" and getattr(est, "n_outputs_", 1) > 1


def _frame_logistic(model: Any) -> bool:
    steps = [type(step).__name__ for _, step in getattr(model, "steps", [])]
    return steps[:2] == ["ColumnTransformer", "LogisticRegression"] and has(model, "OneHotEncoder")


def _word_ngrams(est: Any) -> bool:
    return est.analyzer == "word" and est.ngram_range[1] > 1


VECTORIZERS = ("CountVectorizer", "TfidfVectorizer")

def _own_without_converter(model: Any) -> bool:
    """An aprender estimator of its own (no scikit-learn base) that has no converter registered.

    MixtureOfExperts* / SoftmaxGating get theirs from the MoE module through
    aprender.format.onnx.register_converter(); until then the export must say so.
    """
    from skl2onnx._supported_operators import sklearn_operator_name_map

    from aprender.format.onnx._converters import sync

    sync()
    return any(type(e).__module__.startswith("aprender.") and type(e) not in sklearn_operator_name_map
               for e in parts(model))


#: Not exportable in either precision. The first matching gap is the expected one.
GAPS = [
    Gap(lambda m: has(m, "NgramLm"), "n-gram language model", "no ONNX operators for count tables with backoff"),
    Gap(lambda m: has(m, "ContentRecommender"), r"recommend\(\) ranks stored items",
        "recommend() is a catalogue lookup; a unigram TF-IDF vectorizer_ is exportable alone (test_onnx.py)"),
    Gap(_own_without_converter, "no ONNX converter for aprender\\.", "an own estimator awaiting its converter"),
    Gap(lambda m: has(m, "KNeighborsRegressor", lambda e: sp.issparse(e._fit_X)), "scipy.sparse fitted data",
        "skl2onnx embeds the training rows as a dense initializer"),
    Gap(lambda m: has(m, "KNeighborsClassifier", lambda e: e.weights != "uniform"), "divides by the zero distance",
        "a query equal to a training row: scikit-learn returns that row's label, skl2onnx divides by zero"),
    Gap(lambda m: has(m, "SVC", lambda e: e.kernel == "precomputed"), "precomputed kernel matrix",
        "ONNX's SVMClassifier needs support vectors and a built-in kernel"),
    Gap(lambda m: has(m, "MLPClassifier", _multilabel), "invalid ONNX graph.*Cast",
        "skl2onnx's multilabel MLP graph fails ONNX shape inference"),
    Gap(lambda m: any(has(m, name, _word_ngrams) for name in VECTORIZERS), "onnxruntime issue 4201",
        "ONNX Runtime misses word n-grams across removed tokens (measured: wrong counts)"),
    Gap(lambda m: any(has(m, name, lambda e: e.analyzer != "word") for name in VECTORIZERS), "tokenizer='word'",
        "skl2onnx converts word analyzers only"),
    Gap(lambda m: any(has(m, name, lambda e: e.sublinear_tf) for name in ("TfidfVectorizer", "TfidfTransformer")),
        "sublinear_tf=True", "skl2onnx's 1 + log(tf) graph gives other values (measured) or an ill-typed graph"),
    Gap(lambda m: has(m, "OneHotEncoder", lambda e: e._infrequent_enabled), "Infrequent categories",
        "skl2onnx does not implement infrequent categories"),
    Gap(lambda m: has(m, "SimpleImputer", lambda e: e.add_indicator), "add_indicator=True",
        "skl2onnx drops the indicator columns (measured: 10 of 20 output columns)"),
]

#: Exportable in float32 only.
GAPS_FLOAT64 = [
    Gap(_frame_logistic, "invalid ONNX graph.*Softmax",
        "skl2onnx types the probabilities after string column inputs as float32 while Softmax computes in double"),
]


def tolerance(model: Any, onx: onnx.ModelProto, dtype: type) -> dict[str, float]:
    """The library's verification tolerance (TOLERANCE, widened by its LOOSER table where measured)."""
    return tolerance_for(model, onx, dtype is np.float32)


def expected_gap(model: Any, dtype: type) -> Gap | None:
    gaps = GAPS + (GAPS_FLOAT64 if dtype is np.float64 else [])
    return next((gap for gap in gaps if gap.matches(model)), None)


def options_for(model: Any) -> dict[Any, Any] | None:
    vectorizers = [e for e in parts(model) if type(e).__name__ in ("CountVectorizer", "TfidfVectorizer")]
    return {id(vec): dict(TEXT_OPTIONS) for vec in vectorizers} or None


def run(onx: onnx.ModelProto, X: Any) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, input_feed(onx, X)), strict=True))


def float32_split_flips(model: Any, X: Any) -> np.ndarray:
    """Rows on which rounding the input to float32 crosses a HistGradientBoosting split.

    scikit-learn's histogram GBDT compares float64 inputs with float64 thresholds, the
    ONNX TreeEnsemble compares float32 values (other sklearn trees already predict on
    float32 inputs, so only these can differ). Such a row takes another branch and may
    get another prediction; any other row must match.
    """
    rows = np.zeros(len(X), dtype=bool)
    for est in parts(model):
        for predictor in (p for iteration in getattr(est, "_predictors", []) for p in iteration):
            nodes = predictor.nodes[~predictor.nodes["is_leaf"].astype(bool)]
            x, t = np.asarray(X, dtype=np.float64)[:, nodes["feature_idx"]], nodes["num_threshold"]
            flips = (x <= t) != (x.astype(np.float32) <= t.astype(np.float32))
            rows |= (flips & ~np.isnan(x)).any(axis=1)
    return rows


def knn_ties(model: Any, X: Any, rtol: float) -> np.ndarray:
    """Rows whose k-th and (k+1)-th neighbours are equally far (within ``rtol``).

    Which of the tied neighbours is used is an implementation choice (scikit-learn's
    tree search vs. ONNX's TopK), so probabilities and averaged targets may differ on
    exactly these rows, and on no other.
    """
    est = list(parts(model))[-1]
    if not type(est).__name__.startswith("KNeighbors"):
        return np.zeros(len(X), dtype=bool)
    dist, _ = est.kneighbors(X, n_neighbors=est.n_neighbors + 1)
    return np.isclose(dist[:, -2], dist[:, -1], rtol=rtol, atol=0)


def exact_labels(model: Any) -> bool:
    """Linear models and KNN must agree on every label; others on >= 99.9%.

    Elsewhere a row may sit on a float32 decision threshold (a tree split, an MLP's
    equal logits) where rounding the input to float32 flips the label.
    """
    from sklearn import svm

    final = list(parts(model))[-1]
    linear = any(base.__module__.startswith("sklearn.linear_model") for base in type(final).__mro__)
    return linear or isinstance(final, svm.LinearSVC) or type(final).__name__.startswith("KNeighbors")


def assert_labels(model: Any, expected: np.ndarray, actual: np.ndarray, explained: np.ndarray) -> None:
    """Labels agree on every row that is not an explained tie or float32 split flip."""
    actual = actual.ravel()
    if expected.dtype.kind == "b":
        expected = expected.astype(actual.dtype)
    elif expected.dtype.kind in "USO":
        expected, actual = expected.astype(str), actual.astype(str)
    agree = np.mean((expected == actual)[~explained])
    if exact_labels(model):
        assert agree == 1.0, f"labels differ on {np.flatnonzero((expected != actual) & ~explained)}"
    else:
        assert agree >= 0.999, f"labels agree on only {agree:.4%}"


def assert_values(name: str, expected: np.ndarray, actual: np.ndarray, tol: dict[str, float],
                  skip_rows: np.ndarray, row_atol: np.ndarray | None = None, decision_column: int = 0) -> None:
    if actual.shape != expected.shape:
        if expected.ndim == 1 and actual.shape == (len(expected), 2):
            # binary decision values: [d, -d] from SVC, [-d, d] from a linear model's raw scores
            np.testing.assert_array_equal(actual[:, 1], -actual[:, 0])
            actual = actual[:, decision_column]
        else:
            assert actual.size == expected.size, f"{name}: shape {actual.shape} vs {expected.shape}"
            actual = actual.reshape(expected.shape)
    keep = ~skip_rows
    actual, expected = actual[keep], expected[keep].astype(actual.dtype)
    if row_atol is None:
        np.testing.assert_allclose(actual, expected, **tol, err_msg=name)
        return
    atol = np.maximum(tol["atol"], row_atol[keep]).reshape(-1, *[1] * (expected.ndim - 1))
    excess = np.abs(actual.astype(np.float64) - expected) - (tol["rtol"] * np.abs(expected) + atol)
    assert excess.max() <= 0, f"{name}: exceeds the float32 SVM error bound by {excess.max()}"


def svm_decision_atol(model: Any, X: np.ndarray) -> np.ndarray | None:
    """Per-row float32 error bound of an SVM decision value: eps32 * sum_i |alpha_i K(x, sv_i)|.

    ONNX Runtime's SVMClassifier keeps support vectors and coefficients as float32
    attributes and sums in float32; with a polynomial kernel on unscaled data the
    terms are large and cancel (measured: 0.04267 vs 0.04272 on iris).
    """
    from sklearn.metrics.pairwise import pairwise_kernels

    est = list(parts(model))[-1]
    if type(est).__name__ not in ("SVC", "NuSVC") or hasattr(est, "predict_proba"):
        return None  # probabilities are checked at the usual tolerance
    params = {"gamma": est._gamma, "degree": est.degree, "coef0": est.coef0}
    K = pairwise_kernels(X, est.support_vectors_, metric=est.kernel, filter_params=True, **params)
    terms = np.abs(K) @ np.abs(est.dual_coef_).T
    return 8 * np.finfo(np.float32).eps * terms.max(axis=1)


def assert_distances(expected: np.ndarray, actual: np.ndarray, X: np.ndarray, tol: dict[str, float]) -> None:
    """Cluster distances in float32, compared squared.

    skl2onnx computes ||x - c||^2 as |x|^2 - 2 x.c + |c|^2 in float32, whose absolute
    error is a few float32 ulps of |x|^2; near a centre the square root turns that into
    a large relative error of a small distance (measured: 0.06620 vs 0.06618 on iris).
    """
    scale = float(np.max(np.sum(np.square(X, dtype=np.float64), axis=1)))
    atol = 4 * np.finfo(np.float32).eps * scale
    np.testing.assert_allclose(np.square(actual, dtype=np.float64), np.square(expected), rtol=tol["rtol"], atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_zoo_parity(case, dtype) -> None:
    model, X = case.make()  # a sparse X is exported and fed as is: input_feed densifies it
    dense = X.toarray() if sp.issparse(X) else X  # for the error bounds computed here
    gap = expected_gap(model, dtype)
    if gap is not None:
        with pytest.raises(UnsupportedExportError, match=gap.message) as info:
            to_onnx(model, X, dtype=dtype, options=options_for(model))
        named = {type(est).__name__ for est in parts(model)}
        assert any(name in str(info.value) for name in named), f"the error names none of {named}"
        return
    onx = to_onnx(model, X, dtype=dtype, options=options_for(model))
    onnx.checker.check_model(onx, full_check=True)
    tol = tolerance(model, onx, dtype)
    outputs = run(onx, X)
    explained = knn_ties(model, dense, rtol=1e-6 if dtype is np.float32 else 1e-12)
    if dtype is np.float32:
        explained |= float32_split_flips(model, dense)
    for name, actual in outputs.items():
        expected = reference(model, name, X)
        # a model fitted on float32 data (MLP) predicts in float32: float64 cannot be tighter
        out_tol = tolerance(model, onx, np.float32) if expected.dtype == np.float32 else tol
        if name == "label":
            assert_labels(model, expected, actual, explained)
        elif name == "scores" and dtype is np.float32:
            assert_distances(expected, actual, dense, out_tol)
        else:
            float32_svm = name == "probabilities" and single_precision_inside(onx)
            row_atol = svm_decision_atol(model, dense) if float32_svm else None
            libsvm = type(list(parts(model))[-1]).__name__ in ("SVC", "NuSVC")
            assert_values(name, expected, actual, out_tol, explained, row_atol, decision_column=0 if libsvm else 1)
