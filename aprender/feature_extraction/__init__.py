"""Feature extraction with aprender persistence.

Examples
--------
>>> from aprender.feature_extraction.text import CountVectorizer
>>> CountVectorizer().fit(["a cat", "a dog"]).vocabulary_ == {"cat": 0, "dog": 1}
True
"""

from aprender._lazy import lazy_attributes
from aprender.feature_extraction import text

__all__ = ["text"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = ["DictVectorizer", "FeatureHasher"]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
