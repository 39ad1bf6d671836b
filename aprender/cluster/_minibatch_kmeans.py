"""Mini-batch k-means clustering with aprender persistence."""

from __future__ import annotations

from sklearn import cluster as _sk

from aprender.base import SerializableMixin

__all__ = ["MiniBatchKMeans"]


class MiniBatchKMeans(SerializableMixin, _sk.MiniBatchKMeans):
    """Mini-batch k-means clustering (:class:`sklearn.cluster.MiniBatchKMeans`).

    Saved tensors: ``cluster_centers_``, ``labels_`` and the per-centre counts
    ``_counts`` that ``partial_fit`` continues from.

    Examples
    --------
    >>> from aprender.cluster import MiniBatchKMeans
    >>> km = MiniBatchKMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.2], [9.0], [9.2]])
    >>> sorted(km.cluster_centers_.ravel().round(1).tolist())
    [0.1, 9.1]
    """
