"""HistGradientBoosting internals, stored explicitly and checked before use.

``_predictors`` (an ``(n_iter, K)`` grid of ``TreePredictor``) is packed like a
forest: one array per node-record field for all predictors, with ``node_offsets``,
and the categorical bitsets concatenated with ``bitset_offsets``. ``_bin_mapper``
keeps its per-feature bin thresholds concatenated with ``bin_threshold_offsets``.
The Cython predictors index nodes, bitsets and known-category maps without bounds
checks, so every index is validated here against the arrays it points into.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE
from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
from sklearn.preprocessing import OrdinalEncoder

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.trees._structure import Layout, check_children, check_offsets, node_depths
from aprender.exceptions import UnsupportedTypeError

__all__ = [
    "BinInfo",
    "build_bin_mapper",
    "build_predictors",
    "build_preprocessor",
    "check_bin_mapper",
    "check_predictors",
    "check_preprocessor",
    "pack_bin_mapper",
    "pack_predictors",
    "pack_preprocessor",
]

#: The node-record fields of a TreePredictor, each stored as one tensor.
PREDICTOR_FIELDS: tuple[str, ...] = tuple(PREDICTOR_RECORD_DTYPE.names)
_FIELD_DTYPES = {name: PREDICTOR_RECORD_DTYPE.fields[name][0] for name in PREDICTOR_FIELDS}
_BITSETS = ("binned_left_cat_bitsets", "raw_left_cat_bitsets")
_PREDICTOR_KEYS = frozenset(["shape", "node_offsets", "bitset_offsets", *PREDICTOR_FIELDS, *_BITSETS])
_BIN_MAPPER_PARAMS = ("n_bins", "subsample", "is_categorical", "known_categories", "random_state", "n_threads")
_BIN_MAPPER_FITTED = ("is_categorical_", "missing_values_bin_idx_", "n_bins_non_missing_", "bin_thresholds_")
_BIN_MAPPER_KEYS = frozenset(["params", *_BIN_MAPPER_FITTED, "bin_threshold_offsets"])
#: Most OpenMP threads a stored bin mapper may ask for.
_MAX_THREADS = 4096
#: ``known_categories`` that are exactly the categorical features' bin thresholds (as after fit).
SAME_AS_THRESHOLDS = "bin_thresholds_"


def _concat(arrays: Sequence[np.ndarray], empty: np.ndarray) -> np.ndarray:
    return np.concatenate(arrays) if arrays else empty


def _offsets(counts: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)


# -- predictors ---------------------------------------------------------------------


def pack_predictors(predictors: list, per_iteration: int, path: str) -> dict[str, Any]:
    """Pack the ``(n_iter, per_iteration)`` grid of TreePredictors."""
    flat = []
    for i, row in enumerate(predictors):
        if not isinstance(row, list) or len(row) != per_iteration:
            raise UnsupportedTypeError(f"{path}.{i}", type(row).__name__, f"expected {per_iteration} predictors")
        for p in row:
            if type(p) is not TreePredictor or vars(p).keys() != {"nodes", *_BITSETS}:
                raise UnsupportedTypeError(f"{path}.{i}", type(p).__name__, "not a plain TreePredictor")
        flat.extend(row)
    # Concatenated as raw bytes: numpy copies structured arrays field by field, slowly.
    records = [np.ascontiguousarray(p.nodes.astype(PREDICTOR_RECORD_DTYPE, copy=False)).view(np.uint8) for p in flat]
    nodes = _concat(records, np.zeros(0, np.uint8)).view(PREDICTOR_RECORD_DTYPE)
    packed: dict[str, Any] = {
        "shape": [len(predictors), per_iteration],
        "node_offsets": _offsets([p.nodes.shape[0] for p in flat]),
        "bitset_offsets": _offsets([p.raw_left_cat_bitsets.shape[0] for p in flat]),
    }
    for name in PREDICTOR_FIELDS:
        packed[name] = np.ascontiguousarray(nodes[name])
    for name in _BITSETS:
        packed[name] = _concat([getattr(p, name) for p in flat], np.zeros((0, 8), np.uint32))
    return packed


def _shape(value: object, path: str) -> tuple[int, int]:
    if not (isinstance(value, list) and len(value) == 2 and all(type(d) is int and d >= 0 for d in value)):
        raise fail(path, f"'shape' must be [n_iter, n_trees_per_iteration], found {preview(value)}")
    return value[0], value[1]


def check_predictors(packed: object, per_iteration: int, bins: BinInfo, path: str) -> None:
    """Validate packed predictors against the bin mapper they were grown from."""
    if not isinstance(packed, dict) or packed.keys() != _PREDICTOR_KEYS:
        raise fail(path, f"packed predictors need exactly the keys {sorted(_PREDICTOR_KEYS)}")
    n_iter, k = _shape(packed["shape"], path)
    if k != per_iteration:
        raise fail(path, f"{k} predictors per iteration, but n_trees_per_iteration_ is {per_iteration}")
    fields = {}
    for name in PREDICTOR_FIELDS:
        array = packed[name]
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype != _FIELD_DTYPES[name]:
            found = f"{getattr(array, 'dtype', type(array).__name__)} {getattr(array, 'shape', '')}"
            raise fail(path, f"node field '{name}' must be a 1-d {_FIELD_DTYPES[name]} array, found {found}")
        if array.shape[0] != packed["value"].shape[0]:
            raise fail(path, f"node field '{name}' has {array.shape[0]} entries, 'value' has "
                             f"{packed['value'].shape[0]}")
        fields[name] = array
    n_nodes, n_trees = fields["value"].shape[0], n_iter * k
    for name in _BITSETS:
        array = packed[name]
        if not isinstance(array, np.ndarray) or array.dtype != np.uint32 or array.ndim != 2 or array.shape[1] != 8:
            raise fail(path, f"'{name}' must be uint32 of shape (n_bitsets, 8)")
    n_bitsets = packed[_BITSETS[1]].shape[0]
    if packed[_BITSETS[0]].shape[0] != n_bitsets:
        raise fail(path, f"the two bitset arrays differ in length: {packed[_BITSETS[0]].shape[0]} and {n_bitsets}")
    offsets = check_offsets(packed["node_offsets"], n_trees, n_nodes, path, "node_offsets", empty_ok=False)
    bit_offsets = check_offsets(packed["bitset_offsets"], n_trees, n_bitsets, path, "bitset_offsets", empty_ok=True)
    layout = Layout(offsets, (n_iter, k), kind="predictor")
    for flag in ("is_leaf", "is_categorical"):
        bad = fields[flag] > 1
        if bad.any():
            i = int(np.argmax(bad))
            raise fail(path, f"{layout.node(i)}: {flag} must be 0 or 1, found {fields[flag][i]}")
    internal = fields["is_leaf"] == 0
    feature = fields["feature_idx"]
    outside = internal & ((feature < 0) | (feature >= bins.n_features))
    if outside.any():
        i = int(np.argmax(outside))
        raise fail(path, f"{layout.node(i)}: feature_idx {feature[i]} is outside [0, {bins.n_features})")
    children = {"left": fields["left"], "right": fields["right"]}
    check_children(layout, internal, children, path)
    depth = node_depths(layout, internal, tuple(children.values()))
    wrong = fields["depth"] != depth
    if wrong.any():
        i = int(np.argmax(wrong))
        raise fail(path, f"{layout.node(i)}: depth field says {fields['depth'][i]}, the node is at depth {depth[i]}")
    safe_feature = np.where(internal, feature, 0)
    categorical = internal & (fields["is_categorical"] == 1)
    _check_categorical_splits(layout, categorical, safe_feature, fields["bitset_idx"], bit_offsets, bins, path)
    _check_numerical_splits(layout, internal & ~categorical, safe_feature, fields, bins, path)


def _check_categorical_splits(layout: Layout, categorical: np.ndarray, feature: np.ndarray, bitset_idx: np.ndarray,
                              bit_offsets: np.ndarray, bins: BinInfo, path: str) -> None:
    not_cat = categorical & (bins.is_categorical[feature] == 0)
    if not_cat.any():
        i = int(np.argmax(not_cat))
        raise fail(path, f"{layout.node(i)}: categorical split on feature {feature[i]}, "
                         "which the bin mapper does not mark categorical")
    owned = layout.per_node(np.diff(bit_offsets))
    outside = categorical & (bitset_idx >= owned)
    if outside.any():
        i = int(np.argmax(outside))
        raise fail(path, f"{layout.node(i)}: bitset_idx {bitset_idx[i]} is outside the predictor's "
                         f"{int(owned[i])} bitsets")


def _check_numerical_splits(layout: Layout, numerical: np.ndarray, feature: np.ndarray,
                            fields: Mapping[str, np.ndarray], bins: BinInfo, path: str) -> None:
    on_cat = numerical & (bins.is_categorical[feature] == 1)
    if on_cat.any():
        i = int(np.argmax(on_cat))
        raise fail(path, f"{layout.node(i)}: numerical split on categorical feature {feature[i]}")
    bin_idx = fields["bin_threshold"].astype(np.int64)
    last = bins.n_bins_non_missing[feature].astype(np.int64) - 1
    beyond = numerical & (bin_idx > last)
    if beyond.any():
        i = int(np.argmax(beyond))
        raise fail(path, f"{layout.node(i)}: bin_threshold {bin_idx[i]} is past feature {feature[i]}'s "
                         f"{last[i] + 1} non-missing bins")
    # A split below the last bin sits at that bin's threshold; a split at the last
    # non-missing bin sends only missing values right and its threshold is +inf.
    inner = numerical & (bin_idx < last)
    position = np.where(inner, bins.offsets[feature] + bin_idx, 0)
    expected = np.where(inner, bins.thresholds[position] if bins.thresholds.size else 0.0, np.inf)
    wrong = numerical & (fields["num_threshold"] != expected)
    if wrong.any():
        i = int(np.argmax(wrong))
        raise fail(path, f"{layout.node(i)}: num_threshold {fields['num_threshold'][i]} is not bin "
                         f"{bin_idx[i]}'s threshold {expected[i]} of feature {feature[i]}")


def build_predictors(packed: Mapping[str, Any]) -> list[list[TreePredictor]]:
    """Rebuild the predictor grid from arrays that passed :func:`check_predictors`."""
    n_iter, k = packed["shape"]
    nodes = np.zeros(packed["value"].shape[0], dtype=PREDICTOR_RECORD_DTYPE)
    for name in PREDICTOR_FIELDS:
        nodes[name] = packed[name]
    # Copies: the Cython predictors take writable buffers, tensors read from bytes are read-only.
    binned, raw = (np.array(packed[name], order="C") for name in _BITSETS)
    node_offsets, bit_offsets = packed["node_offsets"].tolist(), packed["bitset_offsets"].tolist()
    flat = [
        TreePredictor(nodes[node_offsets[t]:node_offsets[t + 1]], binned[bit_offsets[t]:bit_offsets[t + 1]],
                      raw[bit_offsets[t]:bit_offsets[t + 1]])
        for t in range(n_iter * k)
    ]
    return [flat[i * k:(i + 1) * k] for i in range(n_iter)]


# -- the bin mapper -------------------------------------------------------------------


def pack_bin_mapper(mapper: object, path: str) -> dict[str, Any]:
    """The fitted ``_BinMapper`` as named values; thresholds concatenated with offsets."""
    if type(mapper) is not _BinMapper or vars(mapper).keys() != {*_BIN_MAPPER_PARAMS, *_BIN_MAPPER_FITTED}:
        raise UnsupportedTypeError(path, type(mapper).__name__, "not a fitted _BinMapper")
    thresholds = mapper.bin_thresholds_
    if not all(isinstance(t, np.ndarray) and t.dtype == np.float64 and t.ndim == 1 for t in thresholds):
        raise UnsupportedTypeError(f"{path}.bin_thresholds_", "list", "bin thresholds must be 1-d float64 arrays")
    params = {name: getattr(mapper, name) for name in _BIN_MAPPER_PARAMS}
    known = params["known_categories"]
    if known is not None:
        # fit() uses each categorical feature's known categories as its thresholds.
        if len(known) != len(thresholds) or not all(
            c is t if cat else c is None for c, t, cat in zip(known, thresholds, mapper.is_categorical_, strict=True)
        ):
            raise UnsupportedTypeError(f"{path}.known_categories", "list", "must be the categorical bin thresholds")
        params["known_categories"] = SAME_AS_THRESHOLDS
    return {
        "params": params,
        "is_categorical_": mapper.is_categorical_,
        "missing_values_bin_idx_": mapper.missing_values_bin_idx_,
        "n_bins_non_missing_": mapper.n_bins_non_missing_,
        "bin_thresholds_": _concat(thresholds, np.zeros(0)),
        "bin_threshold_offsets": _offsets([t.shape[0] for t in thresholds]),
    }


class BinInfo:
    """The validated bin mapper arrays the predictor checks index into."""

    def __init__(self, is_categorical: np.ndarray, n_bins_non_missing: np.ndarray, thresholds: np.ndarray,
                 offsets: np.ndarray) -> None:
        self.is_categorical = is_categorical
        self.n_bins_non_missing = n_bins_non_missing
        self.thresholds = thresholds
        self.offsets = offsets
        self.n_features = is_categorical.shape[0]


def _check_mapper_params(packed: object, path: str) -> tuple[dict[str, Any], int]:
    """The mapper's keys and constructor parameters (``known_categories`` is checked last); it and its ``n_bins``."""
    if not isinstance(packed, dict) or packed.keys() != _BIN_MAPPER_KEYS:
        raise fail(path, f"the bin mapper needs exactly the keys {sorted(_BIN_MAPPER_KEYS)}")
    params = packed["params"]
    if not isinstance(params, dict) or params.keys() != set(_BIN_MAPPER_PARAMS):
        raise fail(path, f"bin mapper 'params' must hold exactly {list(_BIN_MAPPER_PARAMS)}")
    n_bins = params["n_bins"]
    if type(n_bins) is not int or not 3 <= n_bins <= 256:
        raise fail(path, f"n_bins must be an int in [3, 256], found {preview(n_bins)}")
    threads, subsample = params["n_threads"], params["subsample"]
    # OpenMP would try to start that many threads when a warm start re-bins data.
    if threads is not None and (type(threads) is not int or not 1 <= threads <= _MAX_THREADS):
        raise fail(path, f"n_threads must be null or an int in [1, {_MAX_THREADS}], found {preview(threads)}")
    if subsample is not None and (type(subsample) is not int or subsample < 1):
        raise fail(path, f"subsample must be null or a positive int, found {preview(subsample)}")
    if packed["missing_values_bin_idx_"] != n_bins - 1:
        raise fail(path, f"missing_values_bin_idx_ must be n_bins - 1 = {n_bins - 1}")
    return packed, n_bins


