"""Schemas of the text vectorizers: vocabulary in metadata, ``idf`` as a tensor.

``vocabulary_`` (a term -> column dict) is written as the list of terms in column
order: compact, and the column indices cannot be out of range by construction. The
TfidfVectorizer's inner TfidfTransformer keeps its settings in metadata while its
``idf_`` becomes the vectorizer's own tensor ``idf``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sklearn.feature_extraction import text as sk

from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.feature_extraction import text as ap


def pack_vocabulary(state: dict[str, Any]) -> dict[str, Any]:
    """vocabulary_ -> its terms in column order; drop the process-local stop-word cache id."""
    state.pop("_stop_words_id", None)
    vocabulary = state.get("vocabulary_")
    if isinstance(vocabulary, dict):
        state["vocabulary_"] = sorted(vocabulary, key=vocabulary.__getitem__)
    return state


def unpack_vocabulary(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The term list back to sklearn's term -> column dict."""
    if "vocabulary_" in attrs:
        attrs["vocabulary_"] = {term: i for i, term in enumerate(attrs["vocabulary_"])}
    return attrs


def check_token_pattern(params: Mapping[str, Any], path: str) -> None:
    """token_pattern compiles with at most one group (sklearn checks it only when analysing text)."""
    pattern = params.get("token_pattern")
    if pattern is None:
        return
    try:
        groups = re.compile(pattern).groups if isinstance(pattern, str) else -1
    except (re.error, RecursionError, OverflowError) as exc:
        raise fail(path, f"'token_pattern' is not a valid regular expression: {exc}") from None
    if not 0 <= groups <= 1:
        raise fail(path, "'token_pattern' must be a string with at most one capturing group")


def check_vocabulary(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> int:
    """vocabulary_ is a list of distinct strings and token_pattern compiles; returns the vocabulary size."""
    check_token_pattern(params, path)
    terms = attrs.get("vocabulary_")
    if not isinstance(terms, list) or not all(type(t) is str for t in terms):
        raise fail(path, "'vocabulary_' must be a list of terms (strings) in column order")
    if len(set(terms)) != len(terms):
        raise fail(path, "'vocabulary_' lists a term twice")
    if type(attrs.get("fixed_vocabulary_")) is not bool:
        raise fail(path, "'fixed_vocabulary_' must be a bool")
    if attrs["fixed_vocabulary_"] != (params.get("vocabulary") is not None):  # as _validate_vocabulary sets it
        raise fail(path, "'fixed_vocabulary_' disagrees with the 'vocabulary' parameter")
    if not attrs["fixed_vocabulary_"]:
        check_term_lengths(params, terms, path)
    return len(terms)


def check_term_lengths(params: Mapping[str, Any], terms: list[str], path: str) -> None:
    """A character analyzer only makes n-grams of ``ngram_range``'s lengths.

    A fitted vocabulary is what the analyzer produced, so a longer term is a lie, and a
    costly one: ``inverse_transform`` builds a fixed-width array of every term, as wide as
    the longest, per call and per row. 'char' makes exactly ``min_n`` to ``max_n``
    characters; 'char_wb' pads each word with a space and makes its whole padded word when
    that is shorter than ``min_n``, so only ``max_n`` bounds it. Word n-grams have no such
    bound (a token is as long as the text it came from), nor does a vocabulary the user gave.
    """
    analyzer, ngram = params.get("analyzer"), params.get("ngram_range")
    if (analyzer not in ("char", "char_wb") or not isinstance(ngram, tuple | list) or len(ngram) != 2
            or not all(type(n) is int for n in ngram)):  # the parameter rules refuse a malformed range
        return
    low = ngram[0] if analyzer == "char" else 1
    for i, term in enumerate(terms):
        if not low <= len(term) <= ngram[1]:
            raise fail(path, f"'vocabulary_' term {i} is {len(term)} characters long; analyzer={analyzer!r} with "
                             f"ngram_range={tuple(ngram)} only makes terms of {low} to {ngram[1]} characters")


def check_count_vectorizer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Only the vocabulary is fitted state."""
    check_vocabulary(params, attrs, path)


def check_tfidf_transformer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """idf_ (present when use_idf) holds one value per feature."""
    n = n_features(attrs, path)
    optional_array(attrs, "idf_", path, ndim=(1,), shape={0: n})


def check_tfidf_vectorizer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """idf has one value per vocabulary term; the inner transformer agrees on the size."""
    n = check_vocabulary(params, attrs, path)
    tfidf = attrs.get("_tfidf")
    if not isinstance(tfidf, sk.TfidfTransformer):
        raise fail(path, f"'_tfidf' must be a TfidfTransformer, found {type(tfidf).__name__}")
    if getattr(tfidf, "n_features_in_", n) != n:
        raise fail(path, f"'_tfidf' was fitted on {tfidf.n_features_in_} features, the vocabulary has {n} terms")
    if "idf" in attrs:
        idf = array(attrs, "idf", path, ndim=(1,))
        if idf.shape[0] != n:
            raise fail(path, f"'idf' has {idf.shape[0]} values but the vocabulary has {n} terms")
    elif tfidf.use_idf:
        raise fail(path, "'_tfidf' uses idf but the tensor 'idf' is missing")


def pack_tfidf(state: dict[str, Any]) -> dict[str, Any]:
    """Split the inner TfidfTransformer into its settings (metadata) and ``idf`` (tensor)."""
    state = pack_vocabulary(state)
    tfidf = state.get("_tfidf")
    if tfidf is not None and "idf_" in vars(tfidf):
        shell = type(tfidf)(**tfidf.get_params())
        shell.__dict__.update({k: v for k, v in vars(tfidf).items() if k != "idf_"})
        state["_tfidf"] = shell
        state["idf"] = tfidf.idf_
    return state


def unpack_tfidf(attrs: dict[str, Any], params: Mapping[str, Any], path: str) -> dict[str, Any]:
    """Put ``idf`` back into the inner transformer."""
    attrs = unpack_vocabulary(attrs, params, path)
    if "idf" in attrs:
        attrs["_tfidf"].idf_ = attrs.pop("idf")
    return attrs


_COUNT = Spec(
    ModelType.COUNT_VECTORIZER, validate=check_count_vectorizer, pack=pack_vocabulary, unpack=unpack_vocabulary
)
_TFIDF = Spec(ModelType.TFIDF, validate=check_tfidf_vectorizer, pack=pack_tfidf, unpack=unpack_tfidf)

SCHEMAS = [
    ((ap.CountVectorizer, sk.CountVectorizer), _COUNT),
    ((ap.TfidfVectorizer, sk.TfidfVectorizer), _TFIDF),
    ((sk.TfidfTransformer,), Spec(ModelType.TFIDF, validate=check_tfidf_transformer)),
]
