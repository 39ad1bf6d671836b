"""Clustering estimators that save and load without pickle."""

from aprender.cluster._kmeans import KMeans

__all__ = ["KMeans"]
