"""Schemas of aprender's own models: NgramLm (0x10) and ContentRecommender (0x30).

The validators prove, before any method can run, that every index a lookup will
follow stays inside its array: token ids inside the vocabulary, parent nodes inside
the previous depth, CSR offsets inside the event arrays, and lookup keys strictly
increasing (``searchsorted`` relies on it). docs/schema/ngram-recommender.md
describes the layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer

from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, check_compressed, fail
from aprender.codec._nodes import join
from aprender.recommend import ContentRecommender
from aprender.text import NgramLm
from aprender.text._ngram import BOS_ID, special_tokens

#: Counts above this would lose precision in the float64 sums of inference.
MAX_COUNT = 2**53


def _arrays(attrs: Mapping[str, Any], name: str, length: int, path: str, kinds: str = "iu") -> list[np.ndarray]:
    """A list attribute of ``length`` one-dimensional integer arrays."""
    value = attrs.get(name)
    if not isinstance(value, list) or len(value) != length:
        found = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise fail(path, f"'{name}' must be a list of {length} arrays (one per order), found {found}")
    for i, item in enumerate(value):
        if not isinstance(item, np.ndarray) or item.ndim != 1 or item.dtype.kind not in kinds:
            described = f"{item.dtype} array of shape {item.shape}" if isinstance(item, np.ndarray) else type(item)
            signed = "signed " if kinds == "i" else ""
            raise fail(join(path, f"{name}.{i}"), f"expected a 1-d {signed}integer array, found {described}")
    return value


def _strictly_increasing(keys: np.ndarray, what: str, path: str) -> None:
    if keys.size > 1 and not np.all(keys[1:] > keys[:-1]):
        raise fail(path, f"{what} must be sorted without duplicates")


def _in_range(values: np.ndarray, stop: int, what: str, path: str) -> None:
    if values.size and (values.min() < 0 or values.max() >= stop):
        raise fail(path, f"{what} must lie in [0, {stop})")


def _vocabulary(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> int:
    boundaries = params.get("boundaries")
    if type(boundaries) is not bool:
        raise fail(path, f"'boundaries' must be a bool, found {boundaries!r}")
    vocabulary = array(attrs, "vocabulary_", path, ndim=(1,), kinds="U")
    specials = special_tokens(boundaries)
    if tuple(vocabulary[: len(specials)].tolist()) != specials:
        raise fail(path, f"'vocabulary_' must start with the special tokens {list(specials)}")
    _strictly_increasing(vocabulary[len(specials) :], "'vocabulary_' tokens after the special ones", path)
    return vocabulary.size


def check_ngram(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The context trie and per-order count arrays are complete and in range."""
    n = params.get("n")
    if type(n) is not int or n < 1:
        raise fail(path, f"'n' must be a positive int, found {n!r}")
    V = _vocabulary(params, attrs, path)
    parents = _arrays(attrs, "context_parent_", n - 1, path)
    tokens = _arrays(attrs, "context_token_", n - 1, path)
    offsets = _arrays(attrs, "offsets_", n, path, kinds="i")
    next_ids = _arrays(attrs, "next_ids_", n, path)
    counts = _arrays(attrs, "counts_", n, path)
    adjusted = _arrays(attrs, "adjusted_counts_", n - 1, path)
    n_contexts = 1  # the root: the empty context
    for m in range(1, n + 1):
        if m > 1:
            where = join(path, f"context_parent_.{m - 2}")
            parent, token = parents[m - 2], tokens[m - 2]
            if parent.shape != token.shape:
                raise fail(where, f"{parent.size} context parents but {token.size} context tokens")
            _in_range(parent, n_contexts, "context parents", where)
            _in_range(token, V, "context tokens", join(path, f"context_token_.{m - 2}"))
            _strictly_increasing(parent.astype(np.int64) * V + token, "contexts (parent * V + token)", where)
            n_contexts = parent.size
        where = join(path, f"next_ids_.{m - 1}")
        check_compressed(offsets[m - 1], next_ids[m - 1], n_contexts, V, join(path, f"offsets_.{m - 1}"))
        following = next_ids[m - 1]
        if params["boundaries"] and np.any(following == BOS_ID):
            raise fail(where, "'<s>' is never predicted, but appears among the next tokens")
        context = np.repeat(np.arange(n_contexts, dtype=np.int64), np.diff(offsets[m - 1]))
        _strictly_increasing(context * V + following, "next tokens of each context", where)
        where, count = join(path, f"counts_.{m - 1}"), counts[m - 1]
        if count.shape != following.shape:
            raise fail(where, f"{count.size} counts for {following.size} n-grams")
        if count.size and (count.min() < 0 or count.max() > MAX_COUNT):
            raise fail(where, f"counts must lie in [0, 2**53], found {count.min()} .. {count.max()}")
        if m < n:
            lower = adjusted[m - 1]
            if lower.shape != count.shape or np.any(lower < 0) or np.any(lower > count):
                raise fail(join(path, f"adjusted_counts_.{m - 1}"),
                           "adjusted counts must be one per n-gram, between 0 and its count")


def check_recommender(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The item matrix has one row per item id and one column per idf value."""
    vectorizer = attrs.get("vectorizer_")
    if not isinstance(vectorizer, TfidfVectorizer):
        raise fail(path, f"'vectorizer_' must be a TfidfVectorizer, found {type(vectorizer).__name__}")
    if vectorizer.norm != "l2":
        raise fail(path, f"'vectorizer_' must L2-normalise rows for cosine scores, found norm={vectorizer.norm!r}")
    vocabulary, idf = getattr(vectorizer, "vocabulary_", None), getattr(vectorizer, "idf_", None)
    if not isinstance(vocabulary, dict) or not isinstance(idf, np.ndarray) or idf.shape != (len(vocabulary),):
        raise fail(path, "'vectorizer_' must be fitted, with one idf value per vocabulary term")
    n_terms = len(vocabulary)
    matrix = attrs.get("item_matrix_")
    if not isinstance(matrix, sp.csr_matrix):
        raise fail(path, f"'item_matrix_' must be a CSR matrix, found {type(matrix).__name__}")
    if matrix.dtype.kind != "f":
        raise fail(path, f"'item_matrix_' has dtype {matrix.dtype}, expected float")
    ids = attrs.get("item_ids_")
    if not isinstance(ids, np.ndarray) or ids.ndim != 1 or ids.dtype.kind not in "iU":
        raise fail(path, "'item_ids_' must be a 1-d array of integer or string ids")
    if matrix.shape != (ids.size, n_terms):
        raise fail(path, f"'item_matrix_' has shape {matrix.shape}, expected ({ids.size} items, {n_terms} terms)")
    if np.unique(ids).size != ids.size:
        raise fail(path, "'item_ids_' lists an item twice")


SCHEMAS = [
    ((NgramLm,), Spec(ModelType.NGRAM_LM, validate=check_ngram)),
    ((ContentRecommender,), Spec(ModelType.CONTENT_RECOMMENDER, validate=check_recommender)),
]
