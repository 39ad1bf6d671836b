"""Operators ONNX Runtime's CPU build cannot run, rewritten into ones it can (private).

skl2onnx 1.20's GaussianProcessClassifier graph cannot be loaded at all:

- ``v = solve(L_, W_sr_ * K_star)`` (scikit-learn's predict_proba, "Line 5") becomes
  ``com.microsoft:Solve``, which has no kernel. ``L_`` is fitted state, so the solve is
  ``L_^-1 @ b`` with the inverse computed once, in float64, at export: a ``MatMul``.
- In a double graph, ``Erf`` has no double kernel; it is built from standard operators
  in double (``_erf``): predict_proba's erf terms cancel, and float32 ``erf`` left the
  probabilities ~1e-4 off.

Verification then measures the result, as for every export.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from aprender.format.onnx._erf import erf_nodes

__all__ = ["runnable_kernels"]

_CONTRIB = "com.microsoft"


def runnable_kernels(onx: onnx.ModelProto) -> None:
    """Rewrite constant solves as products and a double graph's ``Erf`` from standard operators, in place."""
    _constant_solves_as_products(onx)
    if any(i.type.tensor_type.elem_type == onnx.TensorProto.DOUBLE for i in onx.graph.input):
        _double_erf(onx)


def _constant_solves_as_products(onx: onnx.ModelProto) -> None:
    """Replace each ``com.microsoft:Solve(A, b)`` whose ``A`` is an initializer by ``MatMul(A^-1, b)``."""
    constants = {init.name: init for init in onx.graph.initializer}
    for node in onx.graph.node:
        if node.domain != _CONTRIB or node.op_type != "Solve" or node.input[0] not in constants:
            continue
        a = numpy_helper.to_array(constants[node.input[0]])
        inverse = np.linalg.solve(a.astype(np.float64), np.eye(len(a)))
        name = f"{node.input[0]}_inverse"
        onx.graph.initializer.append(numpy_helper.from_array(inverse.astype(a.dtype), name))
        node.op_type, node.domain = "MatMul", ""
        node.input[0] = name
        del node.attribute[:]
    if not any(node.domain == _CONTRIB for node in onx.graph.node):
        kept = [op for op in onx.opset_import if op.domain != _CONTRIB]
        del onx.opset_import[:]
        onx.opset_import.extend(kept)


def _double_erf(onx: onnx.ModelProto) -> None:
    """Replace every ``Erf`` of a double graph by its double form from standard operators (``_erf``)."""
    nodes = []
    for node in onx.graph.node:
        if node.op_type != "Erf" or node.domain:
            nodes.append(node)
            continue
        built, constants = erf_nodes(node.input[0], node.output[0])
        nodes += built
        onx.graph.initializer.extend(constants)
    del onx.graph.node[:]
    onx.graph.node.extend(nodes)
