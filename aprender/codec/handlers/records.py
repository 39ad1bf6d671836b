"""NumPy structured arrays of numeric fields (HDBSCAN's single-linkage tree): one tensor per field.

Only packed records of numeric scalar fields are stored, so that rebuilding the dtype
from the field list gives back exactly the array's dtype. The decoder checks the field
names and dtypes against that rule and every column against the declared shape before
it allocates the record array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender._limits import checked_shape
from aprender.codec._checks import fail
from aprender.codec._nodes import TENSOR_KINDS, join, preview
from aprender.codec.handlers._base import Handler, register_handler, tensor_field
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["RECORDS"]

_MAX_FIELDS = 64
_MAX_NAME = 64


def _packed(fields: list[tuple[str, str]]) -> np.dtype:
    return np.dtype([(name, np.dtype(dtype)) for name, dtype in fields])


def _encode(value: np.ndarray, enc: Encoding, path: str) -> dict[str, Any]:
    names = value.dtype.names
    fields = [(name, value.dtype.fields[name][0].str) for name in names]
    plain = all(value.dtype.fields[n][0].kind in TENSOR_KINDS and value.dtype.fields[n][0].shape == () for n in names)
    if not plain or len(names) > _MAX_FIELDS or _packed(fields) != value.dtype:
        raise UnsupportedTypeError(path, f"ndarray of dtype {value.dtype}",
                                   "only packed records of numeric scalar fields are stored")
    return {
        "shape": [int(d) for d in value.shape],
        "fields": [list(f) for f in fields],
        "columns": [enc.tensor(np.ascontiguousarray(value[name]), join(path, name)) for name in names],
    }


def _decode(node: Mapping[str, Any], dec: Decoding, path: str) -> np.ndarray:
    fields, columns = node["fields"], node["columns"]
    shape = checked_shape(node["shape"], path)
    if not 0 < len(fields) <= _MAX_FIELDS or len(columns) != len(fields):
        raise fail(path, f"a record array needs 1 to {_MAX_FIELDS} fields, each with one column")
    names = []
    for field in fields:
        if not (isinstance(field, list) and len(field) == 2 and all(type(x) is str for x in field)
                and 0 < len(field[0]) <= _MAX_NAME and field[1] in _DTYPES):
            raise fail(path, f"invalid record field {preview(field, 80)}")
        names.append(field[0])
    if len(set(names)) != len(names):
        raise fail(path, "record field names must be unique")
    # Every column is a tensor of the file, checked before the record array is allocated.
    resolved = []
    for (name, dtype), ref in zip(fields, columns, strict=True):
        column = tensor_field(dec, {name: ref}, name, path, "biuf")
        if column.shape != shape or column.dtype != np.dtype(dtype):
            raise fail(join(path, name), f"column has {column.dtype} {list(column.shape)}, "
                                        f"expected {dtype} {list(shape)}")
        resolved.append(column)
    out = np.empty(shape, dtype=_packed([tuple(f) for f in fields]))
    for name, column in zip(names, resolved, strict=True):
        out[name] = column
    return out


_DTYPES = frozenset(np.dtype(f"{order}{kind}").str for order in "<|" for kind in
                    ("b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"))

RECORDS = register_handler(Handler("records", (), _encode, _decode,
                                   {"shape": (list,), "fields": (list,), "columns": (list,)}))
