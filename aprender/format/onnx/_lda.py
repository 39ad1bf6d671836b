"""LinearDiscriminantAnalysis with two classes: probabilities as scikit-learn computes them (private).

skl2onnx 1.20 converts LDA as a linear classifier whose two scores are ``[-d, d]`` (``d``
the decision value) followed by a softmax: ``softmax([-d, d])[1] = expit(2 d)``, while
scikit-learn's ``predict_proba`` is ``expit(d)``. The logit came out doubled (gallery,
plot_lda.py: up to 0.15 off; rows whose probabilities are near 0 or 1 hide it, which is how
five sample rows let it through). Halving both scores makes the softmax ``expit(d)``;
labels (the larger score) do not change. With ``raw_scores`` the scores are the decision
values themselves, left as skl2onnx writes them. More than two classes: skl2onnx's softmax
of the decision values is scikit-learn's.
"""

from __future__ import annotations

import copy
from typing import Any

from aprender.format.onnx._converters import convert_as, replace_converter, shape_of

__all__ = ["register"]


def convert(scope: Any, operator: Any, container: Any) -> None:
    """skl2onnx's linear classifier converter, given halved coefficients for a binary LDA."""
    from skl2onnx.operator_converters.linear_classifier import convert_sklearn_linear_classifier

    model = operator.raw_operator
    raw = container.get_options(model, dict(raw_scores=False))["raw_scores"]
    if len(model.classes_) != 2 or raw:
        convert_sklearn_linear_classifier(scope, operator, container)
        return
    halved = copy.copy(model)
    halved.coef_, halved.intercept_ = model.coef_ / 2, model.intercept_ / 2
    convert_as(halved, convert_sklearn_linear_classifier, scope, operator, container)


def register() -> None:
    """Hand the converter to aprender's registry, replacing skl2onnx's for LinearDiscriminantAnalysis."""
    from skl2onnx.common._registration import get_converter
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    options = get_converter("SklearnLinearClassifier").get_allowed_options()
    replace_converter(LinearDiscriminantAnalysis, shape_of("SklearnLinearClassifier"), convert, options=options)


register()
