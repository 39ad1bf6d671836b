"""The hyperparameters of LightGBM's estimators, checked against tables before construction.

LightGBM's estimators have no scikit-learn ``_parameter_constraints``, and whatever a
LightGBM estimator holds among its parameters, keyword arguments included, is handed to
LightGBM's C++ configuration at every ``predict``. So each constructor parameter has a
check here (:data:`CONSTRUCTOR`), and a keyword argument is accepted only when it is a
learning or tree-shape setting of :data:`KWARGS` with a value of its kind. What names files,
machines, ports, devices or threads (``output_model``, ``machines``, ``num_threads``, ...)
and what turns off LightGBM's own input checks (``predict_disable_shape_check``) is on
neither table and is refused; threads are set with ``n_jobs``, which
:data:`aprender.codec.trust.PARAM_RULES` bounds.

Each check holds at least LightGBM's own bound (its Parameters page, ``constraints:``): LightGBM
checks the whole configuration at every ``predict``, so a value outside it would load and then
fail every prediction (tests/test_lightgbm_params_bounds.py predicts with the edge values each
check accepts). ``num_class`` is bounded further (:data:`MAX_NUM_CLASS`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview

__all__ = ["CONSTRUCTOR", "KWARGS", "OBJECTIVE_ALIASES", "check_eval_at", "check_lightgbm_params", "check_other_params"]

Check = Callable[[Any], bool]

#: LightGBM's documented aliases of each objective (docs: Parameters, ``objective``): the
#: estimator keeps the name the user gave, the booster the canonical one.
OBJECTIVE_ALIASES: dict[str, str] = {
    **{a: "regression" for a in ("regression", "regression_l2", "l2", "mean_squared_error", "mse", "l2_root",
                                 "root_mean_squared_error", "rmse")},
    **{a: "regression_l1" for a in ("regression_l1", "l1", "mean_absolute_error", "mae")},
    "huber": "huber", "fair": "fair", "poisson": "poisson", "quantile": "quantile",
    "mape": "mape", "mean_absolute_percentage_error": "mape", "gamma": "gamma", "tweedie": "tweedie",
    "binary": "binary",
    "multiclass": "multiclass", "softmax": "multiclass",
    **{a: "multiclassova" for a in ("multiclassova", "multiclass_ova", "ova", "ovr")},
    "cross_entropy": "cross_entropy", "xentropy": "cross_entropy",
    "cross_entropy_lambda": "cross_entropy_lambda", "xentlambda": "cross_entropy_lambda",
    "lambdarank": "lambdarank",
    **{a: "rank_xendcg" for a in ("rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart")},
}


def _real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)) \
        and math.isfinite(value)


def number(low: float = -math.inf, high: float = math.inf, *, integer: bool = False, open_low: bool = False
           ) -> Check:
    """A finite number (an integer when asked) in ``[low, high]`` (``(low, high]`` when ``open_low``)."""
    def check(value: Any) -> bool:
        if not _real(value) or (integer and not isinstance(value, (int, np.integer))):
            return False
        return (low < value if open_low else low <= value) and value <= high
    return check


#: Most classes a ``num_class`` keyword may state. LightGBM sizes buffers by it at every ``predict``,
#: whatever the booster holds (measured: 2**24 asked over 2 GB for six rows of a binary model), and
#: a refit by it times the rows; a fitted estimator's must be its booster's own count
#: (aprender.codec.schemas.lightgbm_models).
MAX_NUM_CLASS = 2**16

_INT = number(-(2**31), 2**31 - 1, integer=True)
_COUNT = number(0, 2**31 - 1, integer=True)
_POSITIVE_COUNT = number(1, 2**31 - 1, integer=True)


def choice(*values: Any) -> Check:
    return lambda value: type(value) in (str, type(None), bool) and value in values


def flag(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def numbers(value: Any) -> bool:
    return isinstance(value, (list, tuple, np.ndarray)) and len(value) <= 2**20 and all(_real(v) for v in value)


def _monotone(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(type(v) is int and v in (-1, 0, 1) for v in value)


def _groups(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(g, (list, tuple)) and all(type(i) is int and 0 <= i < 2**31 for i in g) for g in value)


_METRIC = re.compile(r"^[a-z0-9_@:]{1,64}$")


def _metric(value: Any) -> bool:
    """A metric name (``"auc"``, ``"ndcg@5"``) or a list of them: LightGBM reads them only while training."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return len(items) <= 64 and all(type(m) is str and _METRIC.match(m) for m in items)


def _counts(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) <= 2**20 and all(_COUNT(v) for v in value)


def _class_weight(value: Any) -> bool:
    return value is None or value == "balanced" or (
        isinstance(value, dict) and all(_real(w) for w in value.values()))


def _random_state(value: Any) -> bool:
    return value is None or isinstance(value, (np.random.RandomState, np.random.Generator)) or number(
        0, 2**32 - 1, integer=True)(value)


_NONNEGATIVE = number(0)
_POSITIVE = number(0, open_low=True)
_FRACTION = number(0, 1)
#: A share of rows or features to sample: LightGBM samples none at 0 and refuses it.
_SHARE = number(0, 1, open_low=True)

