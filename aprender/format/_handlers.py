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
import scipy.sparse as sp

from aprender.exceptions import FormatError, UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.format._decode import Decoder
    from aprender.format._encode import Encoder

__all__ = ["Handler", "for_tag", "for_value", "register_handler"]


@dataclass(frozen=True)
class Handler:
    """Encode/decode pair for one family of Python types."""

    tag: str
    types: tuple[type, ...]
    encode: Callable[[Any, Encoder, str], dict[str, Any]]
    decode: Callable[[Mapping[str, Any], Decoder, str], Any]


_HANDLERS: dict[str, Handler] = {}


def register_handler(handler: Handler) -> Handler:
    """Add a handler; a tag can be registered once."""
    if handler.tag in _HANDLERS:
        raise ValueError(f"handler tag '{handler.tag}' is already registered")
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


def _fail(path: str, message: str) -> FormatError:
    return FormatError(f"at '{path or '<model>'}': {message}")


def _sub(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _array(dec: Decoder, node: Mapping[str, Any], field: str, path: str, kinds: str) -> np.ndarray:
    ref = node.get(field)
    if not isinstance(ref, dict) or ref.get("__t__") != "tensor":
        raise _fail(path, f"'{field}' must be a tensor reference")
    array = dec.tensor(ref, _sub(path, field))
    if not isinstance(array, np.ndarray) or array.dtype.kind not in kinds:
        raise _fail(path, f"'{field}' has dtype {getattr(array, 'dtype', type(array))}, expected kind {kinds!r}")
    return array


# -- scipy.sparse CSR / CSC ------------------------------------------------------

_SPARSE = {
    ("csr", False): sp.csr_matrix,
    ("csc", False): sp.csc_matrix,
    ("csr", True): sp.csr_array,
    ("csc", True): sp.csc_array,
}


def _encode_sparse(value: Any, enc: Encoder, path: str) -> dict[str, Any]:
    fmt = value.format
    if fmt not in ("csr", "csc"):
        raise UnsupportedTypeError(path, type(value).__name__, "only CSR and CSC sparse matrices are stored")
    return {
        "format": fmt,
        "array": isinstance(value, sp.sparray),
        "shape": [int(d) for d in value.shape],
        "data": enc.tensor(value.data, _sub(path, "data")),
        "indices": enc.tensor(value.indices, _sub(path, "indices")),
        "indptr": enc.tensor(value.indptr, _sub(path, "indptr")),
    }


def check_compressed(indptr: np.ndarray, indices: np.ndarray, n_major: int, n_minor: int, path: str) -> None:
    """Validate CSR/CSC index arrays before scipy ever sees them."""
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        raise _fail(path, f"indptr has shape {indptr.shape}, expected ({n_major + 1},)")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise _fail(path, "indptr must start at 0 and never decrease")
    if indices.ndim != 1 or indptr[-1] != indices.shape[0]:
        raise _fail(path, f"indptr ends at {indptr[-1]} but there are {indices.shape[0]} indices")
    if indices.size and (indices.min() < 0 or indices.max() >= n_minor):
        raise _fail(path, f"sparse indices must lie in [0, {n_minor})")


def _decode_sparse(node: Mapping[str, Any], dec: Decoder, path: str) -> Any:
    key = (node.get("format"), node.get("array"))
    cls = _SPARSE.get(key) if isinstance(key[1], bool) else None
    shape = node.get("shape")
    valid_shape = isinstance(shape, list) and len(shape) == 2 and all(type(d) is int and d >= 0 for d in shape)
    if cls is None or not valid_shape:
        raise _fail(path, f"invalid sparse matrix description {key!r} shape={shape!r}")
    data = _array(dec, node, "data", path, "biuf")
    indices = _array(dec, node, "indices", path, "iu")
    indptr = _array(dec, node, "indptr", path, "iu")
    n_major, n_minor = (shape[0], shape[1]) if key[0] == "csr" else (shape[1], shape[0])
    check_compressed(indptr, indices, n_major, n_minor, path)
    if data.shape != indices.shape:
        raise _fail(path, f"sparse data has shape {data.shape}, indices {indices.shape}")
    return cls((data, indices, indptr), shape=tuple(shape))


register_handler(Handler("sparse", (sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array, sp.spmatrix, sp.sparray),
                         _encode_sparse, _decode_sparse))


# -- numpy.random.RandomState ---------------------------------------------------


def _encode_random_state(value: np.random.RandomState, enc: Encoder, path: str) -> dict[str, Any]:
    name, keys, pos, has_gauss, cached = value.get_state(legacy=True)
    return {
        "bit_generator": name,
        "keys": enc.tensor(np.asarray(keys, dtype=np.uint32), _sub(path, "keys")),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def _decode_random_state(node: Mapping[str, Any], dec: Decoder, path: str) -> np.random.RandomState:
    keys = _array(dec, node, "keys", path, "u")
    pos, has_gauss, cached = node.get("pos"), node.get("has_gauss"), node.get("cached_gaussian")
    if node.get("bit_generator") != "MT19937" or keys.shape != (624,) or keys.dtype != np.uint32:
        raise _fail(path, "RandomState must be MT19937 with 624 uint32 keys")
    if type(pos) is not int or not 0 <= pos <= 624 or has_gauss not in (0, 1) or type(cached) is not float:
        raise _fail(path, "invalid RandomState position or gaussian cache")
    rs = np.random.RandomState()
    rs.set_state(("MT19937", keys, pos, has_gauss, cached))
    return rs


register_handler(Handler("random_state", (np.random.RandomState,), _encode_random_state, _decode_random_state))
