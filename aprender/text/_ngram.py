"""Word n-gram language model: add-k or interpolated Kneser-Ney smoothing.

The counts live in a context trie stored as flat integer arrays (see
docs/schema/ngram-recommender.md), so fitting and lookups are vectorised NumPy
(``np.unique`` to count, ``np.searchsorted`` to look up) and the fitted state is a
handful of tensors plus the vocabulary.

Trie layout. A *context* is the run of up to ``n - 1`` tokens before a predicted
token. Contexts of length ``d`` are the nodes at depth ``d``; the root (depth 0) is
the empty context. A node is its parent -- the same context without its farthest
(leftmost) token -- plus that token, so walking from the root reads a history from
the nearest token backwards and passes through every shorter context on the way:
exactly the chain Kneser-Ney interpolates over. Nodes of one depth are sorted by
``parent * V + token`` (``V`` = vocabulary size), a strictly increasing key that
``searchsorted`` looks up. The observed continuations of the depth ``m - 1`` contexts
form order ``m``: CSR-style ``offsets_[m - 1]`` per context into ``next_ids_[m - 1]``
(sorted within each context) with their ``counts_[m - 1]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from aprender.base import SerializableMixin

__all__ = ["BOS", "EOS", "UNK", "NgramLm", "special_tokens"]

#: Unknown-token, end-of-sentence and start-of-sentence markers; ids 0, 1, 2.
UNK, EOS, BOS = "<unk>", "</s>", "<s>"
UNK_ID, EOS_ID, BOS_ID = 0, 1, 2


def special_tokens(boundaries: bool) -> tuple[str, ...]:
    """The reserved tokens at the start of ``vocabulary_``."""
    return (UNK, EOS, BOS) if boundaries else (UNK,)


def check_texts(X: Any) -> list[str]:
    """``X`` as a list of documents; a bare string is the classic mistake."""
    if isinstance(X, str):
        raise ValueError("Iterable over raw text documents expected, string object received.")
    if not isinstance(X, Iterable):
        raise TypeError(f"Iterable over raw text documents expected, got {type(X).__name__}.")
    texts = list(X)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"document {i} is a {type(text).__name__}, expected str")
    return texts


def _lookup(keys: np.ndarray, query: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Index of each ``query`` in the sorted ``keys``, or -1 (absent or not ``valid``)."""
    if keys.size == 0:
        return np.full(query.shape, -1, dtype=np.int64)
    idx = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return np.where(valid & (keys[idx] == query), idx, -1)


