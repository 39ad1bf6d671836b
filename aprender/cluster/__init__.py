"""Clustering estimators that save and load without pickle."""

from aprender.cluster._kmeans import KMeans
from aprender.cluster._minibatch_kmeans import MiniBatchKMeans

__all__ = ["KMeans", "MiniBatchKMeans"]