#: Constructor parameter -> its check.
CONSTRUCTOR: dict[str, Check] = {
    "boosting_type": choice("gbdt", "dart", "rf", "goss"),
    "objective": lambda value: value is None or (type(value) is str and value in OBJECTIVE_ALIASES),
    "num_leaves": number(2, 131072, integer=True),
    "max_depth": _INT,
    "learning_rate": _POSITIVE,
    "n_estimators": _COUNT,
    "subsample_for_bin": _POSITIVE_COUNT,
    "min_split_gain": _NONNEGATIVE,
    "min_child_weight": _NONNEGATIVE,
    "min_child_samples": _COUNT,
    "subsample": _SHARE,
    "subsample_freq": _COUNT,
    "colsample_bytree": _SHARE,
    "reg_alpha": _NONNEGATIVE,
    "reg_lambda": _NONNEGATIVE,
    "random_state": _random_state,
    "n_jobs": lambda value: value is None or _INT(value),  # and PARAM_RULES' bound
    "importance_type": choice("split", "gain"),
    "class_weight": _class_weight,
}

#: Keyword argument (a LightGBM parameter the constructor passes on) -> its check.
KWARGS: dict[str, Check] = {
    **dict.fromkeys(["verbose", "verbosity", "seed", "bagging_seed", "feature_fraction_seed", "extra_seed",
                     "drop_seed", "objective_seed", "data_random_seed", "early_stopping_round",
                     "early_stopping_rounds"], _INT),
    **dict.fromkeys(["min_data_in_leaf", "bagging_freq", "max_drop"], _COUNT),
    **dict.fromkeys(["min_data_per_group", "max_cat_threshold", "max_cat_to_onehot", "min_data_in_bin",
                     "lambdarank_truncation_level", "multi_error_top_k", "top_k", "bin_construct_sample_cnt"],
                    _POSITIVE_COUNT),
    "max_bin": number(2, 2**31 - 1, integer=True),
    "num_class": number(1, MAX_NUM_CLASS, integer=True),
    "max_delta_step": number(),
    **dict.fromkeys(["cat_smooth", "cat_l2", "path_smooth", "min_sum_hessian_in_leaf", "lambda_l1", "lambda_l2",
                     "linear_lambda", "min_gain_to_split", "monotone_penalty", "early_stopping_min_delta",
                     "cegb_tradeoff", "cegb_penalty_split"], _NONNEGATIVE),
    **dict.fromkeys(["alpha", "fair_c", "poisson_max_delta_step", "scale_pos_weight", "sigmoid"], _POSITIVE),
    "refit_decay_rate": _FRACTION,
    "tweedie_variance_power": lambda value: number(1, 2)(value) and value < 2,  # LightGBM's [1, 2)
    **dict.fromkeys(["feature_fraction_bynode", "feature_fraction", "bagging_fraction", "pos_bagging_fraction",
                     "neg_bagging_fraction"], _SHARE),
    **dict.fromkeys(["top_rate", "other_rate", "drop_rate", "skip_drop"], _FRACTION),
    **dict.fromkeys(["reg_sqrt", "boost_from_average", "is_unbalance", "extra_trees", "deterministic",
                     "force_col_wise", "force_row_wise", "xgboost_dart_mode", "uniform_drop", "use_missing",
                     "zero_as_missing", "feature_pre_filter", "lambdarank_norm", "first_metric_only",
                     "bagging_by_query", "use_quantized_grad", "is_provide_training_metric"], flag),
    "metric": _metric,
    "eval_at": _counts,
    "max_bin_by_feature": _counts,
    "data_sample_strategy": choice("bagging", "goss"),
    "monotone_constraints_method": choice("basic", "intermediate", "advanced"),
    "monotone_constraints": _monotone,
    "interaction_constraints": _groups,
    "label_gain": numbers,
}


def check_lightgbm_params(params: Mapping[str, Any], path: str) -> None:
    """Every parameter on its table with a value its check accepts; anything else raises FormatError."""
    for name, value in params.items():
        check = CONSTRUCTOR.get(name) or KWARGS.get(name)
        if check is None:
            raise fail(join(path, name), "is not a LightGBM parameter aprender loads: paths, machines, ports, "
                                         "devices and threads (but n_jobs) are refused")
        if not check(value):
            raise fail(join(path, name), f"LightGBM parameter {name!r} cannot be {preview(value, 60)}")


def check_other_params(params: Mapping[str, Any], other: Any, path: str) -> None:
    """``_other_params`` (what ``get_params`` and every ``predict`` read the keyword arguments from) holds
    every keyword argument among ``params`` and, as LightGBM's ``set_params`` leaves it, perhaps some
    constructor parameters, each with its value in ``params`` (which :func:`check_lightgbm_params` checked)."""
    extra = {name for name in params if name not in CONSTRUCTOR}
    if not isinstance(other, dict) or not extra <= set(other) <= set(params) or any(
            type(value) is not type(params[name]) or repr(value) != repr(params[name])
            for name, value in other.items()):
        raise fail(join(path, "_other_params"), "must hold the keyword arguments among the parameters, "
                                                f"{preview(sorted(extra), 80)}, with their values")


def check_eval_at(value: Any, path: str) -> None:
    """A ranker's ``_eval_at``, which ``predict`` passes to LightGBM: a few positions."""
    if not isinstance(value, (list, tuple)) or len(value) > 64 or not all(_COUNT(v) for v in value):
        raise fail(join(path, "_eval_at"), f"must be at most 64 positions, found {preview(value, 60)}")
