"""Missing-value imputers that save and load without pickle."""

from aprender.impute._generated import IterativeImputer, KNNImputer, MissingIndicator
from aprender.impute._simple import SimpleImputer

__all__ = ["SimpleImputer"]
__all__ += ["IterativeImputer", "KNNImputer", "MissingIndicator"]
