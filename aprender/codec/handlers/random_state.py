"""numpy.random.RandomState: the MT19937 state as a uint32 key tensor and scalars."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join
from aprender.codec.handlers._base import TENSOR, Handler, register_handler, tensor_field

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__: list[str] = []


def _encode_random_state(value: np.random.RandomState, enc: Encoding, path: str) -> dict[str, Any]:
    name, keys, pos, has_gauss, cached = value.get_state(legacy=True)
    return {
        "bit_generator": name,
        "keys": enc.tensor(np.asarray(keys, dtype=np.uint32), join(path, "keys")),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }


def _decode_random_state(node: Mapping[str, Any], dec: Decoding, path: str) -> np.random.RandomState:
    keys = tensor_field(dec, node, "keys", path, "u")
    pos, has_gauss, cached = node["pos"], node["has_gauss"], node["cached_gaussian"]
    if node["bit_generator"] != "MT19937" or keys.shape != (624,) or keys.dtype != np.uint32:
        raise fail(path, "RandomState must be MT19937 with 624 uint32 keys")
    if not 0 <= pos <= 624 or has_gauss not in (0, 1):
        raise fail(path, "invalid RandomState position or gaussian cache")
    rs = np.random.RandomState()
    rs.set_state(("MT19937", keys, pos, has_gauss, cached))
    return rs


register_handler(Handler("random_state", (np.random.RandomState,), _encode_random_state, _decode_random_state,
                          {"bit_generator": (str,), "keys": TENSOR, "pos": (int,), "has_gauss": (int,),
                           "cached_gaussian": (float,)}))
