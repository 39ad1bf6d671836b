"""Schema of PCA: component shapes against the number of features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import decomposition as sk

from aprender import decomposition as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features
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


SCHEMAS = [
    ((ap.PCA, sk.PCA), Spec(ModelType.PCA, quantizable=("components_",), validate=check_pca)),
]
