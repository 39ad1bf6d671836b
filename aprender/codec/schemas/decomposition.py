"""Schemas of PCA, NMF and LDA: component shapes against the number of features.

NMF's coordinate-descent solver (``_cdnmf_fast``) and LDA's E-step (``_online_lda_fast``)
run in Cython on arrays sized by the components; they must agree with each other, with
the stored component count and with ``n_features_in_``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import decomposition as sk

from aprender import decomposition as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import choice, integer

_SOLVERS = ("full", "covariance_eigh", "arpack", "randomized")


def check_pca(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """components_ is (n_components_, n_features); mean_ and the spectra match it."""
    n = n_features(attrs, path)
    k = integer(attrs, "n_components_", path, high=n)
    components = array(attrs, "components_", path, ndim=(2,), shape={0: k})
    if components.shape[1] != n:
        raise fail(path, f"'components_' has {components.shape[1]} columns but n_features_in_ is {n}")
    array(attrs, "mean_", path, ndim=(1,), shape={0: n})
    for name in ("explained_variance_", "explained_variance_ratio_", "singular_values_"):
        array(attrs, name, path, ndim=(1,), shape={0: k})
    integer(attrs, "n_samples_", path)
    choice(attrs, "_fit_svd_solver", path, _SOLVERS)


def _components(attrs: Mapping[str, Any], path: str, rows: int | None = None) -> tuple[int, int]:
    n = n_features(attrs, path)
    components = array(attrs, "components_", path, ndim=(2,), shape={1: n} if rows is None else {0: rows, 1: n})
    return components.shape


def check_nmf(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """components_ is (n_components_, n_features_in_), and the solver's component count is the same."""
    check_generic(params, attrs, path)
    shape = _components(attrs, path)
    for name in ("n_components_", "_n_components"):
        integer(attrs, name, path, low=shape[0], high=shape[0])
    for name in ("_components_numerator", "_components_denominator"):  # MiniBatchNMF's partial_fit state
        if attrs.get(name) is not None:
            array(attrs, name, path, ndim=(2,), shape=dict(enumerate(shape)))


def check_lda(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """components_ and exp_dirichlet_component_ are both (n_components, n_features_in_)."""
    check_generic(params, attrs, path)
    k = params.get("n_components")
    shape = _components(attrs, path, k if type(k) is int else None)
    array(attrs, "exp_dirichlet_component_", path, ndim=(2,), shape=dict(enumerate(shape)))


SCHEMAS = [
    ((ap.PCA, sk.PCA), Spec(ModelType.PCA, quantizable=("components_",), validate=check_pca)),
    ((sk.NMF,), Spec(validate=check_nmf)),
    ((sk.MiniBatchNMF,), Spec(validate=check_nmf)),
    ((sk.LatentDirichletAllocation,), Spec(validate=check_lda)),
]
