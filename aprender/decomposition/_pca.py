"""Principal component analysis with aprender persistence."""

from __future__ import annotations

from sklearn import decomposition as _sk

from aprender.base import SerializableMixin

__all__ = ["PCA"]


class PCA(SerializableMixin, _sk.PCA):
    """Principal component analysis (:class:`sklearn.decomposition.PCA`).

    Saved tensors: ``components_`` (kept in its original memory order, usually
    Fortran, so that ``transform`` reproduces the last bit), ``mean_``,
    ``explained_variance_``, ``explained_variance_ratio_`` and ``singular_values_``.

    Examples
    --------
    >>> from aprender.decomposition import PCA
    >>> pca = PCA(n_components=1).fit([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> pca.transform([[3.0, 3.0]]).shape
    (1, 1)
    """
