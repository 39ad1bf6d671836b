"""Clustering estimators that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.cluster._kmeans import KMeans
from aprender.cluster._minibatch_kmeans import MiniBatchKMeans

__all__ = ["KMeans", "MiniBatchKMeans"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = [
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
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
