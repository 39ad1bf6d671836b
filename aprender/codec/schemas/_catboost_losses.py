"""CatBoost's losses by the estimator role each trains, and the form of a metric name.

The ``catboost_booster`` handler checks a stored model's loss and training record
against these tables; the estimators' schema (``catboost_models``) checks the loss and
metric hyperparameters and the loss against the estimator's role.
"""

from __future__ import annotations

import re

__all__ = ["LOSSES", "METRIC_NAME", "loss_role"]

#: Loss function -> (the estimator role it trains, leaf dimension: an int, or "classes"
#: for one value per class, or "any" for one per target of a multi-target regression).
LOSSES: dict[str, tuple[str, int | str]] = {
    **dict.fromkeys(["Logloss", "CrossEntropy"], ("classifier", 1)),
    **dict.fromkeys(["MultiClass", "MultiClassOneVsAll"], ("classifier", "classes")),
    **dict.fromkeys(["RMSE", "MAE", "Quantile", "Expectile", "LogLinQuantile", "MAPE", "Poisson", "Tweedie",
                     "Huber", "Lq", "LogCosh", "FairLoss"], ("regressor", 1)),
    "RMSEWithUncertainty": ("regressor", 2),
    "MultiRMSE": ("regressor", "any"),
    **dict.fromkeys(["YetiRank", "YetiRankPairwise", "PairLogit", "PairLogitPairwise", "QueryRMSE", "QuerySoftMax",
                     "QueryCrossEntropy", "LambdaMart", "StochasticFilter", "StochasticRank"], ("ranker", 1)),
}
#: A metric name in the training record (``Logloss``, ``Quantile:alpha=0.3``, ``NDCG:top=10;type=Base``).
METRIC_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_:=;.,+\-]{0,127}")


def loss_role(loss: str) -> str:
    """The estimator role (classifier, regressor, ranker) that ``loss``, a key of :data:`LOSSES`, trains."""
    return LOSSES[loss][0]
