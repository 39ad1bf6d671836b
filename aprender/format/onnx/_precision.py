"""Where an ONNX graph would compute otherwise than scikit-learn, found at export time.

- **Words.** skl2onnx turns scikit-learn's default token pattern (``(?u)\\b\\w\\w+\\b``, Unicode
  words) into the ONNX Runtime ``Tokenizer`` expression ``[a-zA-Z0-9_]+``, which is ASCII: "très"
  becomes "tr" and "s", "großartig" "gro" and "artig", Japanese text nothing. The expression is
  rewritten with RE2's Unicode classes (``[\\p{L}\\p{N}_]+``: letters, numbers and the underscore,
  what Python's ``\\w`` matches), so the graph splits text as scikit-learn does. A custom token
  pattern that uses ``\\w``, ``\\b``, ``\\d`` or ``\\s`` is refused instead: RE2 reads those as
  ASCII classes, and the pattern cannot be rewritten safely.
- **Float transforms before trees.** The graph computes a scaler (any float arithmetic) in
  float32 before the trees, while scikit-learn computes it in float64 and rounds to float32 only
  at the trees; a row whose transformed value lies within one float32 rounding of a threshold can
  go the other way. That is warned about, with the exact alternative.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import onnx

from aprender.exceptions import ExportPrecisionWarning, UnsupportedExportError

__all__ = ["CAST_BEFORE_TREES", "DOUBLE_FOR_BOOSTERS", "check_token_pattern", "exact_remedy", "float_before_trees",
           "thresholds_after_floats", "unicode_tokens", "warn_float_before_trees"]

#: scikit-learn's default ``token_pattern``.
DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
_ASCII_WORDS = b"[a-zA-Z0-9_]+"
_UNICODE_WORDS = rb"[\p{L}\p{N}_]+"
_UNICODE_CLASSES = re.compile(r"\\[wWbBdDsS]")
#: Transformers whose float32 graph gives the values scikit-learn's float64 gives, rounded:
#: they select, encode as 0/1 or integers, or copy values.
_EXACT = frozenset(["OneHotEncoder", "OrdinalEncoder", "SimpleImputer", "MissingIndicator", "VarianceThreshold",
                    "SelectKBest", "SelectPercentile", "SelectFromModel", "SelectFpr", "SelectFdr", "SelectFwe",
                    "GenericUnivariateSelect", "RFE", "RFECV", "CastTransformer", "LabelEncoder", "Binarizer",
                    "CountVectorizer", "TfidfVectorizer", "TfidfTransformer", "ColumnTransformer", "Pipeline",
                    "FeatureUnion"])
_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble")


def check_token_pattern(est: Any) -> str | None:
    """Why a text vectorizer's token pattern cannot be exported exactly, or None."""
    if getattr(est, "analyzer", "word") != "word" or est.token_pattern in (None, DEFAULT_TOKEN_PATTERN):
        return None
    if _UNICODE_CLASSES.search(est.token_pattern):
        return (f"token_pattern={est.token_pattern!r}: ONNX Runtime's Tokenizer reads it with RE2, where \\w, "
                "\\b, \\d and \\s match ASCII only, so words with other letters (très, großartig, 日本語) would be "
                "split otherwise than scikit-learn splits them; use the default token_pattern, which is exported "
                "with Unicode classes, or, if ASCII words are what you mean, spell the class out ([a-zA-Z0-9_]+)")
    return None


def unicode_tokens(onx: onnx.ModelProto, vectorizers: list[Any]) -> None:
    """Rewrite the Tokenizer expression of default-pattern vectorizers with Unicode classes."""
    defaults = [v for v in vectorizers if getattr(v, "analyzer", "word") == "word"
                and v.token_pattern == DEFAULT_TOKEN_PATTERN and v.tokenizer is None]
    if not defaults:
        return
    if any(v.token_pattern == _ASCII_WORDS.decode() for v in vectorizers):
        raise UnsupportedExportError(
            "a vectorizer with the default token_pattern and one with token_pattern='[a-zA-Z0-9_]+' give "
            "the same ONNX Tokenizer, which cannot then be made to read Unicode words for the first only; "
            "export them separately")
    for node in onx.graph.node:
        if node.op_type == "Tokenizer":
            for attribute in node.attribute:
                if attribute.name == "tokenexp" and attribute.s == _ASCII_WORDS:
                    attribute.s = _UNICODE_WORDS


