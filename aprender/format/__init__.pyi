from . import apr as apr, gguf as gguf, onnx as onnx, quantize as quantize, safetensors as safetensors
from ._api import inspect as inspect, load as load, save as save, validate as validate
from ._info import ModelInfo as ModelInfo, TensorInfo as TensorInfo, ValidationReport as ValidationReport
from .apr import (
    load_as_recipient as load_as_recipient,
    load_encrypted as load_encrypted,
    load_from_bytes as load_from_bytes,
    load_verified as load_verified,
    save_encrypted as save_encrypted,
    save_for_recipient as save_for_recipient,
    save_signed as save_signed,
)
from .apr._options import Compression as Compression, SaveOptions as SaveOptions
