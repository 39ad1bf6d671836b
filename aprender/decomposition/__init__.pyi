from ._generated import (
    DictionaryLearning as DictionaryLearning,
    FactorAnalysis as FactorAnalysis,
    FastICA as FastICA,
    IncrementalPCA as IncrementalPCA,
    KernelPCA as KernelPCA,
    LatentDirichletAllocation as LatentDirichletAllocation,
    MiniBatchDictionaryLearning as MiniBatchDictionaryLearning,
    MiniBatchNMF as MiniBatchNMF,
    MiniBatchSparsePCA as MiniBatchSparsePCA,
    NMF as NMF,
    SparseCoder as SparseCoder,
    SparsePCA as SparsePCA,
    TruncatedSVD as TruncatedSVD,
)
from ._pca import PCA as PCA
