"""The shared vocabulary of the metadata tree: limits, type names and tensor paths.

Both halves of the codec (``_encode`` and ``_decode``) and the handlers use these, so
they live apart from either half.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_DEPTH", "MAX_JSON_DEPTH", "PY_TYPES", "TENSOR_KINDS", "join", "preview"]

#: Deepest nesting of values the codec writes or reads.
MAX_DEPTH = 64
#: Deepest JSON a file may hold anywhere: a value node of MAX_DEPTH levels takes at most
#: three JSON levels per level (a dict node with non-string keys), and anything shallower
#: than this is safe to repr, compare or walk recursively.
MAX_JSON_DEPTH = 256

#: Array kinds stored as tensors: bool, signed, unsigned, float.
TENSOR_KINDS = frozenset("biuf")

#: Python and NumPy type objects that may appear as hyperparameters (``dtype=np.float64``).
PY_TYPES: dict[str, type] = {"float": float, "int": int, "bool": bool, "str": str, "object": object}


def join(prefix: str, name: object) -> str:
    """Dotted path of ``name`` under ``prefix``."""
    return f"{prefix}.{name}" if prefix else str(name)


#: Longest list of scalars :func:`preview` shows item by item.
_SHOWN_ITEMS = 8


def preview(value: Any, limit: int = 80) -> str:
    """A short, bounded description of a value read from a file, for error messages.

    Strings (cut to ``limit`` characters), numbers, booleans and None are shown as
    their repr, and so is a short list of them; anything else only by its type and
    length, so that a message never walks, or spends memory on, a nested structure
    a file chose. ``repr`` writes every control, ESC, C1 and bidi character of a string
    as an escape (``'\\x1b'``, ``'\\u202e'``), so what a message quotes is inert on a
    terminal (tests/test_cli_hostile_strings.py).

    Examples
    --------
    >>> from aprender.codec._nodes import preview
    >>> preview("x" * 100, 5), preview([3, "a"]), preview([[1]] * 7)
    ("'xxxxx'...", "[3, 'a']", 'a list of 7 items')
    """
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if isinstance(value, int) and value.bit_length() > 256:  # also bool, whose repr is short
        return f"an int of {value.bit_length()} bits"
    if value is None or isinstance(value, (int, float)):
        return repr(value)
    kind = type(value).__name__
    if isinstance(value, (list, tuple)) and len(value) <= _SHOWN_ITEMS and not any(
            isinstance(item, (list, tuple, dict)) for item in value):
        items = ", ".join(preview(item, 20) for item in value)  # scalars only: one level, no recursion
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    if not isinstance(value, (list, dict, tuple)):
        return f"a value of type {kind}"
    return f"a {kind} of {len(value)} {'keys' if isinstance(value, dict) else 'items'}"
