"""aprender's own text models: a word n-gram language model."""

from aprender.text._ngram import NgramLm

__all__ = ["NgramLm"]
