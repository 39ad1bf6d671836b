"""Every scikit-learn estimator either exports to ONNX and matches ONNX Runtime, or is refused.

The instances are the ones tests/test_all_estimators.py round-trips (scikit-learn's own
instance generator, fitted once per process on small data, tests/support/sklearn_instances.py).
For each one, ``to_onnx`` either

- raises :class:`UnsupportedExportError`: the class has no skl2onnx converter
  (:func:`no_converter`, derived from skl2onnx's registry), or it is in :data:`REFUSED`
  with the reason (docs/onnx.md lists both); or
- returns a model that passes ``onnx.checker`` and whose ONNX Runtime outputs match
  scikit-learn on the same rows: labels exactly, numbers within :data:`RTOL` of the
  output's magnitude (see :func:`assert_close`), and whose metadata is strict JSON
  (NaN and infinite hyperparameters: KNNImputer, OrdinalEncoder, RANSACRegressor, ...).

The aprender namesake of each class (``aprender.linear_model.Ridge``...), given the same
fitted state, must be refused alike or convert to the same graph.

Nothing is skipped: an instance that neither matches nor raises fails.
"""

from __future__ import annotations

import importlib
import json
import warnings
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import scipy.sparse as sp
import sklearn_instances as si

from aprender.exceptions import UnsupportedExportError
from aprender.format.onnx import input_feed, to_onnx
from aprender.format.onnx._converters import sync
from aprender.format.onnx._props import JSON_KEYS, PREFIX

#: Instances whose class skl2onnx converts but which aprender refuses to export, with the
#: reason: (a regex the UnsupportedExportError must match, why). docs/onnx.md has the same table.
REFUSED: dict[str, tuple[str, str]] = {
    "KNNImputer": ("KNNImputer graph computes", "skl2onnx's graph takes other donors in float32 (measured 1.2e5 off) "
                   "or fails in ONNX Runtime"),
    "DictVectorizer": ("invalid ONNX graph.*DictVectorizer",
                       "skl2onnx's graph for dict input fails ONNX shape inference (map inputs)"),
    "FeatureHasher": ("only supports input_type='string'", "skl2onnx converts string input only, not dicts"),
    "GaussianProcessClassifier": ("Only binary classification",
                                  "skl2onnx converts binary GaussianProcessClassifier only (3 classes here)"),
    "GenericUnivariateSelect": ("did not select any feature", "selects no feature on this data: no graph to build"),
    "SelectFdr": ("did not select any feature", "selects no feature on this data: no graph to build"),
    "SelectFpr": ("did not select any feature", "selects no feature on this data: no graph to build"),
    "SelectFwe": ("did not select any feature", "selects no feature on this data: no graph to build"),
    "SelectPercentile": ("did not select any feature", "selects no feature on this data (10% of 5 features)"),
    "KBinsDiscretizer": ("gives a sparse matrix", "encode='onehot' gives a sparse matrix; ONNX is dense"),
    "KNeighborsClassifier-1": ("metric='precomputed'", "a precomputed distance matrix has no ONNX equivalent"),
    "KNeighborsRegressor-1": ("metric='precomputed'", "a precomputed distance matrix has no ONNX equivalent"),
    "SVC-1": ("kernel='precomputed'", "a precomputed kernel matrix has no ONNX equivalent"),
    "SVR-1": ("kernel='precomputed'", "a precomputed kernel matrix has no ONNX equivalent"),
    "LocalOutlierFactor": ("is novelty is True", "with novelty=False it does not predict on new rows"),
    "NearestNeighbors": ("radius and n_neighbors at the same time",
                         "skl2onnx needs either a radius or a neighbour count, the defaults set both"),
    "OneHotEncoder": ("is not an int64", "skl2onnx encodes string and int64 categories only (float data here)"),
    "OneVsOneClassifier": ("invalid ONNX graph.*ArgMax", "skl2onnx's graph fails ONNX shape inference"),
    "PLSRegression": ("invalid ONNX graph.*Add", "skl2onnx's graph fails ONNX shape inference"),
    "RadiusNeighborsClassifier": ("index is out of range",
                                  "ONNX Runtime rejects skl2onnx's graph for any query with a row outside the radius"),
    "RadiusNeighborsRegressor": ("index is out of range",
                                 "ONNX Runtime rejects skl2onnx's graph for any query with a row outside the radius"),
    "RandomTreesEmbedding": ("sparse outputs", "its one-hot leaf output is a sparse matrix; ONNX is dense"),
    "VotingClassifier": ("flatten_transform==True",
                         "skl2onnx does not convert voting='hard' with flatten_transform=True (the default)"),
}

#: ONNX graphs compute in float32 (eps = 1.19e-7): the input is rounded to float32 and every
#: operation rounds again, so an output carries an error proportional to its magnitude, not to
#: each element (a centred or min-max-scaled value near 0 keeps the absolute error of its
#: neighbours). Measured worst on these instances: ~6e-7 of the output's largest |value|
#: (OneClassSVM's decision values; naive Bayes 4e-7 to 6e-7; all others below 3.5e-7).
#: 1e-5 leaves a ~15x margin for other CPUs' vectorized kernels; a conversion error (a wrong
#: threshold, class order, term) is >= 1e-3.
RTOL = 1e-5

#: ONNX Runtime's StringNormalizer defaults to the en_US.UTF-8 locale, which minimal Linux
#: images lack; C.UTF-8 is always there (docs/onnx.md, "Options").
TEXT_OPTIONS = {"locale": "C.UTF-8"}