#: What to do about float transforms before trees (the warning's and the parity error's advice).
CAST_BEFORE_TREES = (
    "For the same predictions as scikit-learn, export with dtype=None (the default) or dtype=numpy.float64: the graph "
    "then computes the transform in double and its trees compare the input rounded to float32 with double thresholds, "
    "as scikit-learn's do.")

#: The same advice for XGBoost, LightGBM and CatBoost, whose double graphs already read as the libraries do.
DOUBLE_FOR_BOOSTERS = (
    "For the same predictions, export with dtype=numpy.float64: the graph then computes the transforms in double "
    "and its XGBoost, LightGBM or CatBoost trees read them as the library does (no CastTransformer: it would change "
    "what LightGBM reads).")


def exact_remedy(estimators: list[Any]) -> str:
    """What makes a graph with float transforms before its trees exact, for these estimators."""
    from aprender.format.onnx._boosters import is_booster

    return DOUBLE_FOR_BOOSTERS if any(is_booster(e) for e in estimators) else CAST_BEFORE_TREES


def _float_transforms(estimators: list[Any]) -> list[str]:
    """The transformers among ``estimators`` whose float32 values are not their float64 ones rounded (sorted)."""
    return sorted({type(e).__name__ for e in estimators if hasattr(e, "transform") and not hasattr(e, "predict")
                   and type(e).__name__ not in _EXACT})


def float_before_trees(onx: onnx.ModelProto, estimators: list[Any]) -> list[str]:
    """The float transforms a graph computes before its tree operators (names, sorted)."""
    if not any(node.op_type in _TREE_OPS for node in onx.graph.node):
        return []
    return _float_transforms(estimators)


#: Transformers that compare their input with thresholds, as trees do (besides the boosters).
_THRESHOLDS = frozenset(["Binarizer"])


def thresholds_after_floats(estimators: list[Any]) -> str | None:
    """Why ``dtype=None`` exports in double a model that compares float transforms with thresholds.

    The readers are XGBoost, LightGBM and CatBoost trees and ``Binarizer`` (scikit-learn's own
    trees are exported in double anyway, KBinsDiscretizer by ``_double.NEEDS_DOUBLE``). The
    float32 graph is verified on probe rows made from the raw columns, which rarely land within
    one float32 rounding of a threshold of the transformed space: a DataFrame pipeline (median
    imputer and StandardScaler on an integer and a float column, then XGBClassifier(100))
    passed verification in float32 and then gave 226 of 20,000 new rows another label, 0.32 off
    in probability: the scaled integers are XGBoost's cut points. Its double graph gave none.
    """
    from aprender.format.onnx._boosters import is_booster

    readers = sorted({type(e).__name__ for e in estimators if is_booster(e) or type(e).__name__ in _THRESHOLDS})
    floats = _float_transforms(estimators)
    if not readers or not floats:
        return None
    return (f"{', '.join(floats)} before {', '.join(readers)}: the double graph computes the transforms as "
            "scikit-learn does, and compares them with the thresholds as the model does")


def warn_float_before_trees(onx: onnx.ModelProto, estimators: list[Any], name: str) -> None:
    """Warn when a float32 graph computes a float transform before tree operators."""
    floats = float_before_trees(onx, estimators)
    if not floats:
        return
    warnings.warn(
        f"{name}: the ONNX graph computes {', '.join(floats)} in float32 before its trees, while scikit-learn "
        "computes it in float64 and rounds to float32 only at the trees, so a row whose transformed value lies "
        "within one float32 rounding of a split threshold can take the other branch (docs/onnx.md measures a "
        f"few rows in a thousand). {exact_remedy(estimators)}",
        ExportPrecisionWarning, stacklevel=3)