def _gather(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``values[idx]`` as float64, 0 where ``idx`` is -1."""
    if values.size == 0:
        return np.zeros(idx.shape)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], 0).astype(np.float64)


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each CSR segment (exact in float64 below 2**53)."""
    cumulative = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


@dataclass(frozen=True)
class _Order:
    """Lookup tables of one order, derived from the stored arrays."""

    keys: np.ndarray  # context * V + next token, strictly increasing
    weights: np.ndarray  # the count each event contributes under the chosen smoothing
    totals: np.ndarray  # per context: sum of weights
    types: np.ndarray  # per context: number of events with a positive weight


class NgramLm(SerializableMixin, BaseEstimator):
    """Word n-gram language model.

    Counts every n-gram of the training documents (each document is one sentence,
    framed by ``<s>`` and ``</s>`` unless ``boundaries=False``) and smooths them so
    every context gives a proper distribution over the vocabulary, ``<unk>`` and
    ``</s>``.

    Parameters
    ----------
    n : int, default=3
        Order of the model: a token is predicted from the ``n - 1`` before it.
    smoothing : {"kneser_ney", "add_k"}, default="kneser_ney"
        ``"kneser_ney"``: interpolated Kneser-Ney with absolute ``discount``, lower
        orders on continuation counts, the unigram level interpolated with the
        uniform distribution. ``"add_k"``: add ``k`` to every count of the full
        context (an unseen context gives the uniform distribution).
    k : float, default=1.0
        Pseudo-count of add-k smoothing (1.0 is Laplace).
    discount : float, default=0.75
        Absolute discount of Kneser-Ney, in (0, 1].
    lowercase : bool, default=True
        Lowercase text before tokenizing.
    token_pattern : str, default=r"(?u)\\w+|[^\\w\\s]"
        Regular expression whose matches are the tokens (words and punctuation).
    boundaries : bool, default=True
        Frame each document with ``<s>`` ... ``</s>``, so the model learns how
        sentences start and end.
    min_count : int, default=1
        Tokens seen fewer times in training become ``<unk>``, which gives the
        unknown token a learned probability.

    Attributes
    ----------
    vocabulary_ : ndarray of str
        Token of each id: the special tokens, then the known tokens sorted.
    context_parent_ : list of ndarray of int64
        For depth ``d`` (entry ``d - 1``), each context's parent node at depth ``d - 1``.
    context_token_ : list of ndarray of int32
        For depth ``d``, each context's farthest token.
    offsets_ : list of ndarray of int64
        For order ``m``, CSR offsets of each depth ``m - 1`` context into ``next_ids_``.
    next_ids_ : list of ndarray of int32
        For order ``m``, the observed next tokens, sorted within each context.
    counts_ : list of ndarray of int64
        For order ``m``, how often each (context, next token) was seen.
    adjusted_counts_ : list of ndarray of int64
        For orders ``1 .. n-1``, Kneser-Ney's adjusted counts: the number of distinct
        tokens seen before the n-gram, or its count when the context starts with ``<s>``.

    Examples
    --------
    >>> from aprender.text import NgramLm
    >>> lm = NgramLm(n=2, smoothing="add_k", k=1.0).fit(["the cat sat", "the dog sat"])
    >>> [(token, round(p, 3)) for token, p in lm.predict_next("the", k=2)]
    [('cat', 0.25), ('dog', 0.25)]
    >>> round(lm.perplexity(["the cat sat"]), 3)
    3.159
    """

    _parameter_constraints: ClassVar[dict] = {
        "n": [Interval(Integral, 1, None, closed="left")],
        "smoothing": [StrOptions({"kneser_ney", "add_k"})],
        "k": [Interval(Real, 0, None, closed="neither")],
        "discount": [Interval(Real, 0, 1, closed="right")],
        "lowercase": ["boolean"],
        "token_pattern": [str],
        "boundaries": ["boolean"],
        "min_count": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        n: int = 3,
        *,
        smoothing: str = "kneser_ney",
        k: float = 1.0,
        discount: float = 0.75,
        lowercase: bool = True,
        token_pattern: str = r"(?u)\w+|[^\w\s]",
        boundaries: bool = True,
        min_count: int = 1,
    ) -> None:
        self.n = n
        self.smoothing = smoothing
        self.k = k
        self.discount = discount
        self.lowercase = lowercase
        self.token_pattern = token_pattern
        self.boundaries = boundaries
        self.min_count = min_count

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        return tags

    # -- tokens and ids ------------------------------------------------------------

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        try:
            pattern = re.compile(self.token_pattern)
        except re.error as exc:
            raise ValueError(f"token_pattern {self.token_pattern!r} is not a valid regular expression: {exc}") from None
        if self.lowercase:
            texts = [t.lower() for t in texts]
        return [pattern.findall(t) for t in texts]

    def _ids(self, tokens: list[str]) -> np.ndarray:
        """Token ids; unknown tokens become ``<unk>``."""
        first = len(special_tokens(self.boundaries))
        words = self.vocabulary_[first:]
        query = np.array(tokens, dtype=str)
        if words.size == 0 or query.size == 0:
            return np.full(query.shape, UNK_ID, dtype=np.int64)
        idx = np.minimum(np.searchsorted(words, query), words.size - 1)
        return np.where(words[idx] == query, idx + first, UNK_ID).astype(np.int64)

    def _sequences(self, id_lists: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Flatten documents into one id sequence (with boundary markers if enabled).

        Returns the sequence, the index of every predicted position in it, the
        context length available there (at most ``n - 1``) and its document.
        """
        extra = 2 if self.boundaries else 0
        sizes = np.array([len(ids) + extra for ids in id_lists], dtype=np.int64)
        starts = np.cumsum(sizes) - sizes
        offset = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(starts, sizes)
        body = np.concatenate([np.zeros(0, np.int64), *id_lists]).astype(np.int64)
        if self.boundaries:
            seq = np.full(offset.shape, EOS_ID, dtype=np.int64)
            seq[offset == 0] = BOS_ID
            inner = (offset > 0) & (offset < np.repeat(sizes - 1, sizes))
            seq[inner] = body
            pos = np.flatnonzero(offset > 0)
        else:
            seq, pos = body, np.arange(body.size)
        doc = np.repeat(np.arange(len(id_lists)), sizes)[pos]
        return seq, pos, np.minimum(offset[pos], self.n - 1), doc

    # -- fitting ---------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Iterable[str], y: None = None) -> NgramLm:
        """Count the n-grams of the documents ``X``.

        Parameters
        ----------
        X : iterable of str
            Training documents, one sentence each.
        y : None
            Ignored.

        Returns
        -------
        self : NgramLm

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> NgramLm(n=2).fit(["a b", "a c"]).vocabulary_.tolist()
        ['<unk>', '</s>', '<s>', 'a', 'b', 'c']
        """
        texts = check_texts(X)
        if not texts:
            raise ValueError("NgramLm needs at least one document to fit, got 0")
        token_lists = self._tokenize(texts)
        flat = np.array([t for tokens in token_lists for t in tokens], dtype=str)
        words, inverse, freq = np.unique(flat, return_inverse=True, return_counts=True)
        kept = freq >= self.min_count
        specials = special_tokens(self.boundaries)
        new_id = np.where(kept, np.cumsum(kept) - 1 + len(specials), UNK_ID)
        self.vocabulary_ = np.array([*specials, *words[kept].tolist()], dtype=str)
        ids = new_id[inverse.reshape(-1)]
        bounds = np.cumsum([len(tokens) for tokens in token_lists])[:-1]
        seq, pos, avail, _ = self._sequences(np.split(ids, bounds))
        self._count(seq, pos, avail)
        return self

    def _count(self, seq: np.ndarray, pos: np.ndarray, avail: np.ndarray) -> None:
        V = self.vocabulary_.size
        node = np.zeros(pos.size, dtype=np.int64)  # every position's context node at the current depth
        self.context_parent_, self.context_token_ = [], []
        self.offsets_, self.next_ids_, self.counts_, self.adjusted_counts_ = [], [], [], []
        event_keys = []
        for m in range(1, self.n + 1):
            if m > 1:  # grow the contexts by one token: depth m - 1
                d = m - 1
                sel = avail >= d
                keys, inv = np.unique(node[sel] * V + seq[pos[sel] - d], return_inverse=True)
                self.context_parent_.append(keys // V)
                self.context_token_.append((keys % V).astype(np.int32))
                node = np.full(pos.size, -1, dtype=np.int64)
                node[sel] = inv.reshape(-1)
            n_contexts = self.context_parent_[-1].size if m > 1 else 1
            sel = avail >= m - 1
            keys, counts = np.unique(node[sel] * V + seq[pos[sel]], return_counts=True)
            per_context = np.bincount(keys // V, minlength=n_contexts)
            self.offsets_.append(np.concatenate([[0], np.cumsum(per_context)]).astype(np.int64))
            self.next_ids_.append((keys % V).astype(np.int32))
            self.counts_.append(counts.astype(np.int64))
            event_keys.append(keys)
        for m in range(1, self.n):
            self.adjusted_counts_.append(self._adjusted(m, event_keys))

    def _adjusted(self, m: int, event_keys: list[np.ndarray]) -> np.ndarray:
        """Kneser-Ney adjusted counts of order ``m`` (< n).

        Each order ``m + 1`` event ``(v h, w)`` is one distinct token ``v`` before
        ``(h, w)``; dropping ``v`` moves its context to the parent node. Contexts that
        start with ``<s>`` have nothing before them and keep their plain counts.
        """
        V = self.vocabulary_.size
        higher = event_keys[m]
        lower_keys = self.context_parent_[m - 1][higher // V] * V + higher % V
        continuation = np.bincount(np.searchsorted(event_keys[m - 1], lower_keys), minlength=event_keys[m - 1].size)
        if m == 1 or not self.boundaries:
            return continuation.astype(np.int64)
        starts_sentence = self.context_token_[m - 2][event_keys[m - 1] // V] == BOS_ID
        return np.where(starts_sentence, self.counts_[m - 1], continuation).astype(np.int64)

    # -- probabilities -----------------------------------------------------------------

    def _n_outcomes(self) -> int:
        """Size of the predicted vocabulary: every id but ``<s>``."""
        return self.vocabulary_.size - (1 if self.boundaries else 0)

    def _orders(self) -> list[_Order]:
        V = self.vocabulary_.size
        orders = []
        for m in range(1, self.n + 1):
            offsets = self.offsets_[m - 1]
            context = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
            kn_lower = self.smoothing == "kneser_ney" and m < self.n
            weights = (self.adjusted_counts_ if kn_lower else self.counts_)[m - 1]
            orders.append(_Order(
                keys=context * V + self.next_ids_[m - 1],
                weights=weights,
                totals=_segment_sums(weights, offsets),
                types=_segment_sums(weights > 0, offsets),
            ))
        return orders

    def _context_nodes(self, context: np.ndarray) -> list[np.ndarray]:
        """Context node at every depth ``0 .. n-1`` (-1: unavailable or never seen).

        ``context[:, j]`` is the token ``j + 1`` places back, -1 where there is none.
        """
        V = self.vocabulary_.size
        node = np.zeros(context.shape[0], dtype=np.int64)
        nodes = [node]
        for d in range(1, self.n):
            keys = self.context_parent_[d - 1] * V + self.context_token_[d - 1]
            token = context[:, d - 1]
            valid = (node >= 0) & (token >= 0)
            node = _lookup(keys, np.where(valid, node * V + token, -1), valid)
            nodes.append(node)
        return nodes

    def _proba(self, context: np.ndarray, tokens: np.ndarray, orders: list[_Order]) -> np.ndarray:
        """P(token | context) for each row; ``context`` as in :meth:`_context_nodes`."""
        V, outcomes = self.vocabulary_.size, self._n_outcomes()
        nodes = self._context_nodes(context)
        if self.smoothing == "add_k":
            depth = (context >= 0).sum(axis=1)
            node = np.stack(nodes)[depth, np.arange(tokens.size)]
            count, total = np.zeros(tokens.size), np.zeros(tokens.size)
            for d, order in enumerate(orders):
                at = (depth == d) & (node >= 0)
                idx = _lookup(order.keys, np.where(at, node * V + tokens, -1), at)
                count = np.where(at, _gather(order.weights, idx), count)
                total = np.where(at, _gather(order.totals, np.where(at, node, -1)), total)
            return (count + self.k) / (total + self.k * outcomes)
        # Interpolated Kneser-Ney, from the uniform distribution up to the longest context.
        proba = np.full(tokens.size, 1.0 / outcomes)
        for node, order in zip(nodes, orders, strict=True):
            total = _gather(order.totals, node)
            seen = total > 0
            idx = _lookup(order.keys, np.where(seen, node * V + tokens, -1), seen)
            weight = np.maximum(_gather(order.weights, idx) - self.discount, 0.0)
            backoff = self.discount * _gather(order.types, node)
            proba = np.where(seen, (weight + backoff * proba) / np.where(seen, total, 1.0), proba)
        return proba

    def _context_matrix(self, seq: np.ndarray, pos: np.ndarray, avail: np.ndarray) -> np.ndarray:
        back = np.arange(1, self.n)
        rows = pos[:, None] - back[None, :]
        return np.where(back[None, :] <= avail[:, None], seq[np.maximum(rows, 0)], -1)

    def _history(self, ids: np.ndarray) -> np.ndarray:
        """The context row for whatever follows the token ``ids`` that open a sentence."""
        if self.boundaries:
            ids = np.concatenate([[BOS_ID], ids])
        row = np.full(self.n - 1, -1, dtype=np.int64)
        recent = ids[::-1][: self.n - 1]
        row[: recent.size] = recent
        return row

    def _distribution(self, row: np.ndarray, orders: list[_Order]) -> tuple[np.ndarray, np.ndarray]:
        """Every outcome id and its probability after the context ``row``."""
        ids = np.arange(self.vocabulary_.size)
        if self.boundaries:
            ids = ids[ids != BOS_ID]
        context = np.broadcast_to(row, (ids.size, row.size))
        return ids, self._proba(context, ids, orders)

    # -- public inference ----------------------------------------------------------------

    def score_samples(self, X: Iterable[str]) -> np.ndarray:
        """Log-probability (natural log) of each document, ``</s>`` included.

        Parameters
        ----------
        X : iterable of str
            Documents.

        Returns
        -------
        ndarray of shape (n_documents,)

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> lm = NgramLm(n=2, smoothing="add_k").fit(["a b", "a c"])
        >>> lm.score_samples(["a b"]).round(3)  # log(3/7 * 2/7 * 2/6)
        array([-3.199])
        """
        check_is_fitted(self)
        texts = check_texts(X)
        id_lists = [self._ids(tokens) for tokens in self._tokenize(texts)]
        seq, pos, avail, doc = self._sequences(id_lists)
        logp = np.log(self._proba(self._context_matrix(seq, pos, avail), seq[pos], self._orders()))
        return np.bincount(doc, weights=logp, minlength=len(texts))

    def _token_log_likelihood(self, X: Iterable[str]) -> tuple[float, int]:
        texts = check_texts(X)
        id_lists = [self._ids(tokens) for tokens in self._tokenize(texts)]
        seq, pos, avail, _ = self._sequences(id_lists)
        if pos.size == 0:
            raise ValueError("the documents contain no token to score")
        logp = np.log(self._proba(self._context_matrix(seq, pos, avail), seq[pos], self._orders()))
        return float(logp.sum()), int(pos.size)

    def score(self, X: Iterable[str], y: None = None) -> float:
        """Mean log-likelihood per predicted token (natural log; higher is better).

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> lm = NgramLm(n=2).fit(["the cat sat", "the dog sat"])
        >>> lm.score(["the cat sat"]) > lm.score(["sat the cat"])
        True
        """
        check_is_fitted(self)
        total, count = self._token_log_likelihood(X)
        return total / count

    def perplexity(self, X: Iterable[str]) -> float:
        """Perplexity, ``exp(-score(X))``: the average branching factor (lower is better).

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> lm = NgramLm(n=2, smoothing="add_k", k=1.0).fit(["a b"])
        >>> lm.perplexity(["a b"])  # every step has probability (1 + 1) / (1 + 4)
        2.5
        """
        check_is_fitted(self)
        total, count = self._token_log_likelihood(X)
        return float(np.exp(-total / count))

    def predict_next(self, context: str = "", k: int | None = 5) -> list[tuple[str, float]]:
        """The ``k`` most probable next tokens after ``context``.

        Parameters
        ----------
        context : str, default=""
            Text so far in the sentence (``""``: the sentence start).
        k : int or None, default=5
            How many tokens to return; ``None`` returns the whole distribution,
            whose probabilities sum to 1.

        Returns
        -------
        list of (str, float)
            Tokens with their probabilities, most probable first (ties by id).

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> lm = NgramLm(n=2).fit(["the cat sat", "the cat ran"])
        >>> lm.predict_next("the", k=1)[0][0]
        'cat'
        """
        check_is_fitted(self)
        if k is not None and (not isinstance(k, Integral) or k < 1):
            raise ValueError(f"k must be a positive int or None, got {k!r}")
        ids, proba = self._distribution(self._history(self._ids(self._tokenize([context])[0])), self._orders())
        top = np.argsort(-proba, kind="stable")[:k]
        return [(str(self.vocabulary_[ids[i]]), float(proba[i])) for i in top]

    def generate(self, prefix: str = "", max_tokens: int = 20, random_state: Any = None) -> str:
        """Sample a continuation of ``prefix`` until ``</s>`` or ``max_tokens`` tokens.

        ``<unk>`` is never sampled (its probability is spread over the others).

        Parameters
        ----------
        prefix : str, default=""
            Start of the sentence.
        max_tokens : int, default=20
            Largest number of tokens to add.
        random_state : int, RandomState instance or None, default=None
            Seed for reproducible samples.

        Returns
        -------
        str
            The prefix's tokens followed by the sampled ones, joined by spaces.

        Examples
        --------
        >>> from aprender.text import NgramLm
        >>> lm = NgramLm(n=3).fit(["one two three", "one two three four"])
        >>> lm.generate("one", max_tokens=2, random_state=0)
        'one two three'
        """
        check_is_fitted(self)
        if not isinstance(max_tokens, Integral) or max_tokens < 0:
            raise ValueError(f"max_tokens must be a non-negative int, got {max_tokens!r}")
        rng = check_random_state(random_state)
        orders = self._orders()
        tokens = self._tokenize([prefix])[0]
        history = self._ids(tokens)
        for _ in range(max_tokens):
            ids, proba = self._distribution(self._history(history), orders)
            proba = np.where(ids == UNK_ID, 0.0, proba)
            if proba.sum() <= 0:
                break
            choice = ids[rng.choice(ids.size, p=proba / proba.sum())]
            if self.boundaries and choice == EOS_ID:
                break
            tokens.append(str(self.vocabulary_[choice]))
            history = np.append(history, choice)
        return " ".join(tokens)
