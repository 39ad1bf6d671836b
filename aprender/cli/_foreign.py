"""Model files no aprender wrote: raw tensors of any SafeTensors or GGUF file.

``import`` turns such a file into an .apr of model type Custom: the tensors as they
are (GGML block tensors of GGUF, which aprender's model formats do not hold, are
dequantized to float32 by ``gguf.quants``) and a ``source`` record of where they came
from. The backends read such files (``safetensors.load_tensors``, ``gguf.load_tensors``,
and ``inspect_file`` of both); this module only shapes what the CLI keeps of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aprender import codec
from aprender.format import ModelInfo

if TYPE_CHECKING:
    import numpy as np

    from aprender.codec import ModelState

__all__ = ["block_bits", "custom_state", "foreign_source", "is_raw"]


def custom_state(tensors: dict[str, np.ndarray], source: dict[str, Any]) -> ModelState:
    """A ModelState of raw tensors (model type Custom, no estimator) with its ``source`` record."""
    import numpy as np

    tensors = {name: np.ascontiguousarray(array) for name, array in sorted(tensors.items())}
    return codec.ModelState(tensors=tensors, meta={"schema": codec.SCHEMA_VERSION,
                                                   "model_type": int(codec.ModelType.CUSTOM),
                                                   "source": source})


def is_raw(state: ModelState) -> bool:
    """The state holds tensors but no estimator (imported, or read from a foreign file)."""
    return not isinstance(state.meta.get("model"), dict)


def foreign_source(info: ModelInfo) -> dict[str, Any]:
    """The ``source`` record of a file another tool wrote: its format, metadata and any block tensors dequantized."""
    source = {"format": info.format, "metadata": info.extra.get("other_metadata", info.metadata)}
    dequantized = {t.name: t.quantization for t in info.tensors if t.quantization}
    if dequantized:
        source["dequantized"] = dequantized
    return source


def block_bits(qtype: str) -> float | None:
    """Bits per weight of a GGML block format (``q4_0`` -> 4.5), None if unknown."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, size = GGML_QUANT_SIZES[GGMLQuantizationType[qtype.upper()]]
    except KeyError:
        return None
    return size * 8 / block
