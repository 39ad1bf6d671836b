"""The ``pandas_missing`` handler: pandas' missing-value singletons ``pd.NA`` and ``pd.NaT``.

A DataFrame's nullable columns (``Int64``, ``boolean``, ``string``) mark a missing value
with ``pd.NA``, and imputers that fill them are built with
``SimpleImputer(missing_values=pd.NA)``. The singleton is stored by name,
``{"__t__": "pandas_missing", "v": "NA"}`` (or ``"NaT"``), and loading returns pandas'
own object. This module, and with it pandas, is imported only for such a value or a file that names one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["PANDAS_MISSING"]

_NAMES = ("NA", "NaT")

try:  # this module is imported for a value of pandas' types, or for a file that names the tag
    import pandas
except ImportError:  # pragma: no cover - a file naming pd.NA read where pandas is missing
    pandas = None


def _singletons() -> dict[str, Any]:
    if pandas is None:
        raise ImportError("pandas")
    return {name: getattr(pandas, name) for name in _NAMES}


_TYPES = () if pandas is None else tuple(type(v) for v in _singletons().values())


def _encode_missing(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    for name, singleton in _singletons().items():
        if value is singleton:
            return {"v": name}
    raise UnsupportedTypeError(path, type(value).__name__, "only pandas.NA and pandas.NaT are stored")


def _decode_missing(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    name = node["v"]
    if name not in _NAMES:
        raise fail(path, f"pandas missing value {preview(name, 40)} is not one of {', '.join(_NAMES)}")
    try:
        return _singletons()[name]
    except ImportError:
        raise fail(path, f"the model holds pandas.{name}: install pandas to load it") from None


PANDAS_MISSING = register_handler(Handler("pandas_missing", _TYPES, _encode_missing, _decode_missing,
                                          {"v": (str,)}))
