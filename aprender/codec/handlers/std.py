"""Named handlers for two standard value types found in fitted preprocessing state.

- ``slice``: ColumnTransformer's ``output_indices_`` and slice column selections
  (integer positions or, for DataFrames, column-name bounds).
- ``numpy.dtype``: SimpleImputer's ``_fit_dtype`` / ``_fill_dtype``.

Both are pure metadata (no tensors). The dtype handler rebuilds only plain numeric,
string and object dtypes spelled in numpy's ``dtype.str`` form; anything else in a
file is refused rather than handed to ``numpy.dtype``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.handlers._base import NULL, Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoder, Encoder

__all__ = ["DTYPE", "SLICE"]

_BOUNDS = ("start", "stop", "step")


def _valid_bounds(start: Any, stop: Any, step: Any) -> bool:
    return all(b is None or type(b) in (int, str) for b in (start, stop)) and (step is None or type(step) is int)


def _encode_slice(value: slice, enc: Encoder, path: str) -> dict[str, Any]:
    if not _valid_bounds(value.start, value.stop, value.step):
        raise UnsupportedTypeError(path, "slice", "slice bounds must be int, str or None and the step int or None")
    return {name: getattr(value, name) for name in _BOUNDS}


def _decode_slice(node: Mapping[str, Any], dec: Decoder, path: str) -> slice:
    bounds = [node.get(name) for name in _BOUNDS]
    if not _valid_bounds(*bounds) or bounds[2] == 0:
        raise fail(path, f"invalid slice bounds {preview(bounds, 120)}")
    return slice(*bounds)


#: bool, sized ints/uints/floats, unicode strings and object: what fitted state uses.
_DTYPE_STR = re.compile(r"^(\|b1|[<>|][iu][1248]|[<>][f][248]|\|O|[<>]U\d{1,7})$")


def _encode_dtype(value: np.dtype, enc: Encoder, path: str) -> dict[str, Any]:
    if not _DTYPE_STR.match(value.str) or value.names is not None:
        raise UnsupportedTypeError(path, f"numpy dtype {value}", "only bool, numeric, str and object dtypes")
    return {"v": value.str}


def _decode_dtype(node: Mapping[str, Any], dec: Decoder, path: str) -> np.dtype:
    v = node["v"]
    if not _DTYPE_STR.match(v):
        raise fail(path, f"dtype {preview(v, 40)} is not allowed")
    return np.dtype(v)


SLICE = register_handler(Handler("slice", (slice,), _encode_slice, _decode_slice,
                                 {name: (int, str, NULL) for name in _BOUNDS}))
DTYPE = register_handler(Handler("dtype", (np.dtype,), _encode_dtype, _decode_dtype, {"v": (str,)}))
