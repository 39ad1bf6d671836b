"""Matrix decompositions that save and load without pickle."""

from aprender.decomposition._pca import PCA

__all__ = ["PCA"]
