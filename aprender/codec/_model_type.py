"""The model-type codes of the aprender file formats.

The codes up to ``0x0040`` and ``0x00FF`` are those of the Rust aprender library's APR v2
format, so that its tools and these files name a family by the same number.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ModelType"]


class ModelType(IntEnum):
    """Stable numeric code of a model family, written into every file.

    Codes are never reused. ``0x0001``-``0x0040`` and ``0x00FF`` are the codes of the Rust
    aprender library's APR v2 format; the families it has no code for take codes from
    ``0x0050`` on. The code is what a file reports (``inspect``) and what ``load(path,
    ModelType.X)`` checks the allow-listed class against; the class itself comes from the
    file's class key, so a code never decides how a file is rebuilt.

    Examples
    --------
    >>> from aprender.codec import ModelType
    >>> ModelType.KMEANS
    <ModelType.KMEANS: 6>
    >>> ModelType(0x40).name
    'MIXTURE_OF_EXPERTS'
    """

    LINEAR_REGRESSION = 0x0001
    LOGISTIC_REGRESSION = 0x0002
    DECISION_TREE = 0x0003
    RANDOM_FOREST = 0x0004
    GRADIENT_BOOSTING = 0x0005
    KMEANS = 0x0006
    PCA = 0x0007
    NAIVE_BAYES = 0x0008
    KNN = 0x0009
    SVM = 0x000A
    NGRAM_LM = 0x0010
    TFIDF = 0x0011
    COUNT_VECTORIZER = 0x0012
    NEURAL_SEQUENTIAL = 0x0020
    NEURAL_CUSTOM = 0x0021
    CONTENT_RECOMMENDER = 0x0030
    MIXTURE_OF_EXPERTS = 0x0040
    SCALER = 0x0050
    ENCODER = 0x0051
    IMPUTER = 0x0052
    PIPELINE = 0x0060
    COLUMN_TRANSFORMER = 0x0061
    DUMMY = 0x0070
    CUSTOM = 0x00FF
