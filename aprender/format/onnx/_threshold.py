"""ONNX converter of scikit-learn's decision-threshold classifiers.

``TunedThresholdClassifierCV`` and ``FixedThresholdClassifier`` predict by thresholding
their binary estimator's positive-class probability (scikit-learn's
``_threshold_scores_to_class_labels``)::

    score = predict_proba(X)[:, index of pos_label]     # pos_label None: the last class
    label = pos_label if score >= threshold else the other class

skl2onnx 1.20 converts TunedThresholdClassifierCV as its ``estimator_`` alone (argmax
labels, the tuned threshold ignored) and has no converter for FixedThresholdClassifier.
This converter replaces both: the estimator's own graph (``OnnxSubEstimator``) gives
the probabilities, which are returned unchanged, as ``predict_proba`` does.

Models whose response is ``decision_function`` are refused before conversion
(:func:`threshold_gap`): skl2onnx lays decision values out differently per
converter (``[N, 1]``, ``[d, -d]``), so which column is the positive class's score is
not one rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.exceptions import UnsupportedExportError
from aprender.format.onnx._converters import replace_converter

__all__ = ["pos_label", "register", "response_method", "threshold", "threshold_gap"]


def response_method(model: Any) -> str | None:
    """The method of ``model.estimator_`` that scikit-learn thresholds (None: it has none)."""
    wanted = model._get_response_method()
    for name in [wanted] if isinstance(wanted, str) else wanted:
        if hasattr(model.estimator_, name):
            return name
    return None


def pos_label(model: Any) -> Any:
    """The label chosen when the score reaches the threshold's side, as ``predict`` uses it."""
    from sklearn.model_selection import TunedThresholdClassifierCV

    if isinstance(model, TunedThresholdClassifierCV):
        return model._get_curve_scorer()._get_pos_label()  # the scorer's pos_label, as predict() reads it
    return model.pos_label


def threshold(model: Any) -> float:
    """The decision threshold on the positive-class probability."""
    from sklearn.model_selection import TunedThresholdClassifierCV

    if isinstance(model, TunedThresholdClassifierCV):
        return float(model.best_threshold_)
    return 0.5 if model.threshold == "auto" else float(model.threshold)


def threshold_gap(est: Any) -> str | None:
    if not hasattr(est, "estimator_"):  # unfitted, nested in a search's parameters: the converter checks the fit
        return None
    method = response_method(est)
    if method == "predict_proba":
        return None
    return (
        f"it thresholds its estimator's {method}, and skl2onnx lays decision values out differently per "
        "converter, so the positive-class score column is not known; use response_method='predict_proba' "
        "with an estimator that has it"
    )


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter: ``label`` (thresholded) and ``probabilities`` (the estimator's)."""
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from skl2onnx.algebra.onnx_ops import OnnxGather, OnnxGreaterOrEqual, OnnxIdentity, OnnxReshape, OnnxWhere
    from skl2onnx.common.data_types import guess_numpy_type

    from aprender.format.onnx._inputs import label_values

    model, opv = operator.raw_operator, container.target_opset
    gap = threshold_gap(model)
    if gap is not None:  # a search's best estimator: check_exportable saw only its unfitted template
        raise UnsupportedExportError(f"{type(model).__name__} cannot be exported to ONNX: {gap}.")
    X = operator.inputs[0]
    dtype = guess_numpy_type(X.type)
    classes = list(model.classes_)
    positive = pos_label(model)
    # scikit-learn: with pos_label None the score is the last class's and ">=" maps to classes_[1]
    pos_index = len(classes) - 1 if positive is None else classes.index(positive)
    labels = label_values(model)
    proba = OnnxSubEstimator(model.estimator_, X, op_version=opv, options={"zipmap": False})[1]
    score = OnnxGather(proba, np.array([pos_index], dtype=np.int64), axis=1, op_version=opv)  # [N, 1]
    above = OnnxGreaterOrEqual(score, np.array([threshold(model)], dtype=dtype), op_version=opv)
    chosen = OnnxWhere(above, labels[pos_index:pos_index + 1], labels[1 - pos_index:2 - pos_index], op_version=opv)
    label = OnnxReshape(chosen, np.array([-1], dtype=np.int64), op_version=opv)
    OnnxIdentity(label, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)
    OnnxIdentity(proba, op_version=opv, output_names=operator.outputs[1:2]).add_to(scope, container)


def _shape(operator: Any) -> None:
    from skl2onnx.common.shape_calculator import calculate_linear_classifier_output_shapes

    calculate_linear_classifier_output_shapes(operator)


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for TunedThresholdClassifierCV."""
    from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV

    # nocl: skl2onnx's classifier shape calculator asks for it; labels are always classes_.
    options = {"zipmap": [False, True], "nocl": [False]}
    for cls in (TunedThresholdClassifierCV, FixedThresholdClassifier):
        replace_converter(cls, _shape, convert, options=options)


register()
