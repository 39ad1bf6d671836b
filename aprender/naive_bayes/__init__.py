"""Naive Bayes classifiers that save and load without pickle."""

from aprender.naive_bayes._generated import CategoricalNB, ComplementNB
from aprender.naive_bayes._naive_bayes import BernoulliNB, GaussianNB, MultinomialNB

__all__ = ["BernoulliNB", "GaussianNB", "MultinomialNB"]
__all__ += ["CategoricalNB", "ComplementNB"]
