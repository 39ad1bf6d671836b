"""Clustering estimators that save and load without pickle."""

from aprender.cluster._generated import (
    DBSCAN,
    HDBSCAN,
    OPTICS,
    AffinityPropagation,
    AgglomerativeClustering,
    Birch,
    BisectingKMeans,
    FeatureAgglomeration,
    MeanShift,
    SpectralBiclustering,
    SpectralClustering,
    SpectralCoclustering,
)
from aprender.cluster._kmeans import KMeans
from aprender.cluster._minibatch_kmeans import MiniBatchKMeans

__all__ = ["KMeans", "MiniBatchKMeans"]
__all__ += [
    "AffinityPropagation",
    "AgglomerativeClustering",
    "Birch",
    "BisectingKMeans",
    "DBSCAN",
    "FeatureAgglomeration",
    "HDBSCAN",
    "MeanShift",
    "OPTICS",
    "SpectralBiclustering",
    "SpectralClustering",
    "SpectralCoclustering",
]
