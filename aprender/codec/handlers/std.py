"""Named handlers for two standard value types found in fitted preprocessing state.

- ``slice``: ColumnTransformer's ``output_indices_`` and slice column selections
  (integer positions or, for DataFrames, column-name bounds).
- ``numpy.dtype``: SimpleImputer's ``_fit_dtype`` / ``_fill_dtype``.
- ``datetime``: ``datetime64`` / ``timedelta64`` arrays (a OneHotEncoder's categories
  of a date column), as an int64 tensor of counts of one of :data:`TIME_UNITS`.
- ``set`` / ``frozenset``: a hyperparameter such as ``CountVectorizer(vocabulary={...})``,
  its items written in sorted order when they sort (strings, numbers), so that the same
  set gives the same bytes whatever the process's hash seed.
- ``range``: a search's ``param_grid={"n_neighbors": range(1, 30)}``, as its three
  integers. A range of a few bytes can stand for any number of candidates that a later
  ``fit`` of the search would try, so it may hold at most :data:`MAX_RANGE` values (the
  length of a list the same file could spell out is bounded by the file's size anyway).

All but ``datetime`` are pure metadata (no tensors). The dtype handler rebuilds only plain numeric,
string and object dtypes spelled in numpy's ``dtype.str`` form; anything else in a
file is refused rather than handed to ``numpy.dtype``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender._limits import MAX_INT, MIN_INT
from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import NULL, TENSOR, Handler, register_handler, tensor_field
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["DATETIME", "DTYPE", "MAX_RANGE", "RANGE", "SET", "SLICE", "TIME_UNITS"]

_BOUNDS = ("start", "stop", "step")


def _valid_bounds(start: Any, stop: Any, step: Any) -> bool:
    return all(b is None or type(b) in (int, str) for b in (start, stop)) and (step is None or type(step) is int)


def _encode_slice(value: slice, enc: Encoding, path: str) -> dict[str, Any]:
    if not _valid_bounds(value.start, value.stop, value.step):
        raise UnsupportedTypeError(path, "slice", "slice bounds must be int, str or None and the step int or None")
    return {name: getattr(value, name) for name in _BOUNDS}


def _decode_slice(node: Mapping[str, Any], dec: Decoding, path: str) -> slice:
    bounds = [node.get(name) for name in _BOUNDS]
    if not _valid_bounds(*bounds) or bounds[2] == 0:
        raise fail(path, f"invalid slice bounds {preview(bounds, 120)}")
    return slice(*bounds)


#: bool, sized ints/uints/floats, unicode strings and object: what fitted state uses.
_DTYPE_STR = re.compile(r"^(\|b1|[<>|][iu][1248]|[<>][f][248]|\|O|[<>]U\d{1,7})$")


def _encode_dtype(value: np.dtype, enc: Encoding, path: str) -> dict[str, Any]:
    if not _DTYPE_STR.match(value.str) or value.names is not None:
        raise UnsupportedTypeError(path, f"numpy dtype {value}", "only bool, numeric, str and object dtypes")
    return {"v": value.str}


def _decode_dtype(node: Mapping[str, Any], dec: Decoding, path: str) -> np.dtype:
    v = node["v"]
    if not _DTYPE_STR.match(v):
        raise fail(path, f"dtype {preview(v, 40)} is not allowed")
    return np.dtype(v)


SLICE = register_handler(Handler("slice", (slice,), _encode_slice, _decode_slice,
                                 {name: (int, str, NULL) for name in _BOUNDS}))
DTYPE = register_handler(Handler("dtype", (np.dtype,), _encode_dtype, _decode_dtype, {"v": (str,)}))


def _encode_set(value: set | frozenset, enc: Encoding, path: str) -> dict[str, Any]:
    items = list(value)
    with contextlib.suppress(TypeError):  # items of kinds that do not compare keep the set's own order
        items.sort()
    return {"frozen": type(value) is frozenset, "v": [enc.value(v, join(path, i), 1) for i, v in enumerate(items)]}


def _decode_set(node: Mapping[str, Any], dec: Decoding, path: str) -> set | frozenset:
    items = [dec.value(v, join(path, i), 1) for i, v in enumerate(node["v"])]
    try:
        out = set(items)
    except TypeError:
        raise fail(path, "a set holds only hashable values") from None
    if len(out) != len(items):
        raise fail(path, "a set holds each value once")
    return frozenset(out) if node["frozen"] else out


SET = register_handler(Handler("set", (set, frozenset), _encode_set, _decode_set, {"frozen": (bool,), "v": (list,)}))

#: Most values a stored ``range`` may hold: more candidates than any search is run over.
MAX_RANGE = 2**20


def _encode_range(value: range, enc: Encoding, path: str) -> dict[str, Any]:
    if len(value) > MAX_RANGE or not all(MIN_INT <= getattr(value, b) <= MAX_INT for b in _BOUNDS):
        raise UnsupportedTypeError(path, "range", f"a stored range holds at most {MAX_RANGE} values, with 64-bit "
                                                  "bounds (a list of the values works too)")
    return {name: getattr(value, name) for name in _BOUNDS}


def _decode_range(node: Mapping[str, Any], dec: Decoding, path: str) -> range:
    bounds = [node[name] for name in _BOUNDS]
    if bounds[2] == 0:  # the fields are ints of 64 bits at most: the decoder checked them
        raise fail(path, f"invalid range bounds {preview(bounds, 120)}")
    value = range(*bounds)
    if len(value) > MAX_RANGE:
        raise fail(path, f"a range of {len(value)} values; at most {MAX_RANGE} are stored (a later fit of a "
                         "search tries every one)")
    return value


RANGE = register_handler(Handler("range", (range,), _encode_range, _decode_range,
                                 {name: (int,) for name in _BOUNDS}))


#: The units of the date and duration arrays that are stored (NumPy's, from years to nanoseconds).
TIME_UNITS = frozenset(["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns"])


def _encode_datetime(value: np.ndarray, enc: Encoding, path: str) -> dict[str, Any]:
    unit, count = np.datetime_data(value.dtype)
    if count != 1 or unit not in TIME_UNITS:
        raise UnsupportedTypeError(path, f"ndarray of dtype {value.dtype}",
                                   f"date and duration arrays are stored in one of the units {sorted(TIME_UNITS)}")
    ints = np.ascontiguousarray(value).view(value.dtype.newbyteorder("=")).view(np.int64)
    return {"kind": value.dtype.kind, "unit": unit, "v": enc.tensor(ints, path)}


def _decode_datetime(node: Mapping[str, Any], dec: Decoding, path: str) -> np.ndarray:
    kind, unit = node["kind"], node["unit"]
    if kind not in ("M", "m") or unit not in TIME_UNITS:
        raise fail(path, f"date array kind {preview(kind, 8)} / unit {preview(unit, 8)} is not allowed "
                         f"(kind 'M' or 'm', unit one of {sorted(TIME_UNITS)})")
    ints = tensor_field(dec, node, "v", path, "i")
    if ints.dtype != np.int64:
        raise fail(path, f"a date array is stored as int64, found {ints.dtype}")
    return ints.view(f"{kind}8[{unit}]")


#: Found by the encoder from an array's dtype (kinds 'M' and 'm'), not by a type.
DATETIME = register_handler(Handler("datetime", (), _encode_datetime, _decode_datetime,
                                    {"kind": (str,), "unit": (str,), "v": TENSOR}))
