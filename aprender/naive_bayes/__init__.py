"""Naive Bayes classifiers that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.naive_bayes._naive_bayes import BernoulliNB, GaussianNB, MultinomialNB

__all__ = ["BernoulliNB", "GaussianNB", "MultinomialNB"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = ["CategoricalNB", "ComplementNB"]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
