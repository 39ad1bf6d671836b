"""``erf`` in double from standard ONNX operators (private).

ONNX Runtime's ``Erf`` has a float32 kernel only. GaussianProcessClassifier's
``predict_proba`` sums ``erf`` terms with coefficients of about 1e3 that cancel, so a
float32 ``erf`` leaves its probabilities ~1e-4 off even in a double graph. This builds
``erf`` from ``Abs``, ``Sign``, ``Exp``, ``Mul``, ``Add``, ``Div``, ``Where`` with Cephes'
rational approximations (S. L. Moshier's ``ndtr.c``; relative error ~1e-16 on each piece):

- ``|x| < 1``: ``x T(x^2) / U(x^2)``,
- ``1 <= |x| < 8``: ``1 - exp(-x^2) P(|x|) / Q(|x|)`` (with the sign of x),
- ``|x| >= 8``: ``1 - exp(-x^2) R(|x|) / S(|x|)``.

Coefficients are highest degree first; ``U``, ``Q`` and ``S`` have an implicit leading 1.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ["erf_nodes"]

_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
      7.00332514112805075473e3, 5.55923013010394962768e4)
_U = (1.0, 3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
      2.26290000613890934246e4, 4.92673942608635921086e4)
_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
      4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
      9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_Q = (1.0, 1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
      9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
      1.65666309194161350182e3, 5.57535340817727675546e2)
_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
      6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_S = (1.0, 2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
      1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)


class _Builder:
    """Nodes and double constants of one ``erf``, named after its output."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []
        self.constants: list[onnx.TensorProto] = []

    def const(self, value: float) -> str:
        name = f"{self.prefix}_c{len(self.constants)}"
        self.constants.append(numpy_helper.from_array(np.array(value, dtype=np.float64), name))
        return name

    def op(self, op_type: str, *inputs: str) -> str:
        name = f"{self.prefix}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=name))
        return name

    def polynomial(self, x: str, coefficients: tuple[float, ...]) -> str:
        """Horner's rule, as Cephes' ``polevl`` evaluates it."""
        acc = self.const(coefficients[0])
        for c in coefficients[1:]:
            acc = self.op("Add", self.op("Mul", acc, x), self.const(c))
        return acc

    def ratio(self, x: str, num: tuple[float, ...], den: tuple[float, ...]) -> str:
        return self.op("Div", self.polynomial(x, num), self.polynomial(x, den))


def erf_nodes(x: str, y: str) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes computing ``y = erf(x)`` for a double tensor ``x``, and the constants they read."""
    b = _Builder(f"{y}_erf")
    a = b.op("Abs", x)
    squared = b.op("Mul", x, x)
    small = b.op("Mul", x, b.ratio(squared, _T, _U))
    tail = b.op("Exp", b.op("Neg", squared))
    below8 = b.op("Less", a, b.const(8.0))
    # exp(-x^2) is 0 beyond |x| = 27; the ratios are read at |x| <= 30 so that |x| = inf gives 0, not 0 * nan
    bounded = b.op("Min", a, b.const(30.0))
    erfc = b.op("Mul", tail, b.op("Where", below8, b.ratio(bounded, _P, _Q), b.ratio(bounded, _R, _S)))
    large = b.op("Mul", b.op("Sign", x), b.op("Sub", b.const(1.0), erfc))
    b.nodes.append(helper.make_node("Where", [b.op("Less", a, b.const(1.0)), small, large], [y], name=f"{y}_erf"))
    return b.nodes, b.constants
