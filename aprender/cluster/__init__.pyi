from ._generated import (
    AffinityPropagation as AffinityPropagation,
    AgglomerativeClustering as AgglomerativeClustering,
    Birch as Birch,
    BisectingKMeans as BisectingKMeans,
    DBSCAN as DBSCAN,
    FeatureAgglomeration as FeatureAgglomeration,
    HDBSCAN as HDBSCAN,
    MeanShift as MeanShift,
    OPTICS as OPTICS,
    SpectralBiclustering as SpectralBiclustering,
    SpectralClustering as SpectralClustering,
    SpectralCoclustering as SpectralCoclustering,
)
from ._kmeans import KMeans as KMeans
from ._minibatch_kmeans import MiniBatchKMeans as MiniBatchKMeans
