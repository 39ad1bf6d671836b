"""Named handler for ``numpy.random.Generator`` (HistGradientBoosting's feature-subsampling rng).

A PCG64 generator's state is two 128-bit integers plus a buffered 32-bit half-word.
They are stored as hexadecimal strings in metadata (JSON numbers cannot carry 128
bits portably) and restored through the bit generator's own ``state`` setter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__: list[str] = []

_BIT_GENERATORS = {"PCG64": np.random.PCG64, "PCG64DXSM": np.random.PCG64DXSM}
_HEX128 = re.compile(r"^[0-9a-f]{32}$")


def _encode_generator(value: np.random.Generator, enc: Encoding, path: str) -> dict[str, Any]:
    state = value.bit_generator.state
    name = state["bit_generator"]
    if _BIT_GENERATORS.get(name) is not type(value.bit_generator):
        raise UnsupportedTypeError(path, f"Generator({name})", "only PCG64 and PCG64DXSM generators are stored")
    return {
        "bit_generator": name,
        "state": f"{state['state']['state']:032x}",
        "inc": f"{state['state']['inc']:032x}",
        "has_uint32": int(state["has_uint32"]),
        "uinteger": int(state["uinteger"]),
    }


def _decode_generator(node: Mapping[str, Any], dec: Decoding, path: str) -> np.random.Generator:
    name, has, word = node["bit_generator"], node["has_uint32"], node["uinteger"]
    words = [node["state"], node["inc"]]
    if name not in _BIT_GENERATORS or not all(_HEX128.match(w) for w in words):
        raise fail(path, "a Generator needs a PCG64 or PCG64DXSM bit generator and two 32-digit hex words")
    if has not in (0, 1) or not 0 <= word < 2**32:
        raise fail(path, "invalid Generator has_uint32 / uinteger")
    bit_generator = _BIT_GENERATORS[name]()
    bit_generator.state = {
        "bit_generator": name,
        "state": {"state": int(words[0], 16), "inc": int(words[1], 16)},
        "has_uint32": has,
        "uinteger": word,
    }
    return np.random.Generator(bit_generator)


register_handler(Handler("numpy_generator", (np.random.Generator,), _encode_generator, _decode_generator,
                          {"bit_generator": (str,), "state": (str,), "inc": (str,), "has_uint32": (int,),
                           "uinteger": (int,)}))
