"""K-means clustering with aprender persistence."""

from __future__ import annotations

from sklearn import cluster as _sk

from aprender.base import SerializableMixin

__all__ = ["KMeans"]


class KMeans(SerializableMixin, _sk.KMeans):
    """K-means clustering (:class:`sklearn.cluster.KMeans`).

    Saved tensors: ``cluster_centers_`` and ``labels_``.

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.2], [9.0], [9.2]])
    >>> sorted(km.cluster_centers_.ravel().round(1).tolist())
    [0.1, 9.1]
    """
