"""ONNX converter of OneVsRestClassifier over estimators without ``predict_proba`` (LinearSVC).

scikit-learn's OneVsRest then has ``decision_function`` only: one column per class, each
the decision value of that class's binary estimator, and ``predict`` is the class of the
largest (binary problems: ``classes_[1]`` where the one value is positive; multilabel: one
0/1 column per label, 1 where its value is positive). skl2onnx 1.20
takes each LinearSVC's probability output as one column although it has two
(``[-d, d]``) and divides the scores by their row sum as if they were probabilities:
the graph fails shape inference with ``raw_scores`` and is wrong without it (the
gallery measured 11.2 off ``decision_function``). This converter builds the scores
from each estimator's own graph (``OnnxSubEstimator``, with ``raw_scores`` where its converter
takes it), taking its last column, the positive side's value; every other OneVsRest goes to
skl2onnx's converter unchanged (multilabel included: it thresholds each probability at 0.5,
as scikit-learn does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aprender.format.onnx._converters import replace_converter, shape_of

__all__ = ["register"]


def _decision_only(model: Any) -> bool:
    return not hasattr(model, "predict_proba")


def _raw_scores(est: Any) -> dict[str, bool] | None:
    """``raw_scores=True`` where the estimator's converter takes it: a binary SVC then lays out ``[-d, d]``."""
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common._registration import get_converter

    allowed = get_converter(sklearn_operator_name_map[type(est)]).get_allowed_options() or {}
    return {"raw_scores": True} if "raw_scores" in allowed else None


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx converter: ``label`` and ``probabilities`` (= ``decision_function``, ``[N, n_classes]``)."""
    from onnx import TensorProto
    from skl2onnx.algebra.onnx_operator import OnnxSubEstimator
    from skl2onnx.algebra.onnx_ops import (
        OnnxArgMax,
        OnnxCast,
        OnnxConcat,
        OnnxGather,
        OnnxGreater,
        OnnxIdentity,
        OnnxNeg,
    )
    from skl2onnx.common.data_types import guess_numpy_type
    from skl2onnx.operator_converters.one_vs_rest_classifier import convert_one_vs_rest_classifier

    from aprender.format.onnx._inputs import label_values

    model, opv = operator.raw_operator, container.target_opset
    if not _decision_only(model):
        convert_one_vs_rest_classifier(scope, operator, container)
        return
    X = operator.inputs[0]
    dtype = guess_numpy_type(X.type)
    last = np.array([-1], dtype=np.int64)
    for est in model.estimators_:
        if _raw_scores(est):  # as skl2onnx's OvR asks it: the sub-estimator's converter reads the container
            container.add_options(id(est), {"raw_scores": True})
            scope.add_options(id(est), {"raw_scores": True})
    columns = [OnnxGather(OnnxSubEstimator(est, X, op_version=opv, options=_raw_scores(est))[1], last, axis=1,
                          op_version=opv) for est in model.estimators_]
    if len(columns) == 1 and not model.multilabel_:  # binary: [-d, d], skl2onnx's layout of decision values
        columns = [OnnxNeg(columns[0], op_version=opv), columns[0]]
    scores = OnnxConcat(*columns, axis=1, op_version=opv)
    if model.multilabel_:  # one 0/1 column per label: its decision value above 0
        label = OnnxCast(OnnxGreater(scores, np.array([0.0], dtype=dtype), op_version=opv), to=TensorProto.INT64,
                         op_version=opv)
    else:
        best = OnnxArgMax(scores, axis=1, keepdims=0, op_version=opv)
        label = OnnxGather(label_values(model), best, axis=0, op_version=opv)
    OnnxIdentity(label, op_version=opv, output_names=operator.outputs[:1]).add_to(scope, container)
    OnnxIdentity(scores, op_version=opv, output_names=operator.outputs[1:2]).add_to(scope, container)


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for OneVsRestClassifier."""
    from skl2onnx.common._registration import get_converter
    from sklearn.multiclass import OneVsRestClassifier

    options = get_converter("SklearnOneVsRestClassifier").get_allowed_options()
    replace_converter(OneVsRestClassifier, shape_of("SklearnOneVsRestClassifier"), convert, options=options)


register()
