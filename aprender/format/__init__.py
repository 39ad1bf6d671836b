"""Model files: ModelState <-> bytes, one backend per format, and the format-agnostic verbs.

The formats are the rows of :data:`aprender.extend.FORMATS`; the codec that
turns estimators into states is :mod:`aprender.codec`.

Examples
--------
>>> from aprender.format import Compression, load, save
>>> Compression.ZSTD_DEFAULT.value
'zstd'
"""

import warnings
from typing import TYPE_CHECKING, Any

from aprender._lazy import lazy_attributes

if TYPE_CHECKING:
    from aprender.format._api import inspect, load, save, validate
    from aprender.format._info import ModelInfo, TensorInfo, ValidationReport
    from aprender.format.apr import (
        load_as_recipient,
        load_encrypted,
        load_verified,
        save_encrypted,
        save_for_recipient,
        save_signed,
    )
    from aprender.format.apr._options import Compression, SaveOptions

__all__ = [
    "Compression",
    "ModelInfo",
    "SaveOptions",
    "TensorInfo",
    "ValidationReport",
    "inspect",
    "load",
    "load_as_recipient",
    "load_encrypted",
    "load_verified",
    "save",
    "save_encrypted",
    "save_for_recipient",
    "save_signed",
    "validate",
]

# Imported on first use: inspecting a GGUF file needs neither the .apr backend nor the codec's encoder.
# load_from_bytes is .apr's deprecated older name of apr.loads, kept for saved code.
_getattr, __dir__ = lazy_attributes("aprender.format", {
    "_api": ["inspect", "load", "save", "validate"],
    "_info": ["ModelInfo", "TensorInfo", "ValidationReport"],
    "apr": ["load_as_recipient", "load_encrypted", "load_from_bytes", "load_verified", "save_encrypted",
            "save_for_recipient", "save_signed"],
    "apr._options": ["Compression", "SaveOptions"],
}, ["apr", "gguf", "onnx", "quantize", "safetensors"])

#: The codec's names this package used to re-export; each has one home now, aprender.codec.
_CODEC_NAMES = frozenset({"ModelState", "ModelType", "from_state", "register_estimator", "to_state"})


def __getattr__(name: str) -> Any:
    if name in _CODEC_NAMES:
        import aprender.codec

        warnings.warn(f"aprender.format.{name} is deprecated; import it from aprender.codec", DeprecationWarning,
                      stacklevel=2)
        return getattr(aprender.codec, name)
    return _getattr(name)
