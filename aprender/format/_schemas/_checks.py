"""Reusable load-time checks for fitted attributes read from a file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.exceptions import FormatError

__all__ = ["array", "fail", "n_features", "optional_array"]


def fail(path: str, message: str) -> FormatError:
    """A :class:`FormatError` located at ``path``."""
    return FormatError(f"at '{path or '<model>'}': {message}")


def n_features(attrs: Mapping[str, Any], path: str) -> int:
    """``n_features_in_`` as a non-negative int."""
    n = attrs.get("n_features_in_")
    if type(n) is not int or n < 0:
        raise fail(path, f"n_features_in_ must be a non-negative int, found {n!r}")
    return n


def array(
    attrs: Mapping[str, Any],
    name: str,
    path: str,
    *,
    ndim: tuple[int, ...],
    kinds: str = "f",
    shape: Mapping[int, int] | None = None,
) -> np.ndarray:
    """Fetch attribute ``name`` and check its rank, dtype kind and fixed axis sizes."""
    value = attrs.get(name)
    if not isinstance(value, np.ndarray):
        raise fail(path, f"'{name}' must be an array, found {type(value).__name__}")
    if value.ndim not in ndim:
        raise fail(path, f"'{name}' must have {' or '.join(map(str, ndim))} dimensions, found shape {value.shape}")
    if value.dtype.kind not in kinds:
        raise fail(path, f"'{name}' has dtype {value.dtype}")
    for axis, size in (shape or {}).items():
        if value.shape[axis] != size:
            raise fail(path, f"'{name}' has shape {value.shape}; axis {axis} must be {size}")
    return value


def optional_array(attrs: Mapping[str, Any], name: str, path: str, **kwargs: Any) -> np.ndarray | None:
    """Like :func:`array`, but ``None`` (or absence) is allowed."""
    if attrs.get(name) is None:
        return None
    return array(attrs, name, path, **kwargs)
