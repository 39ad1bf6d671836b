"""``dtype=None``: which float type an ONNX export gets, and the record of why (private).

- A model holding scikit-learn's trees (their exact double graph) or a model float32 cannot
  hold (``_double.NEEDS_DOUBLE``) is exported in double; where a part of it has no double
  graph, in float32.
- Any other model is exported in float32 first. When that graph fails verification and the
  model has a double graph, the double graph is verified instead (issue 38: an LDA on 75
  features was 1.4e-3 off in float32, a KNN on unscaled data 0.05, a KBinsDiscretizer a
  whole bin); only if it fails too is :class:`ExportParityError` raised, with both
  differences.

The choice and its reason are written into the ``aprender.parity`` record (``dtype``), with
the float32 graph's measured differences when it was refused, so ``apr inspect`` shows why
a graph is double.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from aprender.exceptions import ExportParityError, UnsupportedExportError
from aprender.format.onnx._verify import parity_json

__all__ = ["PARITY_KEY", "choose_dtype", "record_dtype"]

PARITY_KEY = "aprender.parity"


def record_dtype(onx: onnx.ModelProto, chosen: Any, reason: str, float32: dict[str, Any] | None = None) -> None:
    """Write the chosen dtype and why into the graph's ``aprender.parity`` record."""
    for prop in onx.metadata_props:
        if prop.key == PARITY_KEY:
            record = json.loads(prop.value)
            record["dtype"] = {"chosen": np.dtype(chosen).name, "reason": reason,
                               **({"float32_outputs": float32} if float32 is not None else {})}
            prop.value = parity_json(record)


def choose_dtype(export: Callable[[Any], onnx.ModelProto], double_reason: str | None) -> onnx.ModelProto:
    """Export with the float type ``dtype=None`` picks; ``export(dtype)`` converts and verifies.

    Parameters
    ----------
    export : callable
        Converts (and verifies, unless the caller said not to) in the dtype it is given.
    double_reason : str or None
        Why the model is exported in double from the start (trees, ``NEEDS_DOUBLE``), or None.
    """
    if double_reason is not None:
        try:
            onx = export(np.float64)
        except ExportParityError:
            raise  # float32 would be further off
        except UnsupportedExportError as exc:  # a part of the model without a double graph
            onx = export(np.float32)
            record_dtype(onx, np.float32, f"{double_reason}; but no double graph: {exc}")
            return onx
        record_dtype(onx, np.float64, double_reason)
        return onx
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            onx = export(np.float32)
    except ExportParityError as single:
        try:
            onx = export(np.float64)
        except ExportParityError as double:
            raise ExportParityError(f"float32: {single} float64: {double}",
                                    {"float32": single.outputs, "float64": double.outputs}) from double
        except UnsupportedExportError as exc:
            raise ExportParityError(f"{single} (no double graph to fall back on: {exc})", single.outputs) from exc
        differences = "; ".join(f"{name}: {got['differing_rows']} rows differ"
                                + (f", max |difference| {got['max_abs']:.3g}" if "max_abs" in got else "")
                                for name, got in single.outputs.items() if got.get("differing_rows"))
        record_dtype(onx, np.float64, f"the float32 graph failed verification ({differences})", single.outputs)
        return onx
    for warning in warned:  # about the float32 graph: said only when that graph is the one returned
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    record_dtype(onx, np.float32, "default: nothing in the model asks for double")
    return onx
