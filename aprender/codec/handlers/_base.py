"""Named handlers for values that are neither JSON nor plain arrays.

Each handler owns one tag in the metadata tree and knows how to split its values
into tensors plus metadata and how to check and rebuild them. A value whose type has
no handler is refused by the encoder; a tag with no handler is refused by the decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail

if TYPE_CHECKING:
    from aprender.codec._decode import Decoder
    from aprender.codec._encode import Encoder

__all__ = ["ANY", "NULL", "TENSOR", "Fields", "Handler", "for_tag", "for_value", "register_handler", "sub",
           "tensor_field"]

#: A field that may be absent or ``null`` lists ``NULL`` among its JSON types.
NULL: type = type(None)
#: A field holding any value node, decoded further by the handler (``dec.value``).
ANY: tuple[type, ...] = (object,)
#: A tensor reference (``{"__t__": "tensor", ...}``), resolved with :func:`tensor_field`.
TENSOR: tuple[type, ...] = (dict,)
#: Field name -> the JSON types (``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, ``NULL``) it may have.
Fields = Mapping[str, tuple[type, ...]]
_JSON_TYPES = frozenset([str, int, float, bool, list, dict, NULL, object])


@dataclass(frozen=True)
class Handler:
    """Encode/decode pair for one family of Python types.

    ``fields`` declares every field of the tag's nodes and the JSON types each may
    have. The decoder checks a node against it before ``decode`` sees the node, so
    ``decode`` can use every declared field at its declared type; a field that is not
    declared is refused.
    """

    tag: str
    types: tuple[type, ...]
    encode: Callable[[Any, Encoder, str], dict[str, Any]]
    decode: Callable[[Mapping[str, Any], Decoder, str], Any]
    fields: Fields


_HANDLERS: dict[str, Handler] = {}


def register_handler(handler: Handler) -> Handler:
    """Add a handler; a tag can be registered once, with a declaration of its node fields."""
    if handler.tag in _HANDLERS:
        raise ValueError(f"handler tag '{handler.tag}' is already registered")
    if not isinstance(handler.fields, Mapping) or not handler.fields or "__t__" in handler.fields or not all(
        isinstance(kinds, tuple) and kinds and set(kinds) <= _JSON_TYPES for kinds in handler.fields.values()
    ):
        raise ValueError(f"handler '{handler.tag}' must declare its node fields as {{name: (JSON types...)}}")
    _HANDLERS[handler.tag] = handler
    return handler


def for_value(value: Any) -> Handler | None:
    """The handler for ``value``'s type, if any."""
    for handler in _HANDLERS.values():
        if isinstance(value, handler.types):
            return handler
    return None


def for_tag(tag: str) -> Handler | None:
    """The handler that owns ``tag``, if any."""
    return _HANDLERS.get(tag)


def sub(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def tensor_field(dec: Decoder, node: Mapping[str, Any], field: str, path: str, kinds: str) -> np.ndarray:
    ref = node.get(field)
    if not isinstance(ref, dict) or ref.get("__t__") != "tensor":
        raise fail(path, f"'{field}' must be a tensor reference")
    array = dec.tensor(ref, sub(path, field))
    if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds:
        raise fail(path, f"'{field}' has dtype {getattr(array, 'dtype', type(array))}, expected kind {kinds!r}")
    return array
