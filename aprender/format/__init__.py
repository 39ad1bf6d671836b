"""Model files: the codec, the allow-list and the format backends.

Examples
--------
>>> from aprender.format import ModelType, load, save
>>> ModelType.LINEAR_REGRESSION.value
1
"""

from typing import TYPE_CHECKING

from aprender._lazy import lazy_attributes

if TYPE_CHECKING:
    from aprender.codec import ModelState, ModelType, from_state, register_estimator, to_state
    from aprender.format._api import inspect, load, save, validate
    from aprender.format._info import ModelInfo, TensorInfo, ValidationReport
    from aprender.format.apr import (
        load_as_recipient,
        load_encrypted,
        load_from_bytes,
        load_verified,
        save_encrypted,
        save_for_recipient,
        save_signed,
    )
    from aprender.format.apr._options import Compression, SaveOptions

__all__ = [
    "Compression",
    "ModelInfo",
    "ModelState",
    "ModelType",
    "SaveOptions",
    "TensorInfo",
    "ValidationReport",
    "from_state",
    "inspect",
    "load",
    "load_as_recipient",
    "load_encrypted",
    "load_from_bytes",
    "load_verified",
    "register_estimator",
    "save",
    "save_encrypted",
    "save_for_recipient",
    "save_signed",
    "to_state",
    "validate",
]

# Imported on first use: inspecting a GGUF file needs neither the .apr backend nor the codec's encoder.
__getattr__, __dir__ = lazy_attributes("aprender.format", {
    "aprender.codec": ["ModelState", "ModelType", "from_state", "register_estimator", "to_state"],
    "_api": ["inspect", "load", "save", "validate"],
    "_info": ["ModelInfo", "TensorInfo", "ValidationReport"],
    "apr": ["load_as_recipient", "load_encrypted", "load_from_bytes", "load_verified", "save_encrypted",
            "save_for_recipient", "save_signed"],
    "apr._options": ["Compression", "SaveOptions"],
}, ["apr", "gguf", "onnx", "quantize", "safetensors"])
