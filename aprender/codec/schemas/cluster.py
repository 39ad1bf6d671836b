"""Schemas of the clustering estimators."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from sklearn import cluster as sk

from aprender import cluster as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import integer


def check_kmeans(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """cluster_centers_ is (n_clusters, n_features); labels_ are integer cluster ids."""
    n = n_features(attrs, path)
    array(attrs, "cluster_centers_", path, ndim=(2,), shape={0: params.get("n_clusters"), 1: n})
    optional_array(attrs, "labels_", path, ndim=(1,), kinds="iu")


def check_minibatch_kmeans(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for KMeans, plus one partial_fit count per centre in _counts (absent from inference-only files)."""
    check_kmeans(params, attrs, path)
    optional_array(attrs, "_counts", path, ndim=(1,), shape={0: params.get("n_clusters")})


def check_hdbscan(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The single-linkage tree's merges name only points and earlier merges.

    ``dbscan_clustering`` hands ``_single_linkage_tree_`` to compiled code that indexes
    a union-find by ``left_node`` and ``right_node`` without bounds checks: row ``i``
    of a tree over ``n`` points may only name ids below ``n + i``.
    """
    check_generic(params, attrs, path)
    tree = attrs.get("_single_linkage_tree_")
    if tree is None:
        return
    if not isinstance(tree, np.ndarray) or tree.ndim != 1 or tree.dtype.names is None or not {
            "left_node", "right_node", "value", "cluster_size"} <= set(tree.dtype.names):
        raise fail(path, "_single_linkage_tree_ must be a 1-d record array of merges")
    limit = len(tree) + 1 + np.arange(len(tree))
    for side in ("left_node", "right_node"):
        ids = tree[side]
        if ids.dtype.kind not in "iu" or np.any(ids < 0) or np.any(ids >= limit):
            raise fail(path, f"_single_linkage_tree_ {side} names a point or merge that does not exist yet")
    labels = attrs.get("labels_")
    if isinstance(labels, np.ndarray) and labels.shape != (len(tree) + 1,):
        raise fail(path, f"labels_ has shape {labels.shape}, the tree merges {len(tree) + 1} points")


def check_feature_agglomeration(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """labels_ gives each of the n_features_in_ features a cluster id in [0, n_clusters_).

    transform pools the features by ``np.bincount(labels_)``, which allocates one slot per
    id up to the largest: an id of 2**40 would ask for 8 TiB.
    """
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    k = integer(attrs, "n_clusters_", path, high=n)
    labels = array(attrs, "labels_", path, ndim=(1,), kinds="iu", shape={0: n})
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise fail(path, f"'labels_' holds cluster ids outside [0, {k})")


#: The training set's labels (one per training row); MiniBatchKMeans also its partial_fit
#: counts, moving averages and random state.
_KMEANS_TRAINING = ("labels_",)
_MINIBATCH_TRAINING = ("labels_", "_counts", "_ewa_inertia", "_ewa_inertia_min", "_no_improvement", "_random_state",
                       "_n_since_last_reassign")

SCHEMAS = [
    ((ap.KMeans, sk.KMeans), Spec(ModelType.KMEANS, quantizable=("cluster_centers_",), validate=check_kmeans,
                                  training_only=_KMEANS_TRAINING)),
    (
        (ap.MiniBatchKMeans, sk.MiniBatchKMeans),
        Spec(ModelType.KMEANS, quantizable=("cluster_centers_",), validate=check_minibatch_kmeans,
             training_only=_MINIBATCH_TRAINING),
    ),
    ((sk.HDBSCAN,), Spec(validate=check_hdbscan)),
    ((sk.FeatureAgglomeration,), Spec(validate=check_feature_agglomeration)),
]
