"""The ``interp1d`` and ``bspline`` handlers: SciPy interpolators, rebuilt by their constructors from checked data.

- ``interp1d``: ``scipy.interpolate.interp1d`` (IsotonicRegression's ``f_``), rebuilt
  by its constructor from ``x``, ``y`` and its options (the constructor checks them).
- ``bspline``: ``scipy.interpolate.BSpline`` (SplineTransformer's ``bsplines_``),
  rebuilt by its constructor, which checks knots, coefficients and degree agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.interpolate import BSpline, interp1d

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import ANY, TENSOR, Handler, register_handler, tensor_field
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["BSPLINE", "INTERP1D"]

_INTERP_KINDS = frozenset(["linear", "nearest", "nearest-up", "zero", "slinear", "quadratic", "cubic",
                           "previous", "next"])


def _encode_interp1d(f: interp1d, enc: Encoding, path: str) -> dict[str, Any]:
    fill = f._fill_value_orig
    if isinstance(fill, np.ndarray):
        fill = fill.item() if fill.size == 1 else None
    if not (fill is None or isinstance(fill, (str, float, int, np.floating))):
        raise UnsupportedTypeError(path, "interp1d", "only scalar or 'extrapolate' fill values can be stored")
    return {
        "kind": f._kind, "axis": int(f.axis), "bounds_error": bool(f.bounds_error), "assume_sorted": True,
        "fill_value": enc.value(float(fill) if isinstance(fill, (int, np.floating)) else fill, join(path, "fill"), 1),
        "x": enc.tensor(np.asarray(f.x), join(path, "x")),
        "y": enc.tensor(np.asarray(f.y), join(path, "y")),
    }


def _decode_interp1d(node: Mapping[str, Any], dec: Decoding, path: str) -> interp1d:
    kind, axis, bounds_error = node.get("kind"), node.get("axis"), node.get("bounds_error")
    fill = dec.value(node.get("fill_value"), join(path, "fill"), 1)
    if kind not in _INTERP_KINDS or type(axis) is not int or type(bounds_error) is not bool \
            or node.get("assume_sorted") is not True:
        raise fail(path, "invalid interp1d options")
    if not (fill is None or type(fill) is float or fill == "extrapolate"):
        raise fail(path, f"invalid interp1d fill_value {preview(fill, 40)}")
    x, y = tensor_field(dec, node, "x", path, "f"), tensor_field(dec, node, "y", path, "f")
    if x.ndim != 1 or y.ndim < 1 or not -y.ndim <= axis < y.ndim or x.shape[0] != y.shape[axis] \
            or np.any(np.diff(x) < 0):
        raise fail(path, f"interp1d needs increasing x along y's axis, found x {x.shape}, y {y.shape}")
    try:
        return interp1d(x, y, kind=kind, axis=axis, bounds_error=bounds_error,
                        fill_value=np.nan if fill is None else fill, assume_sorted=True)
    except (ValueError, TypeError) as exc:
        raise fail(path, f"cannot rebuild interp1d: {exc}") from None


def _encode_bspline(b: BSpline, enc: Encoding, path: str) -> dict[str, Any]:
    extrapolate = b.extrapolate
    if extrapolate not in (True, False, "periodic"):
        raise UnsupportedTypeError(path, "BSpline", f"extrapolate={preview(extrapolate)}")
    return {"k": int(b.k), "axis": int(b.axis), "extrapolate": extrapolate if type(extrapolate) is str
            else bool(extrapolate), "t": enc.tensor(np.asarray(b.t), join(path, "t")),
            "c": enc.tensor(np.asarray(b.c), join(path, "c"))}


def _decode_bspline(node: Mapping[str, Any], dec: Decoding, path: str) -> BSpline:
    k, axis, extrapolate = node.get("k"), node.get("axis"), node.get("extrapolate")
    if type(k) is not int or not 0 <= k <= 32 or type(axis) is not int or extrapolate not in (True, False, "periodic"):
        raise fail(path, "invalid BSpline degree, axis or extrapolate")
    t, c = tensor_field(dec, node, "t", path, "f"), tensor_field(dec, node, "c", path, "f")
    if t.ndim != 1 or c.ndim < 1 or not 0 <= axis < c.ndim:
        raise fail(path, f"BSpline needs 1-d knots and an axis of c, found t {t.shape}, c {c.shape}")
    try:
        # The constructor checks knots are sorted and that c has enough coefficients.
        return BSpline(t, c, k, extrapolate=extrapolate, axis=axis)
    except (ValueError, TypeError) as exc:
        raise fail(path, f"cannot rebuild BSpline: {exc}") from None


INTERP1D = register_handler(Handler(
    "interp1d", (interp1d,), _encode_interp1d, _decode_interp1d,
    {"kind": (str,), "axis": (int,), "bounds_error": (bool,), "assume_sorted": (bool,), "fill_value": ANY,
     "x": TENSOR, "y": TENSOR}))
BSPLINE = register_handler(Handler(
    "bspline", (BSpline,), _encode_bspline, _decode_bspline,
    {"k": (int,), "axis": (int,), "extrapolate": (bool, str), "t": TENSOR, "c": TENSOR}))
