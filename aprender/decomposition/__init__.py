"""Matrix decompositions that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.decomposition._pca import PCA

__all__ = ["PCA"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = [
    "DictionaryLearning",
    "FactorAnalysis",
    "FastICA",
    "IncrementalPCA",
    "KernelPCA",
    "LatentDirichletAllocation",
    "MiniBatchDictionaryLearning",
    "MiniBatchNMF",
    "MiniBatchSparsePCA",
    "NMF",
    "SparseCoder",
    "SparsePCA",
    "TruncatedSVD",
]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
