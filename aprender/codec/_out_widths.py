"""A stored output width is the width of the fitted state it was derived from.

Many transformers store their output width as a plain int, ``_n_features_out``, beside the
arrays that decide it (KMeans' ``cluster_centers_`` rows, RBFSampler's ``random_weights_``
columns). scikit-learn reads the int, not the arrays, whenever it names the output:
``get_feature_names_out``, a pandas ``transform`` (``set_output``), a ColumnTransformer's
names. A 3 KB KMeans file claiming ``_n_features_out = 10**9`` loaded, and
``get_feature_names_out`` then built names for 28 s until a 2 GB limit stopped it (tens of GB
without one). So each class's stored width must equal what its fitted state gives
(:data:`OUTPUT_WIDTHS`); tests/test_inference_costs.py checks that every class whose fits store
one has a row, and that real fits agree with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview

__all__ = ["OUTPUT_WIDTHS", "STORED_WIDTH", "check_output_width"]

#: The fitted attribute that holds the output width.
STORED_WIDTH = "_n_features_out"


class Width(NamedTuple):
    """Where a class's output width comes from: ``says`` in words, ``of`` the width (None when absent)."""

    says: str
    of: Callable[[Mapping[str, Any], Mapping[str, Any]], int | None]


def _axis(name: str, axis: int) -> Width:
    def of(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
        shape = getattr(attrs.get(name), "shape", None)  # an array, or a sparse matrix (SparseRandomProjection)
        return int(shape[axis]) if isinstance(shape, tuple) and len(shape) == 2 else None

    return Width(f"{'rows' if axis == 0 else 'columns'} of `{name}`", of)


def _plain(name: str, says: str, source: str = "attrs") -> Width:
    def of(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
        value = (attrs if source == "attrs" else params).get(name)
        return int(value) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else None

    return Width(says, of)


def _unique_labels(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
    labels = attrs.get("labels_")
    return int(np.unique(labels).size) if isinstance(labels, np.ndarray) and labels.ndim == 1 else None


def _discriminant(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
    classes, n = attrs.get("classes_"), attrs.get("n_features_in_")
    if params.get("n_components") is not None:
        return _plain("n_components", "", "params").of(attrs, params)
    if not isinstance(classes, np.ndarray) or not isinstance(n, int):
        return None
    return min(len(classes) - 1, n)


def _encoded(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
    categories = getattr(attrs.get("one_hot_encoder_"), "categories_", None)
    return sum(len(c) for c in categories) if isinstance(categories, list) else None


_CENTERS = _axis("cluster_centers_", 0)
_COMPONENTS = _axis("components_", 0)
_EMBEDDING = _axis("embedding_", 1)
_ROTATIONS = _axis("x_rotations_", 1)
_WEIGHTS = _axis("random_weights_", 1)

#: Class (scikit-learn's key) -> where its stored output width comes from, for every class whose fits
#: store one.
OUTPUT_WIDTHS: dict[str, Width] = {
    "sklearn.cluster.Birch": _axis("subcluster_centers_", 0),
    "sklearn.cluster.BisectingKMeans": _CENTERS,
    "sklearn.cluster.FeatureAgglomeration": Width("distinct `labels_` (the pooled groups)", _unique_labels),
    "sklearn.cluster.KMeans": _CENTERS,
    "sklearn.cluster.MiniBatchKMeans": _CENTERS,
    "sklearn.cross_decomposition.CCA": _ROTATIONS,
    "sklearn.cross_decomposition.PLSCanonical": _ROTATIONS,
    "sklearn.cross_decomposition.PLSRegression": _ROTATIONS,
    "sklearn.cross_decomposition.PLSSVD": _axis("x_weights_", 1),
    "sklearn.discriminant_analysis.LinearDiscriminantAnalysis": Width(
        "`n_components`, or one less than the classes and at most `n_features_in_`", _discriminant),
    "sklearn.ensemble.RandomTreesEmbedding": Width("categories of `one_hot_encoder_`", _encoded),
    "sklearn.kernel_approximation.Nystroem": _COMPONENTS,
    "sklearn.kernel_approximation.PolynomialCountSketch": _plain("n_components", "`n_components`", "params"),
    "sklearn.kernel_approximation.RBFSampler": _WEIGHTS,
    "sklearn.kernel_approximation.SkewedChi2Sampler": _WEIGHTS,
    "sklearn.manifold.Isomap": _EMBEDDING,
    "sklearn.manifold.LocallyLinearEmbedding": _EMBEDDING,
    "sklearn.neighbors.KNeighborsTransformer": _plain("n_samples_fit_", "`n_samples_fit_` (one column per row)"),
    "sklearn.neighbors.RadiusNeighborsTransformer": _plain("n_samples_fit_", "`n_samples_fit_` (one column per row)"),
    "sklearn.neural_network.BernoulliRBM": _COMPONENTS,
    "sklearn.random_projection.GaussianRandomProjection": _COMPONENTS,
    "sklearn.random_projection.SparseRandomProjection": _COMPONENTS,
}
#: Other fitted ints that a class must hold equal to its output width (LDA slices its output by it).
_SAME_AS_WIDTH = {"sklearn.discriminant_analysis.LinearDiscriminantAnalysis": "_max_components"}


def check_output_width(key: str, attrs: Mapping[str, Any], params: Mapping[str, Any], path: str) -> None:
    """The stored output width of a fitted estimator of class ``key`` is the one its state gives.

    Raises
    ------
    FormatError
        Naming the attribute, what it holds and what the state gives.
    """
    width = OUTPUT_WIDTHS.get(key)
    if width is None:
        return
    expected = width.of(attrs, params)
    for name in (STORED_WIDTH, _SAME_AS_WIDTH.get(key)):
        if name is None or name not in attrs:
            continue
        found = attrs[name]
        if expected is None or type(found) is not int or found != expected:
            raise fail(join(path, name), f"is the output width: {width.says}, which the fitted state gives as "
                                         f"{expected}; found {preview(found, 40)}")
