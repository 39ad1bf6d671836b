"""Schemas of the support vector machines.

libsvm reads the fitted arrays through raw pointers: ``support_vectors_`` rows by
``len(support_)``, ``dual_coef_`` by ``(n_class - 1) * n_SV``, the intercepts and the
Platt pairs by ``n_class * (n_class - 1) / 2``, and precomputed kernels index the
input row with ``support_``. An inconsistent file could make it read out of bounds,
so every one of these sizes is checked against the others before the estimator is
built. LinearSVC/LinearSVR are plain linear models and share the linear checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn import svm as sk

from aprender import svm as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
from aprender.codec._migrations import running_at_least
from aprender.codec.schemas._model_checks import class_labels, integer, is_fitted, real
from aprender.codec.schemas.linear import LINEAR_ALIASES, check_classifier, check_linear

#: scikit-learn 1.9 reads ``_effective_probability`` (files from older versions get it from
#: codec/_migrations.py); older versions read the ``probability`` parameter instead.
_EFFECTIVE_PROBABILITY = running_at_least("1.9")


def _check_shape_fit(attrs: Mapping[str, Any], n: int, path: str) -> int:
    shape = attrs.get("shape_fit_")
    if type(shape) is not tuple or len(shape) != 2 or not all(type(d) is int and d >= 0 for d in shape):
        raise fail(path, f"'shape_fit_' must be a pair of non-negative ints, found {str(shape)[:80]}")
    if shape[1] != n:
        raise fail(path, f"'shape_fit_' {shape} does not match n_features_in_ {n}")
    return shape[0]


def _libsvm_array(attrs: Mapping[str, Any], name: str, path: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    value = attrs.get(name)
    if not isinstance(value, np.ndarray) or value.dtype != dtype or value.shape != shape:
        found = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
        raise fail(path, f"'{name}' must be a {np.dtype(dtype).name} array of shape {list(shape)}, found {found}")
    if not value.flags.c_contiguous:
        raise fail(path, f"'{name}' must be C-ordered for libsvm")
    return value


def _check_sparse(attrs: Mapping[str, Any], name: str, path: str, shape: tuple[int, int]) -> Any:
    value = attrs.get(name)
    if not sp.issparse(value) or value.format != "csr" or value.shape != shape:
        found = f"{value.format} {value.shape}" if sp.issparse(value) else type(value).__name__
        raise fail(path, f"'{name}' must be a CSR matrix of shape {list(shape)} for a sparse fit, found {found}")
    if value.dtype != np.float64 or value.indices.dtype != np.int32 or value.indptr.dtype != np.int32:
        raise fail(path, f"'{name}' must hold float64 values with int32 indices")
    if not value.has_sorted_indices:
        raise fail(path, f"'{name}' must have sorted column indices")
    return value


def _check_support_vectors(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, n: int, n_sv: int) -> None:
    sparse = attrs.get("_sparse")
    if type(sparse) is not bool:
        raise fail(path, f"'_sparse' must be a bool, found {type(sparse).__name__}")
    if sparse:
        _check_sparse(attrs, "support_vectors_", path, (n_sv, n))
        return
    if params.get("kernel") == "precomputed":
        # libsvm then ignores the vectors and indexes each input row with support_.
        _libsvm_array(attrs, "support_vectors_", path, (0, 0), np.float64)
    else:
        _libsvm_array(attrs, "support_vectors_", path, (n_sv, n), np.float64)


def _check_coefficients(attrs: Mapping[str, Any], path: str, n_class: int, n_sv: int) -> None:
    rows, pairs = n_class - 1, n_class * (n_class - 1) // 2
    for name in ("_dual_coef_", "dual_coef_"):
        if attrs.get("_sparse"):
            coef = _check_sparse(attrs, name, path, (rows, n_sv))
            if coef.nnz != rows * n_sv:
                raise fail(path, f"'{name}' must store all {rows * n_sv} coefficients, found {coef.nnz}")
        else:
            _libsvm_array(attrs, name, path, (rows, n_sv), np.float64)
    for name in ("_intercept_", "intercept_"):
        _libsvm_array(attrs, name, path, (pairs,), np.float64)
    probA = attrs.get("_probA")
    size = probA.shape[0] if isinstance(probA, np.ndarray) and probA.ndim == 1 else -1
    if size not in (0, pairs):
        raise fail(path, f"'_probA' must have shape [0] or [{pairs}]")
    _libsvm_array(attrs, "_probA", path, (size,), np.float64)
    _libsvm_array(attrs, "_probB", path, (size,), np.float64)
    effective = attrs.get("_effective_probability", None if _EFFECTIVE_PROBABILITY else False)
    if type(effective) is not bool or (effective and size == 0):
        raise fail(path, "'_effective_probability' must be a bool, and true only with Platt parameters")


def _check_libsvm(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, classifier: bool) -> None:
    n = n_features(attrs, path)
    n_train = _check_shape_fit(attrs, n, path)
    support = attrs.get("support_")
    if not isinstance(support, np.ndarray) or support.dtype != np.int32 or support.ndim != 1:
        raise fail(path, "'support_' must be a 1-d int32 array")
    n_sv = support.shape[0]
    if n_sv and (support.min() < 0 or support.max() >= n_train):
        raise fail(path, f"'support_' holds indices outside the {n_train} training samples")
    n_class = class_labels(attrs, path, minimum=2) if classifier else 2
    n_support = _libsvm_array(attrs, "_n_support", path, (n_class,), np.int32)
    if n_support.min() < 0 or (n_support.sum() if classifier else n_support[0]) != n_sv:
        raise fail(path, f"'_n_support' {n_support.tolist()} does not account for the {n_sv} support vectors")
    _check_support_vectors(params, attrs, path, n, n_sv)
    _check_coefficients(attrs, path, n_class, n_sv)
    if classifier:
        array(attrs, "class_weight_", path, ndim=(1,), shape={0: n_class})
    # A numeric ``gamma`` is stored as given (SVC(gamma=2) keeps the int 2), and libsvm
    # converts it to double, so any real number that is not a bool is fitted state.
    if not real(attrs.get("_gamma")):
        raise fail(path, "'_gamma' must be a real number")
    integer(attrs, "fit_status_", path)


def check_svc(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """libsvm classifier arrays agree with classes_, support_ and each other."""
    _check_libsvm(params, attrs, path, classifier=True)


def check_svr(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """libsvm regression arrays agree with support_ and each other."""
    _check_libsvm(params, attrs, path, classifier=False)


#: Arrays that sklearn's dense ``libsvm.predict_proba`` takes as non-const memoryviews.
_PROBA_BUFFERS = ("_dual_coef_", "_intercept_", "_probA", "_probB")


def unpack_svc(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Give predict_proba writable copies of the arrays it needs, when a memory map made them read-only.

    Cython rejects a read-only buffer for a non-const memoryview, so a model loaded with
    ``mmap=True`` could predict but not ``predict_proba``. Only a fitted Platt model
    (non-empty ``_probA``) reaches that call, and these arrays are small next to the
    support vectors, which stay mapped. The sparse entry point and every other libsvm
    call (predict, decision_function; all of SVR's) take const buffers.
    """
    if not is_fitted(attrs) or attrs["_sparse"] or attrs["_probA"].size == 0:
        return attrs
    return {**attrs, **{name: attrs[name].copy() for name in _PROBA_BUFFERS if not attrs[name].flags.writeable}}


def check_one_class_svm(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for SVR (libsvm's one-class model has the regression layout), and one ``offset_``."""
    check_svr(params, attrs, path)
    array(attrs, "offset_", path, ndim=(1,), shape={0: 1})


_SVC = Spec(ModelType.SVM, validate=check_svc, unpack=unpack_svc)
_SVR = Spec(ModelType.SVM, validate=check_svr)

SCHEMAS = [
    ((ap.SVC, sk.SVC), _SVC),
    ((ap.SVR, sk.SVR), _SVR),
    ((sk.NuSVC,), _SVC),
    ((sk.NuSVR,), _SVR),
    ((sk.OneClassSVM,), Spec(ModelType.SVM, validate=check_one_class_svm)),
    ((ap.LinearSVC, sk.LinearSVC), Spec(ModelType.SVM, LINEAR_ALIASES, quantizable=("coef_",),
                                        validate=check_classifier)),
    ((ap.LinearSVR, sk.LinearSVR), Spec(ModelType.SVM, LINEAR_ALIASES, quantizable=("coef_",),
                                        validate=check_linear)),
]
