"""The ``column_selector`` handler: ``make_column_selector`` of a ColumnTransformer's columns.

A selector is three settings that ``ColumnTransformer.fit`` hands to pandas,
``df.select_dtypes(include=..., exclude=...)`` and ``columns.str.contains(pattern)``;
the fitted ColumnTransformer keeps the column names it selected, so ``transform`` never
calls it again, and only a new ``fit`` of a loaded model does. It is stored as::

    {"__t__": "column_selector", "pattern": "^cat_" | null,
     "dtype_include": spec, "dtype_exclude": spec}

where a spec is ``null``, one dtype name, a list of dtype names, or a ``tuple`` node of
them. A dtype name is one entry of :data:`DTYPES`, a table written here: the strings
pandas reads (``"str:number"``, ``"str:category"``, ...), the type objects users pass
(``"type:numpy.number"``, ``"type:builtins.object"``) and pandas' own dtype instances
(``"pandas:CategoricalDtype"``, ``"pandas:Int64Dtype"``). A name outside the table is
refused; nothing is imported or looked up by a name read from a file.

The pattern is a regular expression pandas runs on the user's column names at that
``fit``; it follows the one regex rule of :mod:`aprender.codec._regex`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.compose import make_column_selector

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec._regex import MAX_PATTERN, MAX_REPETITIONS, check_pattern
from aprender.codec.handlers._base import NULL, Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["COLUMN_SELECTOR", "DTYPES", "MAX_PATTERN", "MAX_REPETITIONS", "MAX_SPECS", "check_pattern"]

#: Most dtype names in one spec.
MAX_SPECS = 32

#: Strings ``DataFrame.select_dtypes`` reads as kinds of columns.
_STRINGS = (
    "number", "object", "category", "bool", "boolean", "string", "str", "datetime", "datetimetz", "datetime64",
    "datetime64[ns]", "timedelta", "timedelta64", "timedelta64[ns]", "float", "int", "integer", "floating",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float32", "Float64",
)
#: Type objects users pass for a kind of columns: (module, name) -> the object.
_TYPES: dict[str, type] = {
    **{f"builtins.{t.__name__}": t for t in (object, bool, int, float, str)},
    # keyed by the type's own name, which is how a value is looked up (numpy 2 names np.bool_ "bool")
    **{f"numpy.{t.__name__}": t for t in (
        np.number, np.integer, np.signedinteger, np.unsignedinteger, np.floating, np.complexfloating, np.bool_,
        np.object_, np.datetime64, np.timedelta64, np.float16, np.float32, np.float64, np.int8, np.int16,
        np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)},
    # both spellings load, whichever NumPy wrote the file
    "numpy.bool": np.bool_, "numpy.bool_": np.bool_,
}
#: pandas dtype classes whose default instance users pass (pandas is imported only to rebuild one).
_PANDAS = (
    "CategoricalDtype", "StringDtype", "BooleanDtype", "Int8Dtype", "Int16Dtype", "Int32Dtype", "Int64Dtype",
    "UInt8Dtype", "UInt16Dtype", "UInt32Dtype", "UInt64Dtype", "Float32Dtype", "Float64Dtype",
)


def _pandas_dtype(name: str) -> Any:
    import pandas  # not a dependency of aprender: a selector that names a pandas dtype was fitted with it

    return getattr(pandas, name)()


#: Every dtype name a file may hold -> a function that returns the value it stands for.
DTYPES: dict[str, Callable[[], Any]] = {
    **{f"str:{s}": (lambda s=s: s) for s in _STRINGS},
    **{f"type:{k}": (lambda t=t: t) for k, t in _TYPES.items()},
    **{f"pandas:{k}": (lambda k=k: _pandas_dtype(k)) for k in _PANDAS},
}


def _dtype_name(value: Any) -> str | None:
    """The :data:`DTYPES` name of one dtype given to a selector, or ``None``."""
    if type(value) is str:
        return f"str:{value}" if value in _STRINGS else None
    if isinstance(value, type):
        name = f"{'builtins' if value.__module__ == 'builtins' else 'numpy'}.{value.__name__}"
        return f"type:{name}" if _TYPES.get(name) is value else None
    name = type(value).__name__
    if name in _PANDAS and type(value).__module__.partition(".")[0] == "pandas":
        default = _pandas_dtype(name)
        # Only the default instance: not a CategoricalDtype with its categories, nor another string storage.
        return f"pandas:{name}" if type(value) is type(default) and repr(value) == repr(default) else None
    return None


def _encode_spec(value: Any, enc: Encoding, path: str) -> Any:
    if value is None:
        return None
    items = list(value) if type(value) in (list, tuple) else [value]
    if not 0 < len(items) <= MAX_SPECS:
        raise UnsupportedTypeError(path, "make_column_selector dtypes", f"a stored selector names 1 to {MAX_SPECS}")
    names = [_dtype_name(v) for v in items]
    for item, name in zip(items, names, strict=True):
        if name is None:
            raise UnsupportedTypeError(path, f"make_column_selector dtype {item!r}"[:200],
                                       "a stored selector names only the dtypes of the table DTYPES in "
                                       "aprender/codec/handlers/column_selector.py (strings such as 'number' or "
                                       "'category', numpy's scalar types, pandas' default dtype instances)")
    if type(value) is list:
        return names
    if type(value) is tuple:
        return enc.value(tuple(names), path, 1)
    return names[0]


def _decode_spec(node: Any, dec: Decoding, path: str) -> Any:
    if node is None:
        return None
    if type(node) is dict:
        if node.get("__t__") != "tuple":
            raise fail(path, "a selector's dtypes must be a name, a list or a tuple of names")
        names = dec.value(node, path, 1)
    else:
        names = node
    single = type(names) is str
    items = [names] if single else names
    if not isinstance(items, (list, tuple)) or not 0 < len(items) <= MAX_SPECS:
        raise fail(path, f"a selector's dtypes must be 1 to {MAX_SPECS} names")
    values = []
    for name in items:
        factory = DTYPES.get(name) if type(name) is str else None
        if factory is None:
            raise fail(path, f"dtype {preview(name, 60)} is not among the dtypes a selector may name")
        values.append(factory())
    if single:
        return values[0]
    return tuple(values) if type(items) is tuple else values


def _encode_selector(value: make_column_selector, enc: Encoding, path: str) -> dict[str, Any]:
    if type(value) is not make_column_selector:
        raise UnsupportedTypeError(path, f"{type(value).__module__}.{type(value).__qualname__}",
                                   "only scikit-learn's own make_column_selector is stored")
    extra = set(vars(value)) - {"pattern", "dtype_include", "dtype_exclude"}
    if extra:
        raise UnsupportedTypeError(path, "make_column_selector", f"unexpected attributes {sorted(extra)}")
    if value.pattern is not None:
        why = check_pattern(value.pattern, on_text=False)
        if why is not None:
            raise UnsupportedTypeError(join(path, "pattern"), "make_column_selector pattern", why)
    return {
        "pattern": value.pattern,
        "dtype_include": _encode_spec(value.dtype_include, enc, join(path, "dtype_include")),
        "dtype_exclude": _encode_spec(value.dtype_exclude, enc, join(path, "dtype_exclude")),
    }


def _decode_selector(node: Mapping[str, Any], dec: Decoding, path: str) -> make_column_selector:
    pattern = node.get("pattern")
    if pattern is not None:
        why = check_pattern(pattern, on_text=False)
        if why is not None:
            raise fail(join(path, "pattern"), why)
    return make_column_selector(
        pattern,
        dtype_include=_decode_spec(node.get("dtype_include"), dec, join(path, "dtype_include")),
        dtype_exclude=_decode_spec(node.get("dtype_exclude"), dec, join(path, "dtype_exclude")),
    )


_SPEC = (str, list, dict, NULL)
COLUMN_SELECTOR = register_handler(Handler(
    "column_selector", (make_column_selector,), _encode_selector, _decode_selector,
    {"pattern": (str, NULL), "dtype_include": _SPEC, "dtype_exclude": _SPEC}))
