"""Text vectorizers that save and load without pickle."""

from aprender.feature_extraction.text._generated import HashingVectorizer, TfidfTransformer
from aprender.feature_extraction.text._vectorizers import CountVectorizer, TfidfVectorizer

__all__ = ["CountVectorizer", "TfidfVectorizer"]
__all__ += ["HashingVectorizer", "TfidfTransformer"]