def no_converter(est: Any) -> bool:
    """skl2onnx has no converter for ``est``'s class (refused with "no ONNX converter")."""
    from skl2onnx._supported_operators import sklearn_operator_name_map

    sync()  # aprender's own converters (FixedThresholdClassifier) join skl2onnx's registry here

    return type(est) not in sklearn_operator_name_map


def namesake(est: Any) -> Any:
    """``est``'s aprender namesake (``aprender.<package>.<Class>``) holding the same fitted state."""
    module = type(est).__module__.split(".")
    for path in (".".join(["aprender", *module[1:]]), f"aprender.{module[1]}"):
        try:
            cls = getattr(importlib.import_module(path), type(est).__name__)
            break
        except (ImportError, AttributeError):
            continue
    else:
        raise AssertionError(f"aprender has no namesake of {type(est).__name__}")
    twin = cls.__new__(cls)
    twin.__dict__.update(vars(est))
    return twin


def _sample(rows: Any) -> Any:
    """The ``X`` to export with: None for numbers (n_features_in_ says it all), else the rows."""
    numeric = isinstance(rows, np.ndarray) and rows.ndim == 2 and rows.dtype.kind == "f"
    return None if numeric else rows


def _options(est: Any) -> dict[str, str] | None:
    return dict(TEXT_OPTIONS) if type(est).__name__ in ("CountVectorizer", "TfidfVectorizer") else None


def _export(est: Any, rows: Any) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(est, _sample(rows), options=_options(est))


def _dense(value: Any) -> np.ndarray:
    return value.toarray() if sp.issparse(value) else np.asarray(value)


def run(onx: onnx.ModelProto, rows: Any) -> dict[str, Any]:
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, input_feed(onx, rows)), strict=True))


def reference(est: Any, output: str, rows: Any) -> Any:
    """scikit-learn's value for an ONNX output, by the output's name."""
    if output == "label":
        method = "predict"
    elif output == "probabilities":  # classifiers without predict_proba put decision values there
        method = "predict_proba" if hasattr(est, "predict_proba") else "decision_function"
    elif output == "scores":  # outlier detectors: decision values; KMeans: distances
        method = "decision_function" if hasattr(est, "decision_function") else "transform"
    else:  # variable, union, GPmean, ...: a predictor's prediction or a transformer's result
        # (RFE also transforms and is exported for its predictions; StackingRegressor too)
        method = "predict" if hasattr(est, "predict") else "transform"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = getattr(est, method)(rows)
    return [_dense(v) for v in value] if isinstance(value, list) else _dense(value)


def assert_close(name: str, expected: np.ndarray, actual: np.ndarray, exact: bool) -> None:
    """Labels and integers exactly; floats within RTOL of the output's magnitude."""
    assert actual.size == expected.size, f"{name}: shape {actual.shape}, scikit-learn {expected.shape}"
    actual = actual.reshape(expected.shape)  # [N, 1] for [N], ...
    if exact or expected.dtype.kind in "iubOUS":
        np.testing.assert_array_equal(actual.astype(expected.dtype), expected, err_msg=name)
        return
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale, err_msg=name)


def assert_strict_json_metadata(onx: onnx.ModelProto) -> None:
    """aprender's JSON metadata parses as strict JSON: NaN/inf hyperparameters are codec float nodes."""
    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON constant {token} in the metadata")

    props = {p.key: p.value for p in onx.metadata_props}
    for key in JSON_KEYS:
        if PREFIX + key in props:
            json.loads(props[PREFIX + key], parse_constant=reject)


IDS = sorted(si.instances())


@pytest.mark.parametrize("key", IDS)
def test_export_matches_onnx_runtime_or_is_refused(key: str) -> None:
    est, rows = si.fitted(key)
    twin = namesake(est)
    if key in REFUSED or no_converter(est):
        match = REFUSED[key][0] if key in REFUSED else "no ONNX converter for "
        for model in (est, twin):
            with pytest.raises(UnsupportedExportError, match=match):
                _export(model, rows)
        return
    onx = _export(est, rows)
    onnx.checker.check_model(onx, full_check=True)
    assert_strict_json_metadata(onx)
    outputs = run(onx, rows)
    # the aprender class gives the same graph, so the same outputs to the bit (skl2onnx knows
    # it under its parent's alias; node names differ: skl2onnx numbers them per process)
    twin_outputs = run(_export(twin, rows), rows)
    assert twin_outputs.keys() == outputs.keys()
    for name, value in outputs.items():
        assert si.same(list(twin_outputs[name]) if isinstance(value, list) else twin_outputs[name], value), name
    for name, actual in outputs.items():
        expected = reference(est, name, rows)
        if isinstance(expected, list):  # multi-output classifiers: one probability tensor per output
            assert isinstance(actual, list) and len(actual) == len(expected), name
            for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
                assert_close(f"{name}[{i}]", e, np.asarray(a), exact=False)
        else:
            assert_close(name, expected, np.asarray(actual), exact=name == "label")


def test_refused_list_is_current() -> None:
    """Every REFUSED entry is an instance whose class skl2onnx converts (else it is derived)."""
    assert set(REFUSED) <= set(IDS)
    stale = [key for key in REFUSED if no_converter(si.instances()[key])]
    assert not stale, f"skl2onnx has no converter for {stale}: drop them from REFUSED"


def test_most_convertible_instances_export() -> None:
    convertible = [key for key in IDS if not no_converter(si.instances()[key])]
    exported = len(convertible) - len(REFUSED)
    assert exported >= 137 and len(REFUSED) <= 23, (exported, len(REFUSED))
