"""Verified export: run the graph in ONNX Runtime on probe rows and compare with the estimator.

Outputs are matched to the estimator's methods by name (``label`` -> ``predict``,
``probabilities`` -> ``predict_proba`` or ``decision_function``, ``scores`` ->
``decision_function`` or ``transform``, any other -> ``predict`` for regressors, else
``transform``). Labels must agree on every row, floats within
:data:`TOLERANCE` for the precision the graph computes in. The differences that are
measured, explained and not the graph's fault are one table here (:data:`LOOSER` and the
``explained`` rows), which tests/test_onnx_parity.py uses too:

- KNN: rows whose k-th and (k+1)-th neighbours tie (which one is used is an implementation choice),
- trees: rows where a value lies between a split threshold and its float32 rounding (the
  float32 graph's thresholds), or, for HistGradientBoosting, where rounding the input does,
- SVC / NuSVC decision values: ONNX Runtime sums float32 terms; the bound is 8 eps32 sum |alpha K|,
- KMeans distances: computed as |x|^2 - 2 x.c + |c|^2 in float32, compared squared,
- naive Bayes: looser tolerances (:data:`LOOSER`, each with its reason).

The result (the largest differences measured) is stored as ``aprender.parity`` in the
graph's ``metadata_props``; a graph that disagrees raises :class:`ExportParityError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from aprender.exceptions import ExportParityError, UnsupportedExportError
from aprender.format.onnx._boosters import is_booster
from aprender.format.onnx._exact_trees import exact_trees
from aprender.format.onnx._inputs import input_feed
from aprender.format.onnx._links import final_step
from aprender.format.onnx._probe import fitted_parts, rounded_like_graph
from aprender.format.onnx._sample_probe import probe

__all__ = ["LOOSER", "TOLERANCE", "answering", "explained_rows", "float32_split_flips", "knn_ties", "reference",
           "parity_json", "single_precision_inside", "svm_decision_atol", "tolerance_for", "verify", "verify_export"]

#: Default tolerances per precision the graph computes in (labels: exact). ``trees``: scikit-learn's trees in a
#: double graph (double thresholds and leaves, ``_exact_trees``), whose tree operators round only their scores to
#: float32: one float32 unit (eps32, relative and absolute).
_EPS32 = float(np.finfo(np.float32).eps)
TOLERANCE = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-9, "atol": 1e-10},
             "trees": {"rtol": _EPS32, "atol": _EPS32}}


@dataclass(frozen=True)
class Looser:
    """A documented, measured reason for a wider tolerance than :data:`TOLERANCE`."""

    classes: tuple[str, ...]
    precision: str
    tolerance: dict[str, float]
    reason: str


LOOSER = (
    Looser(("GaussianNB", "MultinomialNB", "BernoulliNB", "ComplementNB", "CategoricalNB"), "float32",
           {"rtol": 1e-4, "atol": 1e-4},
           "float32 joint log-likelihoods reach |jll| ~ 1e3 on digits (ulp ~ 6e-5); that absolute error "
           "becomes the relative error of exp(jll - logsumexp(jll))"),
    Looser(("BernoulliNB",), "float64", {"rtol": 1e-6, "atol": 1e-8},
           "skl2onnx computes log(1.000000001 - p) instead of log(1 - p) to avoid log(0)"),
)


#: The output names of a graph with ZipMap (``options={"zipmap": True}``).
_ZIPMAP_NAMES = {"output_label": "label", "output_probability": "probabilities"}


def single_precision_inside(onx: onnx.ModelProto) -> bool:
    """A double graph that still computes in float32 somewhere (Cast to float, float attributes, outputs)."""
    float_attrs = (onnx.AttributeProto.FLOAT, onnx.AttributeProto.FLOATS)
    for node in onx.graph.node:
        if node.op_type in ("TreeEnsembleClassifier", "TreeEnsembleRegressor"):
            return True  # their scores are float32 whatever their attributes (ai.onnx.ml opset 3)
        if node.op_type == "Cast" and any(a.name == "to" and a.i == onnx.TensorProto.FLOAT for a in node.attribute):
            return True
        if node.domain == "ai.onnx.ml" and any(a.type in float_attrs for a in node.attribute):
            return True
    return any(o.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for o in onx.graph.output)


def tolerance_for(model: Any, onx: onnx.ModelProto, float32: bool) -> dict[str, float]:
    """The tolerance a faithful graph meets: by its precision, widened by :data:`LOOSER` where measured."""
    precision = "float32" if float32 or single_precision_inside(onx) else "float64"
    parts = list(fitted_parts(model))
    if precision == "float32" and not float32 and exact_trees(parts) and not any(map(is_booster, parts)):
        precision = "trees"
    names = {type(e).__name__ for e in parts}
    looser = next((lo for lo in LOOSER if lo.precision == precision and names & set(lo.classes)), None)
    return dict(looser.tolerance if looser is not None else TOLERANCE[precision])


def float32_split_flips(model: Any, X: np.ndarray) -> np.ndarray:
    """Rows on which a float32 graph's rounded thresholds send a value the other way.

    scikit-learn's trees compare float32 inputs with float64 thresholds, its histogram
    GBDT float64 inputs with float64 thresholds; ONNX's TreeEnsemble (ai.onnx.ml opset 3)
    compares float32 values with float32 thresholds. A value between a threshold and its
    float32 rounding takes the other branch. Only trees reading the model's input are checked.
    """
    rows = np.zeros(len(X), dtype=bool)
    X = np.asarray(X, dtype=np.float64)
    for est in _input_trees(model):
        splits = _splits(est)
        if splits is None:
            continue
        features, thresholds, float64_input = splits
        x = X[:, features] if float64_input else X[:, features].astype(np.float32).astype(np.float64)
        flips = (x <= thresholds) != (x.astype(np.float32) <= thresholds.astype(np.float32))
        rows |= (flips & ~np.isnan(x)).any(axis=1)
    return rows


def _input_trees(model: Any) -> list[Any]:
    """The model itself or a search's best estimator, and its tree members (not a Pipeline's later steps)."""
    while hasattr(model, "best_estimator_"):
        model = model.best_estimator_
    members = getattr(model, "estimators_", [])
    members = list(np.ravel(np.asarray(members, dtype=object))) if isinstance(members, (list, np.ndarray)) else []
    return [model, *members]


def _splits(est: Any) -> tuple[np.ndarray, np.ndarray, bool] | None:
    if hasattr(est, "_predictors"):
        nodes = [p.nodes[~p.nodes["is_leaf"].astype(bool)] for iteration in est._predictors for p in iteration]
        if not nodes:
            return None
        merged = np.concatenate(nodes)
        return merged["feature_idx"].astype(np.intp), merged["num_threshold"], True
    tree = getattr(est, "tree_", None)
    if tree is None or not hasattr(tree, "feature"):
        return None
    inner = tree.feature >= 0
    return tree.feature[inner], tree.threshold[inner], False


def knn_ties(model: Any, X: np.ndarray, rtol: float) -> np.ndarray:
    """Rows whose k-th and (k+1)-th neighbours are equally far (within ``rtol``)."""
    est = final_step(model)
    if not type(est).__name__.startswith("KNeighbors") or est.n_neighbors >= est.n_samples_fit_:
        return np.zeros(len(X), dtype=bool)
    if est is not model and hasattr(model, "steps"):  # the neighbours of the transformed rows
        X = model[:-1].transform(X)
    dist, _ = est.kneighbors(X, n_neighbors=est.n_neighbors + 1)
    return np.isclose(dist[:, -2], dist[:, -1], rtol=rtol, atol=0)


def explained_rows(model: Any, X: Any, float32: bool) -> np.ndarray:
    """Rows whose differences are explained (KNN ties; float32 HGB split flips)."""
    dense = _numeric(X)
    if dense is None:
        return np.zeros(_n_rows(X), dtype=bool)
    rows = knn_ties(model, dense, rtol=1e-6 if float32 else 1e-12)
    if float32:
        rows |= float32_split_flips(model, dense)
    return rows


def svm_decision_atol(model: Any, X: np.ndarray, float32: bool = True) -> np.ndarray | None:
    """Per-row error bound of an SVM decision value: 8 eps * sum_i |alpha_i K(x, sv_i)|.

    ``eps`` is float32's where ONNX Runtime sums float32 terms, float64's for a double graph:
    its sum runs in another order than libsvm's, and large kernel terms that cancel (a
    degree-5 polynomial kernel with C=100) leave a difference of a few eps of their sum.
    """
    from sklearn.metrics.pairwise import pairwise_kernels

    est = final_step(model)
    if type(est).__name__ not in ("SVC", "NuSVC") or hasattr(est, "predict_proba") or est is not model:
        return None  # probabilities are checked at the usual tolerance; a pipeline's SVM sees other rows
    params = {"gamma": est._gamma, "degree": est.degree, "coef0": est.coef0}
    K = pairwise_kernels(X, est.support_vectors_, metric=est.kernel, filter_params=True, **params)
    eps = np.finfo(np.float32 if float32 else np.float64).eps
    return 8 * eps * (np.abs(K) @ np.abs(est.dual_coef_).T).max(axis=1)


def answering(model: Any, name: str, raw_scores: bool = False) -> str:
    """The estimator's method that the graph output ``name`` answers (``raw_scores``: the converter option).

    ``score_samples`` (the option of skl2onnx's outlier detectors) answers ``score_samples``. Any
    other output (``variable``, ``GPmean``, ...) is a predictor's prediction, else a transformer's
    result: a model that both predicts and transforms (RFE) is exported for its predictions, as
    every predictor is, and a graph without an output for ``predict`` is refused (:func:`verify`).
    """
    if name == "label":
        return "predict"
    if name == "probabilities":
        proba = hasattr(model, "predict_proba") and not (raw_scores and hasattr(model, "decision_function"))
        return "predict_proba" if proba else "decision_function"
    if name == "scores":  # outlier detectors: decision values; KMeans: distances
        return "decision_function" if hasattr(model, "decision_function") else "transform"
    if name == "score_samples" and hasattr(model, name):  # the option of skl2onnx's outlier detectors
        return name
    return "predict" if hasattr(model, "predict") else "transform"


def reference(model: Any, name: str, X: Any, raw_scores: bool = False) -> np.ndarray:
    """What the estimator computes for the graph output ``name`` (``raw_scores``: the converter option)."""
    value = getattr(model, answering(model, name, raw_scores))(X)
    return value.toarray() if hasattr(value, "toarray") else np.asarray(value)


def _n_rows(X: Any) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _numeric(X: Any) -> np.ndarray | None:
    values = X.toarray() if hasattr(X, "toarray") else X.to_numpy() if hasattr(X, "to_numpy") else np.asarray(X)
    return values.astype(np.float64) if values.ndim == 2 and values.dtype.kind in "fiub" else None


def _labels(expected: np.ndarray, actual: np.ndarray, explained: np.ndarray) -> dict[str, Any]:
    if expected.dtype.kind == "b":
        expected = expected.astype(actual.dtype)
    elif expected.dtype.kind in "USO" or actual.dtype.kind in "USO":
        expected, actual = expected.astype(str), actual.astype(str)
    if expected.size != actual.size:
        return {"differing_rows": len(expected), "shape": [list(actual.shape), list(expected.shape)]}
    differ = (expected.reshape(len(expected), -1) != actual.reshape(len(expected), -1)).any(axis=1)
    return {"differing_rows": int((differ & ~explained).sum()), "explained_rows": int((differ & explained).sum())}


def _values(expected: np.ndarray, actual: np.ndarray, tol: Mapping[str, float], explained: np.ndarray,
            row_atol: np.ndarray | None) -> dict[str, Any]:
    if expected.ndim == 3 and expected.shape == actual.shape and expected.shape[1] == len(explained):
        # one probability matrix per output (MultiOutputClassifier): rows first
        expected, actual = expected.swapaxes(0, 1), actual.swapaxes(0, 1)
    if actual.shape != expected.shape:
        if expected.ndim == 1 and actual.shape == (len(expected), 2) and np.array_equal(actual[:, 1], -actual[:, 0]):
            # binary decision values: skl2onnx outputs [d, -d] (SVC) or [-d, d] (raw scores)
            gaps = [np.abs(actual[:, i] - expected).max(initial=0) for i in (0, 1)]
            actual = actual[:, int(gaps[1] < gaps[0])]
        elif actual.size == expected.size:
            actual = actual.reshape(expected.shape)
        else:
            return {"differing_rows": len(expected), "shape": [list(actual.shape), list(expected.shape)]}
    keep = ~explained
    a, e = actual[keep].astype(np.float64), expected[keep].astype(actual.dtype).astype(np.float64)
    atol = tol["atol"] if row_atol is None else np.maximum(tol["atol"], row_atol[keep]).reshape(-1, *[1] * (e.ndim - 1))
    both_missing = np.isnan(a) & np.isnan(e)  # a missing value passed through, as the estimator passes it
    diff = np.where(both_missing, 0.0, np.abs(a - e))
    bad = ~((diff <= tol["rtol"] * np.abs(e) + atol) | both_missing | (a == e))
    finite = np.where(np.isfinite(diff), diff, np.inf) if diff.size else diff
    return {"max_abs": float(finite.max()) if finite.size else 0.0,
            "differing_rows": int(bad.reshape(len(e), -1).any(axis=1).sum()) if e.size else 0}


def _distances(expected: np.ndarray, actual: np.ndarray, X: np.ndarray, tol: Mapping[str, float]) -> dict[str, Any]:
    """KMeans distances, compared squared with an absolute bound of 4 eps32 max |x|^2."""
    scale = float(np.max(np.sum(np.square(X), axis=1))) if len(X) else 0.0
    atol = max(tol["atol"], float(4 * np.finfo(np.float32).eps * scale))
    squared = np.square(actual.astype(np.float64))
    if actual.shape == expected.shape:  # sqrt of a difference that rounding made negative: a distance of ~0
        squared[np.isnan(squared) & (np.square(expected) <= atol)] = 0.0
    got = _values(np.square(expected.astype(np.float64)), squared,
                  {"rtol": tol["rtol"], "atol": atol}, np.zeros(len(X), dtype=bool), None)
    got["max_abs"] = float(np.max(np.abs(actual.astype(np.float64) - expected))) if expected.size else 0.0
    return got


def _session(onx: onnx.ModelProto, name: str) -> Any:
    import onnxruntime as ort

    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4
    try:
        return ort.InferenceSession(onx.SerializeToString(), quiet, providers=["CPUExecutionProvider"])
    except Exception as exc:
        text = str(exc).strip()
        missing = ("not a registered function/op", "could not find an implementation", "no kernel")
        if isinstance(exc, ort.capi.onnxruntime_pybind11_state.NotImplemented) or any(
                m in text.lower() for m in missing):
            raise UnsupportedExportError(
                f"cannot export {name} to ONNX: ONNX Runtime {ort.__version__} cannot run the graph skl2onnx "
                f"produced ({text.splitlines()[0]})") from exc
        return None  # e.g. a locale missing on this machine: not a property of the graph


def _described(source: str, X: Any, rows: Any) -> str:
    """Which rows were probed, for a message."""
    if source == "sample+synthesized":
        return f"the sample's {_n_rows(X)} rows and {_n_rows(rows) - _n_rows(X)} rows made around them"
    return "the sample rows" if source == "sample" else "rows synthesized from the fitted state"


def _tolerance_given(tolerance: float | Mapping[str, float] | None) -> dict[str, float] | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, Mapping):
        unknown = set(tolerance) - {"rtol", "atol", "labels"}
        if unknown:
            raise ValueError(f"tolerance keys are 'rtol', 'atol' and 'labels', got {sorted(unknown)}")
        return {"rtol": 0.0, "atol": 0.0, "labels": 0.0, **{k: float(v) for k, v in tolerance.items()}}
    return {"rtol": float(tolerance), "atol": float(tolerance), "labels": 0.0}


def _ties(model: Any, X: Any, tol: Mapping[str, float], raw_scores: bool) -> np.ndarray:
    """Rows whose two best classes score within the tolerance: the label there is either one.

    A forest averaging 20 trees gives 0.35 / 0.3 / 0.35; summed in float32 in another order,
    the argmax may fall on the other class of the tie.
    """
    try:
        scores = reference(model, "probabilities", X, raw_scores)
    except Exception:  # no scores to tell ties by
        return np.zeros(_n_rows(X), dtype=bool)
    if scores.dtype.kind not in "fiub" or scores.ndim > 2 or len(scores) != _n_rows(X):
        return np.zeros(_n_rows(X), dtype=bool)  # one score matrix per output (MultiOutputClassifier)
    if scores.ndim == 1 or scores.shape[1] < 2:
        scores = np.abs(scores.reshape(len(scores), -1))[:, :1]  # a binary decision value: its distance to 0
        return (scores <= tol["atol"] + tol["rtol"]).ravel()
    top = np.sort(scores.astype(np.float64), axis=1)[:, -2:]
    return top[:, 1] - top[:, 0] <= 2 * (tol["atol"] + tol["rtol"] * np.abs(top[:, 1]))


def _array(value: Any) -> np.ndarray:
    """An output as an array; ZipMap's list of {class: probability} as a matrix in class order."""
    if isinstance(value, list) and value and isinstance(value[0], Mapping):
        return np.array([list(row.values()) for row in value])
    return np.asarray(value)


@dataclass(frozen=True)
class _Run:
    """What every output of one verification is compared with."""

    model: Any
    onx: onnx.ModelProto
    seen: Any  # the probe rows as the graph sees them
    dense: np.ndarray | None
    explained: np.ndarray
    tol: dict[str, float]
    given: dict[str, float] | None
    float32: bool
    raw_scores: bool


_Comparison = tuple[dict[str, Any], float]


def _compare_labels(run: _Run, expected: np.ndarray, actual: np.ndarray) -> _Comparison:
    got = _labels(expected, actual, run.explained | _ties(run.model, run.seen, run.tol, run.raw_scores))
    return got, (run.given or {}).get("labels", 0.0) * len(expected)


def _compare_distances(run: _Run, expected: np.ndarray, actual: np.ndarray) -> _Comparison:
    assert run.dense is not None  # chosen only for dense rows (_comparison)
    return _distances(expected, actual, run.dense, run.tol), 0


def _compare_values(run: _Run, expected: np.ndarray, actual: np.ndarray, kind: str) -> _Comparison:
    row_atol = svm_decision_atol(run.model, run.dense, run.float32 or single_precision_inside(run.onx)) if (
        kind == "probabilities" and run.dense is not None) else None
    # a model fitted on float32 data (MLP) predicts in float32: a double graph cannot be tighter
    out_tol = tolerance_for(run.model, run.onx, True) if expected.dtype == np.float32 and run.given is None \
        else run.tol
    return _values(expected, actual, out_tol, run.explained, row_atol), 0


def _compare(run: _Run, kind: str, expected: np.ndarray, actual: np.ndarray) -> _Comparison:
    """The differences of one output (``kind`` as :func:`reference` names it) and how many rows may differ."""
    if kind == "label":
        return _compare_labels(run, expected, actual)
    if kind == "scores" and run.float32 and run.dense is not None \
            and hasattr(final_step(run.model), "cluster_centers_"):
        return _compare_distances(run, expected, actual)
    return _compare_values(run, expected, actual, kind)


def _failure(name: str, got: Mapping[str, Any], rows: int) -> str:
    return (f"{name}: {got['differing_rows']} of {rows} rows differ"
            + (f", max |difference| {got['max_abs']:.3g}" if "max_abs" in got else "")
            + (f", shape {got['shape'][0]} vs {got['shape'][1]}" if "shape" in got else ""))


def _compare_outputs(run: _Run, session: Any, outputs: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """Each output's differences, by output name, and the outputs that differ beyond what is allowed."""
    compared: dict[str, Any] = {}
    failures = []
    for out, value in zip(session.get_outputs(), outputs, strict=True):
        actual = _array(value)
        kind = _ZIPMAP_NAMES.get(out.name, out.name)
        try:
            expected = reference(run.model, kind, run.seen, run.raw_scores)
        except Exception:  # no method of the estimator matches this output: nothing to compare with
            continue
        got, allowed = _compare(run, kind, expected, actual)
        compared[out.name] = got
        if got["differing_rows"] > allowed:
            failures.append(_failure(out.name, got, len(expected)))
    return compared, failures


def _unanswered_predict(model: Any, session: Any, raw_scores: bool) -> list[str]:
    """A graph of other values than the model's predictions (a selector's columns) is not its export."""
    kinds = [_ZIPMAP_NAMES.get(out.name, out.name) for out in session.get_outputs()]
    if hasattr(model, "predict") and "predict" not in {answering(model, kind, raw_scores) for kind in kinds}:
        return [f"no output answers predict (the graph's outputs: {', '.join(kinds)})"]
    return []


def _unverifiable(session: Any, rows: Any) -> str | None:
    """Why the graph cannot be run on probe rows here, if it cannot."""
    if session is None:
        return "ONNX Runtime cannot open the graph on this machine"
    if rows is None or _n_rows(rows) == 0:
        return "no sample X was given and no numeric rows can be made from the fitted state"
    return None


def _outputs(session: Any, onx: onnx.ModelProto, seen: Any, name: str, described: str) -> tuple[Any, str | None]:
    """The graph's outputs on ``seen``, or why ONNX Runtime cannot run it on this machine."""
    try:
        return session.run(None, input_feed(onx, seen)), None
    except Exception as exc:
        if "locale" in str(exc).lower():
            return None, f"ONNX Runtime cannot run the graph here: {exc}"
        raise ExportParityError(f"the ONNX graph of {name} fails in ONNX Runtime on {described}: "
                                f"{exc}. Pass verify=False to write it anyway.") from exc


def _tolerance(model: Any, onx: onnx.ModelProto, float32: bool, given: dict[str, float] | None) -> dict[str, float]:
    """The tolerance for the precision the graph computes in, widened to the caller's."""
    tol = tolerance_for(model, onx, float32)
    if given is not None:
        tol = {"rtol": max(tol["rtol"], given["rtol"]), "atol": max(tol["atol"], given["atol"])}
    return tol


def _disagreement(name: str, described: str, failures: list[str], tol: Mapping[str, float], advice: str | None,
                  outputs: dict[str, Any]) -> ExportParityError:
    return ExportParityError(
        f"the ONNX graph of {name} disagrees with the estimator on {described} "
        f"({'; '.join(failures)}; "
        f"tolerance rtol={tol['rtol']:g}, atol={tol['atol']:g}, labels exact). {advice or ''}"
        f"{' Otherwise, e' if advice else 'E'}xport with dtype=numpy.float64 where float32 cannot hold the "
        "values, pass an explicit tolerance= if the difference is acceptable to you, or verify=False to write "
        "the graph unverified.", outputs)


def verify(onx: onnx.ModelProto, model: Any, X: Any, tolerance: float | Mapping[str, float] | None = None,
           raw_scores: bool = False, advice: str | None = None) -> dict[str, Any]:
    """Run ``onx`` in ONNX Runtime on probe rows and compare with ``model``.

    Parameters
    ----------
    onx : onnx.ModelProto
        The converted graph.
    model : estimator
        The fitted estimator it was converted from.
    X : array-like or DataFrame or None
        The caller's sample; rows are synthesized from the fitted state without one.
    tolerance : float or dict, optional
        The caller's tolerance: a float is both ``rtol`` and ``atol``; a dict may give
        ``rtol``, ``atol`` and ``labels`` (the fraction of labels allowed to differ).
    raw_scores : bool, default=False
        The caller asked skl2onnx for raw scores: ``probabilities`` is ``decision_function``.
    advice : str, optional
        What to do, when the cause of a difference is known (float transforms before trees).

    Returns
    -------
    dict
        The parity record stored as ``aprender.parity``: ``verified``, ``rows``, ``source``
        and per output ``max_abs`` and ``differing_rows`` with the tolerance applied.

    Raises
    ------
    ExportParityError
        If an output differs beyond the tolerance.
    UnsupportedExportError
        If ONNX Runtime cannot load the graph (an operator it has no kernel for).
    """
    name = type(model).__name__
    given = _tolerance_given(tolerance)
    session = _session(onx, name)
    rows, source = probe(model, X)
    why = _unverifiable(session, rows)
    if why is not None:
        return {"verified": False, "reason": why}
    described = _described(source, X, rows)
    float32 = any(i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for i in onx.graph.input)
    seen = rounded_like_graph(rows, float32)
    outputs, why = _outputs(session, onx, seen, name, described)
    if why is not None:
        return {"verified": False, "reason": why}
    tol = _tolerance(model, onx, float32, given)
    explained = explained_rows(model, seen, float32)
    run = _Run(model, onx, seen, _numeric(seen), explained, tol, given, float32, raw_scores)
    record: dict[str, Any] = {"verified": True, "source": source, "rows": _n_rows(seen), **tol, "outputs": {}}
    if X is not None:
        record["sample_rows"] = _n_rows(X)
    record["outputs"], failures = _compare_outputs(run, session, outputs)
    failures += _unanswered_predict(model, session, raw_scores)
    if failures:
        raise _disagreement(name, described, failures, tol, advice, record["outputs"])
    return record


def parity_json(record: Mapping[str, Any]) -> str:
    """The ``aprender.parity`` metadata value."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def _asks_raw_scores(options: Any) -> bool:
    if isinstance(options, Mapping):
        return any(_asks_raw_scores(v) if isinstance(v, Mapping) else str(k).endswith("raw_scores") and bool(v)
                   for k, v in options.items())
    return False


def verify_export(onx: onnx.ModelProto, model: Any, X: Any, tolerance: float | Mapping[str, float] | None,
                  options: Any, parts: list[Any]) -> dict[str, Any]:
    """:func:`verify` with the caller's converter options read for what changes the outputs."""
    from aprender.format.onnx._precision import exact_remedy, float_before_trees

    floats = float_before_trees(onx, parts) if any(
        i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for i in onx.graph.input) else []
    advice = (f"The graph computes {', '.join(floats)} in float32 before its trees, where scikit-learn computes "
              f"in float64: a value near a split goes the other way. {exact_remedy(parts)}") if floats else None
    return verify(onx, model, X, tolerance, raw_scores=_asks_raw_scores(options), advice=advice)
