"""Model files: ModelState <-> bytes, one backend per format, and the format-agnostic verbs.

The formats are the rows of :data:`aprender.extend.FORMATS`; the codec that
turns estimators into states is :mod:`aprender.codec`.

Examples
--------
>>> from aprender.format import Compression, load, save
>>> Compression.ZSTD_DEFAULT.value
'zstd'
"""

import os
import warnings
from typing import Any

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too; each is imported
# on first use: inspecting a GGUF file needs neither the .apr backend nor the codec's encoder.
# load_from_bytes is .apr's deprecated older name of apr.loads, kept for saved code.
_getattr, __dir__, _names = lazy.attach_stub(__name__, __file__)
#: A star import takes the verbs and types, not the backend modules (the ONNX one needs its extra).
__all__ = sorted(set(_names) - {os.path.splitext(entry)[0] for entry in os.listdir(os.path.dirname(__file__))})

#: The codec's names this package used to re-export; each has one home now, aprender.codec.
_CODEC_NAMES = frozenset({"ModelState", "ModelType", "from_state", "register_estimator", "to_state"})


def __getattr__(name: str) -> Any:
    if name in _CODEC_NAMES:
        import aprender.codec

        warnings.warn(f"aprender.format.{name} is deprecated; import it from aprender.codec", DeprecationWarning,
                      stacklevel=2)
        return getattr(aprender.codec, name)
    return _getattr(name)
