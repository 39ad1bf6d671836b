from ._generated import (
    IterativeImputer as IterativeImputer,
    KNNImputer as KNNImputer,
    MissingIndicator as MissingIndicator,
)
from ._simple import SimpleImputer as SimpleImputer
