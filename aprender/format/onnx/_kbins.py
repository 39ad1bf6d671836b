"""KBinsDiscretizer: bin edges rounded toward the bin they close, so float32 inputs bin as in scikit-learn (private).

skl2onnx 1.20's graph casts the column to float32 and counts the float32 edges it is not
``Less`` than; scikit-learn counts the float64 edges ``<= x``. An edge rounded to the
nearest float32 can land on the other side of a float32 input (gallery,
plot_target_encoder_cross_val.py: values one bin off). For a float32 ``x``, ``x < e``
exactly when ``x < ceil32(e)``, the smallest float32 not below ``e``; written so, the graph
bins every float32 input as scikit-learn bins it. (skl2onnx's double graph of the class is
invalid: its Concat mixes float and double, so there is no double graph to fall back on.)
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from aprender.format.onnx._converters import convert_as, replace_converter, shape_of

__all__ = ["ceil32", "register"]


def ceil32(values: np.ndarray) -> np.ndarray:
    """The smallest float32 values not below ``values`` (as float64)."""
    values = np.asarray(values, dtype=np.float64)
    nearest = values.astype(np.float32)
    below = nearest.astype(np.float64) < values
    return np.where(below, np.nextafter(nearest, np.float32(np.inf)), nearest).astype(np.float64)


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx's converter, given the edges rounded up to float32."""
    from skl2onnx.operator_converters.k_bins_discretiser import convert_sklearn_k_bins_discretiser

    model = operator.raw_operator
    rounded = copy.copy(model)
    edges = np.empty(len(model.bin_edges_), dtype=object)
    edges[:] = [ceil32(e) for e in model.bin_edges_]
    rounded.bin_edges_ = edges
    convert_as(rounded, convert_sklearn_k_bins_discretiser, scope, operator, container)


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for KBinsDiscretizer."""
    from sklearn.preprocessing import KBinsDiscretizer

    replace_converter(KBinsDiscretizer, shape_of("SklearnKBinsDiscretizer"), convert)


register()
