"""Schemas of the preprocessing transformers: StandardScaler, MinMaxScaler, OneHotEncoder,
LabelEncoder, PolynomialFeatures and SplineTransformer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy.interpolate import BSpline
from sklearn import preprocessing as sk

from aprender import _limits
from aprender import preprocessing as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import array, fail, n_features, optional_array
from aprender.codec._nodes import preview
from aprender.codec.schemas._generic import check_generic
from aprender.codec.schemas._model_checks import integer


def check_feature_names(attrs: Mapping[str, Any], n: int, path: str) -> None:
    """feature_names_in_ (set when fitted on a DataFrame) names each of the n features."""
    names = attrs.get("feature_names_in_")
    if names is None:
        return
    if not isinstance(names, np.ndarray) or names.shape != (n,) or not all(isinstance(s, str) for s in names):
        raise fail(path, f"'feature_names_in_' must be {n} column names")


def check_sorted_unique(values: np.ndarray, name: str, path: str) -> None:
    """Labels searched by bisection must be strictly increasing (NaN allowed last, as sklearn sorts it)."""
    if values.ndim != 1:
        raise fail(path, f"'{name}' must be 1-d, found shape {values.shape}")
    if values.dtype.kind == "O":
        if len({type(v).__name__ + repr(v) for v in values}) != len(values):
            raise fail(path, f"'{name}' holds a value twice")
        return
    if values.dtype.kind == "f":
        finite = values[~np.isnan(values)]
        if not np.isnan(values[finite.shape[0]:]).all() or values.shape[0] - finite.shape[0] > 1:
            raise fail(path, f"'{name}' may hold one NaN, and only in last place")
        values = finite
    if values.shape[0] > 1 and not np.all(values[:-1] < values[1:]):
        raise fail(path, f"'{name}' must be sorted and free of duplicates")


def check_standard_scaler(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """mean_, var_ and scale_ hold one value per feature (or are None)."""
    n = n_features(attrs, path)
    for name in ("mean_", "var_", "scale_"):
        if name not in attrs:  # None is a legitimate value, absence is not
            raise fail(path, f"missing fitted attribute '{name}'")
        optional_array(attrs, name, path, ndim=(1,), shape={0: n})


def check_min_max_scaler(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Every fitted array holds one value per feature."""
    n = n_features(attrs, path)
    for name in ("min_", "scale_", "data_min_", "data_max_", "data_range_"):
        array(attrs, name, path, ndim=(1,), shape={0: n})
    check_feature_names(attrs, n, path)


def _index_array(value: Any, bound: int, name: str, path: str, *, allow_none: bool = False) -> None:
    """A 1-d array of indices in [0, bound) (object arrays may also hold None)."""
    if not isinstance(value, np.ndarray) or value.ndim != 1:
        raise fail(path, f"'{name}' must be a 1-d index array")
    for v in value.tolist():
        if v is None and allow_none:
            continue
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v < bound:
            raise fail(path, f"'{name}' holds index {v!r} outside [0, {bound})")


def _per_feature(attrs: Mapping[str, Any], name: str, n: int, path: str) -> list:
    value = attrs.get(name)
    if not isinstance(value, (list, np.ndarray)) or len(value) != n:
        raise fail(path, f"'{name}' must hold one entry per feature ({n})")
    return list(value)


def infrequent_mapping(infrequent: np.ndarray, n_categories: int) -> np.ndarray:
    """scikit-learn's map from a feature's categories to its grouped ones: infrequent ones share the last index."""
    mapping = np.empty(n_categories, dtype=np.int64)
    n_frequent = n_categories - infrequent.shape[0]
    mapping[infrequent] = n_frequent
    mapping[np.setdiff1d(np.arange(n_categories), infrequent)] = np.arange(n_frequent)
    return mapping


def _same_indices(stored: Any, derived: Any) -> bool:
    """Two per-feature index lists (``None`` entries allowed), or both ``None``, are equal."""
    if stored is None or derived is None:
        return stored is None and derived is None
    if not isinstance(stored, np.ndarray) or stored.ndim != 1 or len(stored) != len(derived):
        return False
    return all((a is None and b is None) or (a is not None and b is not None and not isinstance(a, (bool, np.bool_))
                                             and isinstance(a, (int, np.integer)) and int(a) == int(b))
               for a, b in zip(stored.tolist(), list(derived), strict=True))