def _check_bin_counts(packed: Mapping[str, Any], n_bins: int, path: str) -> tuple[np.ndarray, np.ndarray]:
    """``is_categorical_`` and ``n_bins_non_missing_``: one entry per feature, counts below ``n_bins``."""
    is_cat = packed["is_categorical_"]
    if not isinstance(is_cat, np.ndarray) or is_cat.dtype != np.uint8 or is_cat.ndim != 1 or (is_cat > 1).any():
        raise fail(path, "is_categorical_ must be a 1-d uint8 array of 0s and 1s")
    n_features = is_cat.shape[0]
    if n_features == 0:
        raise fail(path, "the bin mapper has no features")
    counts = packed["n_bins_non_missing_"]
    if not isinstance(counts, np.ndarray) or counts.dtype != np.uint32 or counts.shape != (n_features,):
        raise fail(path, f"n_bins_non_missing_ must be uint32 of shape ({n_features},)")
    if (counts > n_bins - 1).any():
        f = int(np.argmax(counts > n_bins - 1))
        raise fail(path, f"feature {f} claims {counts[f]} non-missing bins; n_bins is {n_bins}")
    return is_cat, counts


def _check_thresholds(packed: Mapping[str, Any], is_cat: np.ndarray, counts: np.ndarray, n_bins: int,
                      path: str) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated thresholds and their offsets: per feature as many as its bins need."""
    thresholds = packed["bin_thresholds_"]
    if not isinstance(thresholds, np.ndarray) or thresholds.dtype != np.float64 or thresholds.ndim != 1:
        raise fail(path, "bin_thresholds_ must be a 1-d float64 array")
    offsets = check_offsets(packed["bin_threshold_offsets"], is_cat.shape[0], thresholds.shape[0], path,
                            "bin_threshold_offsets", empty_ok=True)
    # A numerical feature has one threshold fewer than bins; a categorical one lists its categories.
    expected = counts.astype(np.int64) - (is_cat == 0)
    wrong = np.diff(offsets) != expected
    if wrong.any():
        f = int(np.argmax(wrong))
        raise fail(path, f"feature {f} has {np.diff(offsets)[f]} bin thresholds, "
                         f"its {counts[f]} bins need {expected[f]}")
    categories = thresholds[np.repeat(is_cat, np.diff(offsets)) == 1]
    if ((categories < 0) | (categories >= n_bins - 1) | (categories != np.floor(categories))).any():
        raise fail(path, f"categorical bin thresholds must be integer categories in [0, {n_bins - 1})")
    return thresholds, offsets


def check_bin_mapper(packed: object, path: str) -> BinInfo:
    """Validate a packed bin mapper; per feature, the thresholds must fit its bin counts."""
    mapper, n_bins = _check_mapper_params(packed, path)
    is_cat, counts = _check_bin_counts(mapper, n_bins, path)
    thresholds, offsets = _check_thresholds(mapper, is_cat, counts, n_bins, path)
    known = mapper["params"]["known_categories"]
    if known is not None and known != SAME_AS_THRESHOLDS:
        raise fail(path, f"known_categories must be null or {SAME_AS_THRESHOLDS!r}")
    return BinInfo(is_cat, counts, thresholds, offsets)


def build_bin_mapper(packed: Mapping[str, Any]) -> _BinMapper:
    """Rebuild the ``_BinMapper`` from arrays that passed :func:`check_bin_mapper`."""
    params = dict(packed["params"])
    offsets = packed["bin_threshold_offsets"].tolist()
    flat = packed["bin_thresholds_"]
    thresholds = [flat[begin:end].copy() for begin, end in itertools.pairwise(offsets)]
    if params["known_categories"] == SAME_AS_THRESHOLDS:
        params["known_categories"] = [t if c else None for t, c in zip(thresholds, packed["is_categorical_"],
                                                                     strict=True)]
    mapper = _BinMapper(**params)
    mapper.is_categorical_ = packed["is_categorical_"]
    mapper.missing_values_bin_idx_ = packed["missing_values_bin_idx_"]
    mapper.bin_thresholds_ = thresholds
    mapper.n_bins_non_missing_ = packed["n_bins_non_missing_"]
    return mapper


# -- the categorical preprocessor -------------------------------------------------------

#: Most categories a feature can have: max_bins (<= 255) plus missing values.
_MAX_CATEGORIES = 256


def pack_preprocessor(preprocessor: object, path: str) -> dict[str, Any]:
    """The categories of HistGradientBoosting's ``_preprocessor``, the only data it was fitted on.

    ``fit`` builds a ColumnTransformer of an OrdinalEncoder (categorical columns) and a
    FunctionTransformer wrapping ``check_array`` (the rest): a function, which is never
    stored. Its fitted state is determined by the columns and the categories each
    categorical column held, so the categories are what is stored.
    """
    names = [name for name, *_ in getattr(preprocessor, "transformers_", [])]
    encoder = getattr(preprocessor, "named_transformers_", {}).get("encoder")
    if type(preprocessor) is not ColumnTransformer or names[:2] != ["encoder", "numerical"] or (
            type(encoder) is not OrdinalEncoder):
        raise UnsupportedTypeError(path, type(preprocessor).__name__, "not HistGradientBoosting's own preprocessor")
    return {"categories": list(encoder.categories_)}


def check_preprocessor(packed: object, attrs: Mapping[str, Any], bins: BinInfo, path: str) -> None:
    """The stored categories fit the categorical features and their bins."""
    categories = packed.get("categories") if isinstance(packed, dict) and packed.keys() == {"categories"} else None
    is_cat, remapped = attrs.get("is_categorical_"), attrs.get("_is_categorical_remapped")
    n = attrs.get("n_features_in_")
    for name, mask in (("is_categorical_", is_cat), ("_is_categorical_remapped", remapped)):
        if not isinstance(mask, np.ndarray) or mask.dtype != bool or mask.shape != (n,):
            raise fail(path, f"{name} must be a bool array of shape ({n},) when there is a preprocessor")
    if not isinstance(categories, list) or len(categories) != int(is_cat.sum()):
        raise fail(path, f"the preprocessor needs the categories of the {int(is_cat.sum())} categorical features")
    if not np.array_equal(remapped, bins.is_categorical == 1):
        raise fail(path, "_is_categorical_remapped does not match the bin mapper's categorical features")
    for j, (values, f) in enumerate(zip(categories, np.flatnonzero(remapped), strict=True)):
        if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "biufO" or not (
                0 < values.shape[0] <= _MAX_CATEGORIES):
            raise fail(path, f"categories {j} must be a 1-d array of 1 to {_MAX_CATEGORIES} values")
        known = values.shape[0] - int(_is_nan(values[-1]))  # a trailing NaN category is "missing"
        if known != bins.n_bins_non_missing[f]:
            raise fail(path, f"categories {j} lists {known} categories, the bin mapper {bins.n_bins_non_missing[f]}")


def _is_nan(value: object) -> bool:
    return isinstance(value, float) and value != value


def _same_categories(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and all(
        x == y or (_is_nan(x) and _is_nan(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True))


def build_preprocessor(cls: type, params: Mapping[str, Any], attrs: Mapping[str, Any], packed: Mapping[str, Any],
                       path: str) -> ColumnTransformer:
    """Refit scikit-learn's own preprocessor on rows that cycle through the stored categories.

    The OrdinalEncoder learns exactly the stored categories (they are sorted, NaN last),
    so the refit preprocessor transforms like the original; the result is checked.
    """
    categories = packed["categories"]
    is_cat, names = attrs["is_categorical_"], attrs.get("feature_names_in_")
    rows = max(values.shape[0] for values in categories)
    columns, it = [], iter(categories)
    for categorical in is_cat:
        columns.append(np.resize(next(it), rows) if categorical else np.zeros(rows))
    if names is None:
        X = np.empty((rows, is_cat.shape[0]), dtype=np.result_type(*columns))
        for f, column in enumerate(columns):
            X[:, f] = column
    else:
        import pandas as pd

        from_dtype = params.get("categorical_features") == "from_dtype"
        X = pd.DataFrame({name: pd.Categorical(column) if from_dtype and categorical else column
                          for name, column, categorical in zip(names, columns, is_cat, strict=True)})
    scratch = cls(**params)
    try:
        scratch._preprocess_X(X, reset=True)
    except (TypeError, ValueError) as exc:
        raise fail(path, f"the categorical preprocessor cannot be rebuilt: {exc}") from None
    rebuilt = scratch._preprocessor.named_transformers_["encoder"].categories_
    same = len(rebuilt) == len(categories) and all(map(_same_categories, rebuilt, categories))
    if not same or not np.array_equal(scratch._is_categorical_remapped, attrs["_is_categorical_remapped"]):
        raise fail(path, "the stored categories do not rebuild the same categorical preprocessor")
    return scratch._preprocessor
