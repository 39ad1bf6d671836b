"""A stored output width is the width of the fitted state it was derived from, and names cost the file's bytes.

Many transformers store their output width as a plain int, ``_n_features_out``, beside the
arrays that decide it (KMeans' ``cluster_centers_`` rows, RBFSampler's ``random_weights_``
columns). scikit-learn reads the int, not the arrays, whenever it names the output:
``get_feature_names_out``, a pandas ``transform`` (``set_output``), a ColumnTransformer's
names. A 3 KB KMeans file claiming ``_n_features_out = 10**9`` loaded, and
``get_feature_names_out`` then built names for 28 s until a 2 GB limit stopped it (tens of GB
without one). So each class's stored width must equal what its fitted state gives
(:data:`OUTPUT_WIDTHS`); tests/test_inference_costs.py checks that every class whose fits store
one has a row, and that real fits agree with it.

A width that no stored array carries (a stateless transformer's ``n_features_in_``) is named
``x0, x1, ...`` on every ``get_feature_names_out`` call: at most
:data:`aprender._limits.MAX_UNBACKED_NAMES` names (:func:`check_unbacked_names`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from sklearn.base import ClassNamePrefixFeaturesOutMixin

from aprender import _limits
from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview

__all__ = ["NAMES_PER_FEATURE", "OUTPUT_WIDTHS", "STORED_WIDTH", "check_output_width", "check_unbacked_names"]

#: The fitted attribute that holds the output width.
STORED_WIDTH = "_n_features_out"


class Width(NamedTuple):
    """Where a class's output width comes from: ``says`` in words, ``of`` the width (None when absent), and the
    fitted int that states it (``stored``)."""

    says: str
    of: Callable[[Mapping[str, Any], Mapping[str, Any]], int | None]
    stored: str = STORED_WIDTH


def _axis(name: str, axis: int, *, stored: str = STORED_WIDTH, source: str = "attrs", ndim: int = 2) -> Width:
    def of(attrs: Mapping[str, Any], params: Mapping[str, Any]) -> int | None:
        # an array, or a sparse matrix (SparseRandomProjection)
        shape = getattr((attrs if source == "attrs" else params).get(name), "shape", None)
        return int(shape[axis]) if isinstance(shape, tuple) and len(shape) == ndim else None

    return Width(f"{'rows' if axis == 0 else 'columns'} of `{name}`", of, stored)


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
#: store one (``_n_features_out``, or the int its ``_n_features_out`` property reads).
OUTPUT_WIDTHS: dict[str, Width] = {
    "sklearn.decomposition.SparseCoder": _axis("dictionary", 0, stored="n_components_", source="params"),
    "sklearn.preprocessing.KernelCenterer": _axis("K_fit_rows_", 0, stored="n_features_in_", ndim=1),
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
#: Classes whose fit stores its ``n_components`` parameter as the width, the string "auto" included
#: (scikit-learn's random projections; their ``get_feature_names_out`` then fails, for an honest fit too).
_AUTO_STORED = frozenset(["sklearn.random_projection.GaussianRandomProjection",
                          "sklearn.random_projection.SparseRandomProjection"])


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
    for name in (width.stored, _SAME_AS_WIDTH.get(key)):
        if name is None or name not in attrs:
            continue
        found = attrs[name]
        if key in _AUTO_STORED and found == "auto" == params.get("n_components"):
            continue
        if expected is None or type(found) is not int or found != expected:
            raise fail(join(path, name), f"is the output width: {width.says}, which the fitted state gives as "
                                         f"{expected}; found {preview(found, 40)}")


#: Classes (scikit-learn's key) whose stateless output has several names per input feature: -> how many, from
#: the hyperparameters. Every other class names at most one output per input feature without stored state.
NAMES_PER_FEATURE: dict[str, Callable[[Mapping[str, Any]], int]] = {
    "sklearn.kernel_approximation.AdditiveChi2Sampler": lambda params: 2 * int(params.get("sample_steps") or 2) - 1,
}


def _carries(value: Any, n: int) -> bool:
    """Whether a fitted value is as wide as ``n`` in some dimension, so that the file paid for the width (a nested
    estimator fitted on ``n`` features was held to this rule itself)."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return n in shape
    if isinstance(value, (list, tuple)):
        return len(value) == n
    return type(getattr(value, "__dict__", {}).get("n_features_in_")) is int and value.n_features_in_ == n


def check_unbacked_names(key: str, cls: type, attrs: Mapping[str, Any], params: Mapping[str, Any],
                         path: str) -> None:
    """A width that makes more than :data:`~aprender._limits.MAX_UNBACKED_NAMES` feature names is carried by a
    stored value that wide.

    Raises
    ------
    FormatError
        Naming ``n_features_in_`` and the names it would make.
    """
    n = attrs.get("n_features_in_")
    # a quick exit for every usual width: NAMES_PER_FEATURE is at most 63 (``sample_steps`` at most 32)
    if type(n) is not int or n <= _limits.MAX_UNBACKED_NAMES // 64 or not hasattr(cls, "get_feature_names_out"):
        return
    if issubclass(cls, ClassNamePrefixFeaturesOutMixin):
        return  # names its outputs from the stored output width (check_output_width), never its inputs
    names = n * NAMES_PER_FEATURE.get(key, lambda params: 1)(params)
    carried = n if any(_carries(v, n) for k, v in attrs.items() if k != "n_features_in_") else 0
    if names - carried > _limits.MAX_UNBACKED_NAMES:
        raise fail(join(path, "n_features_in_"), f"{n} features make {names} feature names at every "
                   f"get_feature_names_out, and no stored array is that wide: at most "
                   f"{_limits.MAX_UNBACKED_NAMES} (aprender._limits.MAX_UNBACKED_NAMES; raise it to load a wider one)")
