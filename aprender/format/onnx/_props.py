"""aprender's ``metadata_props`` in an ONNX model, as a reader sees them (private).

Every key starts with ``aprender.``; values are plain strings, JSON where noted
(docs/onnx.md lists them). Writing them (:mod:`aprender.format.onnx._meta`) needs the
codec; reading needs only JSON, so inspecting an .onnx file imports no encoder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from aprender.codec._state import parse_json
from aprender.exceptions import FormatError

__all__ = ["JSON_KEYS", "PREFIX", "read_props"]

PREFIX = "aprender."
#: Keys whose values are JSON; the others are plain strings.
JSON_KEYS = frozenset({"params", "versions", "user", "feature_names_in", "parity"})


def read_props(props: Mapping[str, str]) -> dict[str, Any]:
    """aprender's ``metadata_props`` without the prefix, JSON values parsed.

    A value that is not valid JSON is kept as its string: the file is readable even
    when another tool rewrote its properties.
    """
    out: dict[str, Any] = {}
    for name, value in props.items():
        if not name.startswith(PREFIX):
            continue
        key = name[len(PREFIX):]
        if key in JSON_KEYS:
            with contextlib.suppress(FormatError):  # parse_json: the metadata's depth and size rules
                value = parse_json(value, f"ONNX property '{name}'")
        out[key] = value
    return out
