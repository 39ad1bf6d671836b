"""Feature extraction with aprender persistence.

Examples
--------
>>> from aprender.feature_extraction.text import CountVectorizer
>>> CountVectorizer().fit(["a cat", "a dog"]).vocabulary_ == {"cat": 0, "dog": 1}
True
"""

from aprender.feature_extraction import text
from aprender.feature_extraction._generated import DictVectorizer, FeatureHasher

__all__ = ["text"]
__all__ += ["DictVectorizer", "FeatureHasher"]
