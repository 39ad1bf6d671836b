"""Text vectorizers that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.feature_extraction.text._vectorizers import CountVectorizer, TfidfVectorizer

__all__ = ["CountVectorizer", "TfidfVectorizer"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = ["HashingVectorizer", "TfidfTransformer"]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
