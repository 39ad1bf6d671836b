"""Inverse link functions skl2onnx leaves out of a regressor's graph, added back (private).

skl2onnx 1.20 converts HistGradientBoostingRegressor to a ``TreeEnsembleRegressor`` that
returns the raw score, the sum of the trees, for every loss. scikit-learn's ``predict``
applies the loss's inverse link to it: ``exp`` for ``loss="poisson"`` and ``loss="gamma"``
(the gallery measured predictions off by 2.14). The graph's output gets an ``Exp`` node
when the model's last estimator is such a regressor; verification then checks the result.
"""

from __future__ import annotations

from typing import Any

import onnx

__all__ = ["apply_inverse_links", "final_step"]

#: HistGradientBoostingRegressor losses whose predict() is exp(raw score).
_EXP_LOSSES = frozenset({"poisson", "gamma"})


def final_step(model: Any) -> Any:
    """The estimator whose outputs the graph ends with: a Pipeline's last step, a search's best estimator."""
    while True:
        if hasattr(model, "steps"):
            model = model.steps[-1][1]
        elif hasattr(model, "best_estimator_"):
            model = model.best_estimator_
        else:
            return model


def apply_inverse_links(onx: onnx.ModelProto, model: Any) -> None:
    """Apply ``exp`` to the output of a graph whose last estimator predicts exp(raw score)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    last = final_step(model)
    if not isinstance(last, HistGradientBoostingRegressor) or last.loss not in _EXP_LOSSES:
        return
    if len(onx.graph.output) != 1:
        return
    output = onx.graph.output[0].name
    raw = f"{output}_raw_score"
    for node in onx.graph.node:
        node.output[:] = [raw if name == output else name for name in node.output]
    onx.graph.node.append(onnx.helper.make_node("Exp", [raw], [output], name=f"{output}_inverse_link"))
