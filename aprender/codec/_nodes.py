"""The shared vocabulary of the metadata tree: limits, type names and tensor paths.

Both halves of the codec (``_encode`` and ``_decode``) and the handlers use these, so
they live apart from either half.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "PY_TYPES", "TENSOR_KINDS", "join"]

#: Deepest nesting of values the codec writes or reads.
MAX_DEPTH = 64

#: Array kinds stored as tensors: bool, signed, unsigned, float.
TENSOR_KINDS = frozenset("biuf")

#: Python and NumPy type objects that may appear as hyperparameters (``dtype=np.float64``).
PY_TYPES: dict[str, type] = {"float": float, "int": int, "bool": bool, "str": str, "object": object}


def join(prefix: str, name: object) -> str:
    """Dotted path of ``name`` under ``prefix``."""
    return f"{prefix}.{name}" if prefix else str(name)
