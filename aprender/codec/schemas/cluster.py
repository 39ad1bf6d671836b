"""Schemas of the clustering estimators."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import cluster as sk

from aprender import cluster as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, n_features, optional_array


def check_kmeans(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """cluster_centers_ is (n_clusters, n_features); labels_ are integer cluster ids."""
    n = n_features(attrs, path)
    array(attrs, "cluster_centers_", path, ndim=(2,), shape={0: params.get("n_clusters"), 1: n})
    optional_array(attrs, "labels_", path, ndim=(1,), kinds="iu")


def check_minibatch_kmeans(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """As for KMeans, plus one partial_fit count per centre in _counts."""
    check_kmeans(params, attrs, path)
    array(attrs, "_counts", path, ndim=(1,), shape={0: params.get("n_clusters")})


SCHEMAS = [
    ((ap.KMeans, sk.KMeans), Spec(ModelType.KMEANS, quantizable=("cluster_centers_",), validate=check_kmeans)),
    (
        (ap.MiniBatchKMeans, sk.MiniBatchKMeans),
        Spec(ModelType.KMEANS, quantizable=("cluster_centers_",), validate=check_minibatch_kmeans),
    ),
]
