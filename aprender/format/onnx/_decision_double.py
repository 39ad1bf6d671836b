"""Linear classifiers without probabilities (LinearSVC, RidgeClassifier) in double (private).

Their ONNX ``probabilities`` output is the decision values (post-transform ``NONE``), and
skl2onnx 1.20 builds no double graph for that: ``post_transform 'NONE' is not supported with
double``, unless the ``raw_scores`` option is set, when its double graph gives exactly those
decision values. So ``dtype=None`` fell back to float32 for every model ending in one, and a
part that needs double went with it (a KBinsDiscretizer before a LinearSVC: 13 of 5,000 new
rows another label). The option is set here for such a classifier in a double graph, whose
two-class output is then declared as what that graph computes, ``[-d, d]`` (``[N, 2]``: skl2onnx
declares one column, and the graph failed shape inference); the float32 graph is left as it was.
"""

from __future__ import annotations

from typing import Any

from aprender.format.onnx._converters import wrap_registered

__all__ = ["register"]

#: skl2onnx's aliases of linear classifiers (``LinearClassifier`` op or its double graph).
_ALIASES = ("SklearnLinearSVC", "SklearnLinearClassifier")
_registered = False


def register() -> None:
    """Wrap the linear classifiers' converters (once)."""
    global _registered
    if _registered:
        return
    for alias in _ALIASES:
        wrap_registered(alias, _raw_in_double)
    _registered = True


def _raw_in_double(original: Any) -> Any:
    def converter(scope: Any, operator: Any, container: Any) -> None:
        from skl2onnx.common.data_types import DoubleTensorType

        model = operator.raw_operator
        if isinstance(operator.inputs[0].type, DoubleTensorType) and not hasattr(model, "predict_proba"):
            container.add_options(id(model), {"raw_scores": True})
            if len(model.classes_) == 2:  # the raw scores [-d, d] (skl2onnx declares one column)
                scores = operator.outputs[1]
                scores.type = DoubleTensorType([scores.type.shape[0], 2])
        original(scope, operator, container)

    return converter
