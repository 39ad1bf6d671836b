"""Reusable load-time checks for fitted attributes read from a file."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender import _limits
from aprender.exceptions import FormatError

__all__ = ["array", "bounded_int", "check_attr_name", "check_compressed", "check_sizes", "fail", "n_features",
           "optional_array", "require"]


def fail(path: str, message: str) -> FormatError:
    """A :class:`FormatError` located at ``path``."""
    return FormatError(f"at '{path or '<model>'}': {message}")


def require(attrs: Mapping[str, Any], names: tuple[str, ...], path: str) -> None:
    """Every fitted attribute in ``names`` is present (``None`` allowed): a missing one fails at load, not predict."""
    missing = [name for name in names if name not in attrs]
    if missing:
        raise fail(path, f"fitted attribute '{missing[0]}' is missing" + (
            f" (and {', '.join(missing[1:])})" if len(missing) > 1 else ""))


def n_features(attrs: Mapping[str, Any], path: str) -> int:
    """``n_features_in_`` as a non-negative int."""
    n = attrs.get("n_features_in_")
    if type(n) is not int or n < 0:
        raise fail(path, f"n_features_in_ must be a non-negative int, found {n!r}")
    return n


def bounded_int(value: Any, name: str, path: str, *, low: int = 0, high: int | None = None, hint: str = "") -> int:
    """``value`` (attribute ``name``) as an int in ``[low, high]``; numpy integers allowed, bools not."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise fail(path, f"'{name}' must be an integer, found {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise fail(path, f"'{name}' is {value}, must be {bound}{hint}")
    return int(value)


def _count(name: str, value: Any, bound: int, setting: str, path: str) -> None:
    bounded_int(value, name, path, high=bound, hint=f" (raise aprender._limits.{setting} to load a larger model)")


def check_sizes(attrs: Mapping[str, Any], path: str) -> None:
    """The counts scikit-learn allocates by later are within ``aprender._limits``.

    Run on every fitted estimator before its family's checks: ``n_features_in_``,
    ``n_outputs_`` and ``n_classes_`` (an int, or one int per output) when present.
    A tree file of a few kilobytes claiming ``n_features_in_ = 2**31 - 1`` would
    otherwise load, and ``feature_importances_`` would try to allocate 16 GiB.
    """
    n = attrs.get("n_features_in_")
    if n is not None:
        _count("n_features_in_", n, _limits.MAX_FEATURES, "MAX_FEATURES", path)
    outputs = attrs.get("n_outputs_")
    if outputs is not None:
        _count("n_outputs_", outputs, _limits.MAX_OUTPUTS, "MAX_OUTPUTS", path)
    classes = attrs.get("n_classes_")
    if isinstance(classes, (list, tuple, np.ndarray)) and np.ndim(classes) == 1 and len(classes) <= _limits.MAX_OUTPUTS:
        for value in classes:
            _count("n_classes_", value.item() if isinstance(value, np.generic) else value, _limits.MAX_CLASSES,
                   "MAX_CLASSES", path)
    elif classes is not None:
        _count("n_classes_", classes, _limits.MAX_CLASSES, "MAX_CLASSES", path)


def check_compressed(indptr: np.ndarray, indices: np.ndarray, n_major: int, n_minor: int, path: str) -> None:
    """Validate CSR/CSC index arrays before scipy ever sees them."""
    if indptr.ndim != 1 or indptr.shape[0] != n_major + 1:
        raise fail(path, f"indptr has shape {indptr.shape}, expected ({n_major + 1},)")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        raise fail(path, "indptr must start at 0 and never decrease")
    if indices.ndim != 1 or indptr[-1] != indices.shape[0]:
        raise fail(path, f"indptr ends at {indptr[-1]} but there are {indices.shape[0]} indices")
    if indices.size and (indices.min() < 0 or indices.max() >= n_minor):
        raise fail(path, f"sparse indices must lie in [0, {n_minor})")


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


_ABSENT = object()


@functools.lru_cache(maxsize=4096)
def _shadows_class_attribute(cls: type, name: str) -> bool:
    return inspect.getattr_static(cls, name, _ABSENT) is not _ABSENT


def check_attr_name(cls: type, name: str, params: Mapping[str, Any], path: str) -> None:
    """Refuse a fitted-attribute name read from a file that is not a plain, new instance attribute."""
    if not name.isidentifier() or name.startswith("__") or name in params:
        raise fail(path, f"invalid fitted attribute name {name[:80]!r}")
    # A file must never shadow a method, property or class-level setting: libsvm trusts
    # SVC._sparse_kernels, and an instance copy reordered by a file makes it read out of bounds.
    if _shadows_class_attribute(cls, name):
        raise fail(path, f"fitted attribute '{name}' would shadow {cls.__name__}.{name}")
