"""What the ONNX backend can do and the options its export takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aprender.format._formats import Capabilities

__all__ = ["CAPABILITIES", "ExportOptions"]


@dataclass(frozen=True)
class ExportOptions:
    """The keywords of ``save_file`` / ``dumps`` / :func:`~aprender.format.onnx.to_onnx` after the model.

    ``X`` is a few rows of input (a DataFrame types one input per column), ``dtype``
    the graph's float type (None: float32, or float64 for the models float32 cannot hold);
    the others are :func:`~aprender.format.onnx.to_onnx`'s.
    """

    X: Any = None
    target_opset: int | Mapping[str, int] | None = None
    dtype: Any = None
    options: Mapping[Any, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    verify: bool = True
    tolerance: float | Mapping[str, float] | None = None


#: An export for ONNX Runtime: nothing reads it back into a model.
CAPABILITIES = Capabilities(loads=False, options=ExportOptions)
