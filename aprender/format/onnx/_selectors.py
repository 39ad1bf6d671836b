"""Feature selectors in ONNX: the selected columns, and RFE's predictions (private).

- **Selected columns.** skl2onnx 1.20's converter of every feature selector tests its
  selected indices with ``index.any()``, which is False for ``[0]``: a selector keeping only
  the first column became a ``ConstantOfShape`` of the input (the graph fails shape
  inference; RFECV in the estimator zoo). :func:`register` replaces it for every selector
  with the same ``ArrayFeatureExtractor`` over ``get_support(indices=True)``, whatever the
  indices are.
- **RFE's predictions.** ``RFE`` and ``RFECV`` are selectors that also predict:
  ``predict(X)`` is ``estimator_.predict(transform(X))``. skl2onnx converts them as
  selectors only, so a graph of a model ending in one answered its selected columns where
  the model predicts (the gallery's Pipeline(MinMaxScaler, RFE) and RFECV: every label
  "wrong"). :func:`predicting` gives the model the graph is built from: a final RFE becomes
  ``Pipeline([("support", rfe), ("estimator", rfe.estimator_)])``, the same computation,
  whose graph has the estimator's outputs (``label`` and ``probabilities``, or
  ``variable``). An RFE inside a Pipeline, before other steps, stays a selector.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SELECTORS", "predicting", "register"]

#: skl2onnx's aliases of the feature selectors that share its selection converter.
SELECTORS = ("SklearnGenericUnivariateSelect", "SklearnRFE", "SklearnRFECV", "SklearnSelectFdr", "SklearnSelectFpr",
             "SklearnSelectFromModel", "SklearnSelectFwe", "SklearnSelectKBest", "SklearnSelectPercentile",
             "SklearnVarianceThreshold")
_registered = False


def _convert_selection(scope: Any, operator: Any, container: Any) -> None:
    """The selected columns of the input, by their indices (skl2onnx's converter without its ``[0]`` slip)."""
    from skl2onnx.proto import onnx_proto

    selector = operator.raw_operator
    index = selector.get_support(indices=True)
    if len(index) == 0:  # skl2onnx's message, which aprender's refusals of such selectors quote
        raise RuntimeError(f"Model '{type(selector).__name__}' did not select any feature. "
                           "This model cannot be converted into ONNX.")
    columns = scope.get_unique_variable_name("column_indices")
    container.add_initializer(columns, onnx_proto.TensorProto.INT64, [len(index)], [int(i) for i in index])
    container.add_node("ArrayFeatureExtractor", [operator.inputs[0].full_name, columns], operator.outputs[0].full_name,
                       op_domain="ai.onnx.ml", name=scope.get_unique_operator_name("ArrayFeatureExtractor"))


def register() -> None:
    """Replace skl2onnx's selection converter for every selector (once)."""
    global _registered
    if _registered:
        return
    from skl2onnx.common._registration import get_converter, register_converter

    for alias in SELECTORS:
        register_converter(alias, _convert_selection, overwrite=True,
                           options=get_converter(alias).get_allowed_options())
    _registered = True


def predicting(model: Any) -> Any:
    """``model`` with a final RFE / RFECV (of a Pipeline, of a search) spelled as selection then estimator.

    The result is only converted, never fitted or called: its steps are the fitted
    objects of ``model``. A model without a final RFE is returned as it is.
    """
    from sklearn.feature_selection import RFE
    from sklearn.pipeline import Pipeline

    if isinstance(model, Pipeline):
        *head, (name, last) = model.steps
        graph_last = predicting(last)
        return model if graph_last is last else Pipeline([*head, (name, graph_last)])
    best = getattr(model, "best_estimator_", None)
    if best is not None and hasattr(model, "cv_results_"):  # a search is converted as its best estimator
        graph_best = predicting(best)
        return model if graph_best is best else graph_best
    if isinstance(model, RFE) and hasattr(model, "estimator_"):  # RFECV is an RFE
        return Pipeline([("support", model), ("estimator", predicting(model.estimator_))])
    return model
