"""Schemas of the transformers that map names to output columns: DictVectorizer, MultiLabelBinarizer.

Both build their output as ``csr_matrix((data, indices, indptr), shape=...)`` with the
column indices their fitted mapping gives and a width taken from the mapping's size.
SciPy does not check those indices against the width when it builds the matrix, and
``toarray()`` then writes at each index: a mapping to a column past the width writes
out of bounds. The mapping must therefore be exactly a numbering of its columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn import feature_extraction, preprocessing

from aprender.codec import Spec
from aprender.codec._checks import fail
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import class_labels


def check_numbering(mapping: Any, names: Sequence[Any], name: str, path: str) -> None:
    """``mapping`` is a dict sending ``names[i]`` to ``i`` for every ``i``, and nothing else.

    Equal sizes and ``mapping[names[i]] == i`` for each ``i`` make the values a
    permutation of ``range(len(names))``: no column index outside the output.
    """
    if type(mapping) is not dict or len(mapping) != len(names):
        raise fail(path, f"'{name}' must be a dict with one entry per column ({len(names)})")
    for i, key in enumerate(names):
        try:
            column = mapping.get(key)
        except TypeError:  # an unhashable name
            column = None
        if isinstance(column, (bool, np.bool_)) or not isinstance(column, (int, np.integer)) or column != i:
            raise fail(path, f"'{name}' must number the columns 0 to {len(names) - 1} in order; "
                             f"column {i} ({str(key)[:40]!r}) is mapped to {str(column)[:40]}")


def check_dict_vectorizer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """``vocabulary_`` numbers ``feature_names_``: name ``feature_names_[i]`` is column ``i``."""
    check_generic(params, attrs, path)
    names = attrs.get("feature_names_")
    if type(names) is not list:
        raise fail(path, f"'feature_names_' must be a list, found {type(names).__name__}")
    check_numbering(attrs.get("vocabulary_"), names, "vocabulary_", path)


def check_multilabel_binarizer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """``_cached_dict``, when transform has built it, numbers ``classes_``."""
    check_generic(params, attrs, path)
    class_labels(attrs, path, minimum=0)
    cached = attrs.get("_cached_dict")
    if cached is not None:
        classes = attrs["classes_"]
        check_numbering({k.item() if isinstance(k, np.generic) else k: v for k, v in cached.items()}
                        if type(cached) is dict else cached,
                        classes.tolist() if classes.dtype.kind != "O" else list(classes), "_cached_dict", path)


SCHEMAS = [
    ((feature_extraction.DictVectorizer,), Spec(validate=check_dict_vectorizer)),
    ((preprocessing.MultiLabelBinarizer,), Spec(validate=check_multilabel_binarizer)),
]