def _derived_drop(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> tuple[Any, Any]:
    """``(_drop_idx_after_grouping, drop_idx_)`` as scikit-learn's own ``_set_drop_idx`` derives them."""
    scratch = sk.OneHotEncoder.__new__(sk.OneHotEncoder)
    scratch.__dict__.update({name: attrs.get(name) for name in (
        "categories_", "_infrequent_enabled", "_infrequent_indices", "_default_to_infrequent_mappings")})
    scratch.drop = params.get("drop")
    try:
        scratch._set_drop_idx()
    except (ValueError, TypeError, IndexError) as exc:
        raise fail(path, f"'drop' does not fit categories_: {type(exc).__name__}: {str(exc)[:120]}") from None
    return scratch._drop_idx_after_grouping, scratch.drop_idx_


def _category_sizes(attrs: Mapping[str, Any], n: int, path: str) -> list[int]:
    """Each feature's count of categories; ``categories_`` holds a sorted, distinct, non-empty array per feature."""
    categories = _per_feature(attrs, "categories_", n, path)
    for i, cats in enumerate(categories):
        if not isinstance(cats, np.ndarray) or cats.ndim != 1 or cats.shape[0] == 0:
            raise fail(path, f"'categories_.{i}' must be a non-empty 1-d array")
        check_sorted_unique(cats, f"categories_.{i}", path)
    return [c.shape[0] for c in categories]


def _check_infrequent(attrs: Mapping[str, Any], n: int, sizes: list[int], path: str) -> None:
    """Per feature, the infrequent categories' indices and the grouping they give, or neither."""
    infrequent = _per_feature(attrs, "_infrequent_indices", n, path)
    mappings = _per_feature(attrs, "_default_to_infrequent_mappings", n, path)
    for i, (idx, mapping) in enumerate(zip(infrequent, mappings, strict=True)):
        if idx is None and mapping is None:
            continue
        if idx is None or mapping is None:
            raise fail(path, f"feature {i}: infrequent indices and mapping must be given together")
        _index_array(idx, sizes[i], f"_infrequent_indices.{i}", path)
        if idx.shape[0] == 0 or not np.all(idx[:-1] < idx[1:]):
            raise fail(path, f"'_infrequent_indices.{i}' must be sorted, distinct and not empty")
        if not (isinstance(mapping, np.ndarray) and mapping.shape == (sizes[i],)
                and np.array_equal(mapping, infrequent_mapping(idx.astype(np.int64), sizes[i]))):
            raise fail(path, f"'_default_to_infrequent_mappings.{i}' is not the grouping that "
                             f"'_infrequent_indices.{i}' gives")


def _check_drop(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The dropped categories' indices are what scikit-learn derives from ``drop`` and the categories."""
    for name in ("drop_idx_", "_drop_idx_after_grouping"):
        if name not in attrs:
            raise fail(path, f"'{name}' is missing")
    after_grouping, drop_idx = _derived_drop(params, attrs, path)
    for name, derived in (("_drop_idx_after_grouping", after_grouping), ("drop_idx_", drop_idx)):
        if not _same_indices(attrs[name], derived):
            raise fail(path, f"'{name}' is not what drop={preview(params.get('drop'))} and categories_ give")


def _check_categories(attrs: Mapping[str, Any], path: str) -> None:
    """An encoder's categories per feature and, where infrequent ones are grouped, their grouping."""
    n = n_features(attrs, path)
    check_feature_names(attrs, n, path)
    sizes = _category_sizes(attrs, n, path)
    if type(attrs.get("_infrequent_enabled")) is not bool:
        raise fail(path, "'_infrequent_enabled' must be a bool")
    if attrs["_infrequent_enabled"]:
        _check_infrequent(attrs, n, sizes, path)


def check_one_hot_encoder(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Categories per feature are the primary state; every index derived from them is derived again here.

    ``_default_to_infrequent_mappings``, ``_drop_idx_after_grouping``, ``drop_idx_`` and
    ``_n_features_outs`` index two different sets: the categories as fitted, and the
    categories after the infrequent ones are grouped. A bound on the wrong set lets an
    index past the grouped count through, and transform then builds a sparse matrix whose
    column indices pass its width (SIGABRT in SciPy). So none of them is bounds-checked:
    each is computed again from ``categories_``, ``_infrequent_indices`` and the ``drop``
    parameter, by scikit-learn's own code where it has a method for it, and must match.
    """
    _check_categories(attrs, path)
    _check_drop(params, attrs, path)
    # The output width per feature follows from the state above (sklearn's own formula).
    expected = sk.OneHotEncoder._compute_n_features_outs(SimpleNamespace(**attrs))
    if attrs.get("_n_features_outs") != expected:
        raise fail(path, f"'_n_features_outs' is {preview(attrs.get('_n_features_outs'))}, categories_ give {expected}")


def check_ordinal_encoder(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """Categories per feature, and with ``max_categories``/``min_frequency`` the grouping of the infrequent ones.

    transform looks each code up in ``_default_to_infrequent_mappings``: it must be the
    grouping ``_infrequent_indices`` gives, derived again as for OneHotEncoder.
    """
    _check_categories(attrs, path)


def check_label_encoder(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """classes_ is a sorted 1-d array of distinct labels."""
    classes = attrs.get("classes_")
    if not isinstance(classes, np.ndarray):
        raise fail(path, f"'classes_' must be an array, found {type(classes).__name__}")
    check_sorted_unique(classes, "classes_", path)


def polynomial_terms(n: int, low: int, high: int, interaction_only: bool, bias: bool, bound: int) -> int | None:
    """The number of output columns of a polynomial expansion, or None past ``bound``.

    scikit-learn's own count (``PolynomialFeatures._num_combinations``) builds binomials of
    any size; this one adds the terms of each degree and stops once past ``bound``, so a
    file's degree cannot make the check itself slow.
    """
    total = int(bias)
    first = max(low, 1)
    if n == 1 and not interaction_only:  # one term per degree
        total += max(high - first + 1, 0)
        return total if total <= bound else None
    for degree in range(first, high + 1):
        if interaction_only and degree > n:
            break
        total += math.comb(n, degree) if interaction_only else math.comb(n + degree - 1, degree)
        if total > bound:
            return None
    return total


def check_polynomial_features(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """The degree range follows ``degree``; the output widths are the expansion's, and bounded.

    transform allocates ``n_samples`` rows of ``_n_out_full`` columns and fills them by the
    degree range: both widths must be what ``n_features_in_`` and the degrees give.
    """
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    degree = params.get("degree")
    low = integer(attrs, "_min_degree", path)
    high = integer(attrs, "_max_degree", path, low=low)
    if (low, high) != ((0, degree) if type(degree) is int else tuple(degree)):
        raise fail(path, f"'_min_degree', '_max_degree' ({low}, {high}) do not follow degree={degree!r}")
    options = bool(params.get("interaction_only")), bool(params.get("include_bias"))
    for name, first in (("n_output_features_", low), ("_n_out_full", 0)):
        width = integer(attrs, name, path)
        expected = polynomial_terms(n, first, high, *options, _limits.MAX_FEATURES)
        if expected is None:
            raise fail(path, f"'{name}': the expansion of {n} features to degree {high} has more than "
                             f"{_limits.MAX_FEATURES} columns (raise aprender._limits.MAX_FEATURES to load it)")
        if width != expected:
            raise fail(path, f"'{name}' is {width}, the expansion of {n} features has {expected} columns")


def check_spline_transformer(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """One B-spline per feature, each with the same number of splines; ``n_features_out_`` follows from them.

    transform allocates ``n_samples`` rows of ``n_features_out_`` columns (plus one per
    feature without a bias) and fills one block of ``n_splines`` columns per feature.
    The splines themselves are rebuilt by the ``bspline`` handler, whose constructor checks them.
    """
    check_generic(params, attrs, path)
    n = n_features(attrs, path)
    splines = attrs.get("bsplines_")
    if type(splines) is not list or len(splines) != n or not all(isinstance(b, BSpline) for b in splines):
        raise fail(path, f"'bsplines_' must be a list of {n} B-splines, one per feature")
    widths = {b.c.shape[1] if b.c.ndim == 2 else -1 for b in splines}
    if len(widths) > 1 or min(widths, default=0) < 1:
        raise fail(path, f"'bsplines_' must all have 2-d coefficients of one width, found widths {sorted(widths)}")
    expected = n * (widths.pop() if widths else 0) - n * (1 - bool(params.get("include_bias")))
    if attrs.get("n_features_out_") != expected:
        raise fail(path, f"'n_features_out_' is {str(attrs.get('n_features_out_'))[:40]}, "
                         f"the splines give {expected} columns")


SCHEMAS = [
    ((ap.StandardScaler, sk.StandardScaler), Spec(ModelType.SCALER, validate=check_standard_scaler)),
    ((sk.PolynomialFeatures,), Spec(validate=check_polynomial_features)),
    ((sk.SplineTransformer,), Spec(validate=check_spline_transformer)),
    ((ap.MinMaxScaler, sk.MinMaxScaler), Spec(ModelType.SCALER, validate=check_min_max_scaler)),
    ((ap.OneHotEncoder, sk.OneHotEncoder), Spec(ModelType.ENCODER, validate=check_one_hot_encoder)),
    ((ap.LabelEncoder, sk.LabelEncoder), Spec(ModelType.ENCODER, validate=check_label_encoder)),
    ((ap.OrdinalEncoder, sk.OrdinalEncoder), Spec(validate=check_ordinal_encoder)),
]
