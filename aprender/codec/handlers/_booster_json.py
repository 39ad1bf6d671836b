"""JSON in and out of the boosters' own model formats, by orjson where it gives what ``json`` gives.

XGBoost's model is read as JSON at save and CatBoost's is read at save and written at
load; for a model of hundreds of trees that JSON is most of the time. orjson (the
``fast`` extra) parses and writes the same values several times faster: floats are
correctly rounded both ways, and text it would write differently (non-ASCII, which
``json.dumps`` escapes) or input it refuses (NaN, integers past 64 bits, lone
surrogates) goes to the standard library.
"""

from __future__ import annotations

import json
from typing import Any

try:  # the ``fast`` extra
    import orjson as _orjson
except ImportError:  # pragma: no cover - tests take the standard library's path by setting _orjson to None
    _orjson = None

__all__ = ["dumps", "loads"]


def loads(raw: bytes) -> Any:
    """``json.loads(raw)``."""
    if _orjson is not None:
        try:
            return _orjson.loads(raw)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(raw)


def dumps(value: Any) -> str:
    """The JSON text of ``value`` (finite numbers only), with the values ``json.dumps`` gives, in ASCII."""
    if _orjson is not None:
        try:
            raw = _orjson.dumps(value)
        except _orjson.JSONEncodeError:  # e.g. a lone surrogate in a feature name
            pass
        else:
            if raw.isascii():
                return raw.decode("ascii")
    return json.dumps(value, allow_nan=False)
