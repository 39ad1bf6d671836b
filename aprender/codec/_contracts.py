"""Contracts between a fitted meta-estimator and the fitted estimators it holds.

Each estimator of a file is checked alone by its schema; this module checks what no single
object can: that a nested fitted estimator agrees with **the contract its parent calls it
with**. A member fitted on another width, another class count or another number of outputs
is valid alone, yet the parent sizes its own buffers by its own state and hands them to the
member or reads the member's output into them (GradientBoosting's ``predict_stages`` writes
into an array sized by ``n_classes_`` from ``init_``'s ``predict_proba``; stacking
concatenates members' ``predict_proba`` into what ``final_estimator_`` reads; Bagging slices
``X`` by ``estimators_features_`` for members fitted on other columns).

:data:`CONTRACTS` maps a class key to one contract function per meta-estimator family. The
decoder calls :func:`check_contract` right after it built a fitted estimator, whose nested
estimators it built (and checked, under their own contracts) before: the tree is checked
bottom-up, each parent against its direct children. Widths are read from fitted state only
(``n_features_in_``, ``_n_features_out``, ``components_`` rows...); no member is ever run on a
probe row, since running a hostile member is what the contract guards against.

tests/test_contracts.py fails when an allow-listed class that holds a fitted estimator in a
fitted attribute has no entry here; tools/gen_threat_model.py writes the table into
docs/threat-model.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.exceptions import AprenderError

__all__ = ["CONTRACTS", "Contract", "check_contract", "contract_for"]

_SKIP = ("drop", "passthrough", None)


class Contract(NamedTuple):
    """What a parent requires of its nested fitted estimators, and the function that checks it."""

    rule: str
    check: Callable[[Any, str], None]


# --- what a fitted estimator declares about itself ------------------------------------------

def _stored(est: Any, name: str) -> Any:
    """A fitted attribute as stored, never a property (a search's ``n_features_in_`` delegates)."""
    return vars(est).get(name) if hasattr(est, "__dict__") else None


def _width(est: Any) -> int | None:
    """The input width ``est`` was fitted on, or None when it does not record one."""
    n = _stored(est, "n_features_in_")
    if n is None:  # LightGBM's estimators store ``_n_features_in`` (-1 unfitted); ``n_features_in_`` is a property
        n = _stored(est, "_n_features_in")
        n = n if isinstance(n, (int, np.integer)) and n >= 0 else None
    return int(n) if isinstance(n, (int, np.integer)) else None


def _n_classes(est: Any) -> int | None:
    classes = _stored(est, "classes_")
    if classes is None:  # LightGBM's estimators store ``_classes``; ``classes_`` is a property
        classes = _stored(est, "_classes")
    if isinstance(classes, np.ndarray) and classes.ndim == 1:
        return len(classes)
    return None


def _out_width(est: Any) -> int | None:
    """The width ``est.transform`` returns, derived from fitted state; None when unknown."""
    for name in ("_n_features_out", "n_features_out_"):
        n = _stored(est, name)
        if isinstance(n, (int, np.integer)):
            return int(n)
    components = _stored(est, "components_")
    if isinstance(components, np.ndarray) and components.ndim == 2:
        return components.shape[0]
    if type(est).__name__ in _WIDTH_PRESERVING:
        return _width(est)
    return None


#: Transformers whose output has their input's width (no stored output width to read).
_WIDTH_PRESERVING = frozenset({
    "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler", "Normalizer", "Binarizer",
    "QuantileTransformer", "PowerTransformer", "KernelCenterer",
})


def _members(value: Any) -> list[tuple[str, Any]]:
    """(label, estimator) of a list of estimators or of (name, estimator[, ...]) tuples."""
    out = []
    for i, item in enumerate(value if isinstance(value, (list, tuple)) else ()):
        if isinstance(item, tuple) and len(item) >= 2 and isinstance(item[0], str):
            out.append((f"{i}.{item[0]}", item[1]))
        else:
            out.append((str(i), item))
    return [(label, est) for label, est in out if not isinstance(est, str) and est is not None]


# --- the checks every contract is made of ---------------------------------------------------

def _same_width(child: Any, expected: int | None, where: str, what: str = "the parent") -> None:
    n = _width(child)
    if n is not None and expected is not None and n != expected:
        raise fail(where, f"{type(child).__name__} was fitted on {n} features, not the {expected} from {what}")


def _class_count(child: Any, expected: int | None, where: str) -> None:
    n = _n_classes(child)
    if n is not None and expected is not None and n != expected:
        raise fail(where, f"{type(child).__name__} knows {n} classes, the parent {expected}")


def _count(items: Iterable[Any], expected: int, what: str, path: str) -> None:
    n = len(list(items))
    if n != expected:
        raise fail(path, f"{n} {what}, the parent's state needs {expected}")


def _shared_width(est: Any, members: list[tuple[str, Any]]) -> int | None:
    """The width the parent feeds its members: its own, or (where ``n_features_in_`` is a property
    reading the first member, as in stacking) the first member's, which all the others must share."""
    return _width(est) or next((w for _, m in members if (w := _width(m)) is not None), None)


def _each_width(est: Any, path: str, attribute: str, classes: int | None = None) -> None:
    """Every member of ``attribute`` fitted on the parent's width (and its class count)."""
    members = _members(_stored(est, attribute))
    width = _shared_width(est, members)
    for label, member in members:
        # The path is built only for a member that breaks the contract: forests hold hundreds.
        if _width(member) not in (None, width) or (classes is not None and _n_classes(member) not in (None, classes)):
            _same_width(member, width, join(path, f"{attribute}.{label}"))
            _class_count(member, classes, join(path, f"{attribute}.{label}"))


def _single(attribute: str, n_out: bool = False) -> Callable[[Any, str], None]:
    """A contract for one nested estimator fitted on the parent's width (and class count)."""
    def check(est: Any, path: str) -> None:
        child = _stored(est, attribute)
        if child is None or isinstance(child, str):
            return
        where = join(path, attribute)
        _same_width(child, _width(est), where)
        _class_count(child, _n_classes(est), where)
        if n_out:
            _same_outputs(child, _stored(est, "n_outputs_"), where)
    return check


def _same_outputs(child: Any, expected: Any, where: str) -> None:
    n = _stored(child, "n_outputs_")
    if isinstance(n, int) and isinstance(expected, int) and n != expected:
        raise fail(where, f"{type(child).__name__} predicts {n} outputs, the parent {expected}")


# --- one contract per family ----------------------------------------------------------------

def _pipeline(est: Any, path: str) -> None:
    steps = [(i, name, step) for i, (name, step) in enumerate(est.steps) if step not in _SKIP]
    for (_, name, step), (j, next_name, nxt) in pairwise(steps):
        _same_width(nxt, _out_width(step), join(path, f"steps.{j}.{next_name}"), f"step '{name}'")


def _column_transformer(est: Any, path: str) -> None:
    inputs = _stored(est, "_transformer_to_input_indices") or {}
    outputs = _stored(est, "output_indices_") or {}
    for i, (name, trans, _) in enumerate(_stored(est, "transformers_") or ()):
        if trans in _SKIP or name not in inputs:
            continue
        where = join(path, f"transformers_.{i}.{name}")
        _same_width(trans, len(inputs[name]), where, "its column selection")
        n_out, span = _out_width(trans), outputs.get(name)
        if n_out is not None and isinstance(span, slice) and span.stop - span.start != n_out:
            raise fail(where, f"{type(trans).__name__} writes {n_out} columns into 'output_indices_' "
                              f"slice of {span.stop - span.start}")


def _feature_union(est: Any, path: str) -> None:
    members = [(f"{i}.{name}", t) for i, (name, t) in enumerate(est.transformer_list) if t not in _SKIP]
    widths = {_width(t) for _, t in members} - {None}
    if len(widths) > 1:
        raise fail(join(path, "transformer_list"), f"transformers fitted on different widths {sorted(widths)}: "
                                                    "a union feeds all of them the same rows")


def _member_output(member: Any, method: str, n_classes: int) -> int:
    """Columns stacking takes from ``method`` of a classifier member (binary keeps one)."""
    if method == "predict":
        return 1
    return 1 if n_classes == 2 else n_classes


def _stacking(est: Any, path: str) -> None:
    members = _members(_stored(est, "estimators_"))
    classes = _n_classes(est)
    methods = _stored(est, "stack_method_") or []
    _each_width(est, path, "estimators_", classes)
    if len(methods) != len(members):
        raise fail(join(path, "stack_method_"), f"{len(methods)} methods for {len(members)} fitted estimators")
    passthrough = (_shared_width(est, members) or 0) if getattr(est, "passthrough", False) else 0
    final = _stored(est, "final_estimator_")
    if classes is None and _stored(est, "classes_") is not None:
        # multilabel stacking: the stacked width depends on each member's output lists
        _stacked_outputs(est, len(members), None, _width(final), passthrough, path)
        return
    outputs = [_member_output(m, method, classes) if classes is not None else 1
               for (_, m), method in zip(members, methods, strict=True)]
    _stacked_outputs(est, len(members), outputs, None, passthrough, path)
    _same_width(final, sum(outputs) + passthrough, join(path, "final_estimator_"), "the stacked predictions")


def _stacked_outputs(est: Any, n_members: int, expected: list[int] | None, final_width: int | None,
                     passthrough: int, path: str) -> None:
    """``_n_feature_outs``, which ``get_feature_names_out`` makes that many names from, is what the members give:
    ``expected`` per member where the classes say it, else columns adding up to the final estimator's width."""
    outs = _stored(est, "_n_feature_outs")
    if outs is None:
        return
    where = join(path, "_n_feature_outs")
    if not isinstance(outs, list) or len(outs) != n_members or not all(type(n) is int and n >= 0 for n in outs):
        raise fail(where, f"must be one column count per fitted estimator ({n_members}), found {preview(outs, 60)}")
    if expected is not None and outs != expected:
        raise fail(where, f"is {preview(outs, 60)}, the members' stacked methods give {preview(expected, 60)}")
    if expected is None and final_width is not None and sum(outs) + passthrough != final_width:
        raise fail(where, f"adds up to {sum(outs)} columns (+ {passthrough} passed through), the final estimator "
                          f"takes {final_width}")


def _voting(est: Any, path: str) -> None:
    encoder = _stored(est, "le_")
    _each_width(est, path, "estimators_", _n_classes(encoder) if encoder is not None else None)


def _bagging(est: Any, path: str) -> None:
    members = _members(_stored(est, "estimators_"))
    features = _stored(est, "estimators_features_")
    if features is None:
        return
    _count(features, len(members), "feature subsets for the estimators", join(path, "estimators_features_"))
    classes = _stored(est, "n_classes_")
    for (label, member), subset in zip(members, features, strict=True):
        where = join(path, f"estimators_.{label}")
        _same_width(member, len(subset), where, "its 'estimators_features_' subset")
        own = _stored(member, "classes_")
        # A bootstrap sample may miss classes: a member knows a subset of the encoded labels,
        # which predict_proba uses as column indices into an array of n_classes_ columns.
        if isinstance(classes, (int, np.integer)) and isinstance(own, np.ndarray) and len(own) and (
                len(own) > classes or own.dtype.kind not in "iu" or own.min() < 0 or own.max() >= classes):
            raise fail(where, f"{type(member).__name__} classes {own[:8].tolist()} are not among the "
                              f"parent's {int(classes)} encoded classes")


def _forest(est: Any, path: str) -> None:
    trees = _stored(est, "estimators_")
    if isinstance(trees, list):
        # Hundreds of trees: one pass over their dicts when they agree (the usual case).
        seen = {(d.get("n_features_in_"), d.get("n_outputs_"), _n_classes(t)) for t in trees if (d := vars(t))}
        if seen <= {(_width(est), _stored(est, "n_outputs_"), _forest_classes(est))}:
            return
    classes = _stored(est, "n_classes_")
    _each_width(est, path, "estimators_", int(classes) if isinstance(classes, (int, np.integer)) else None)
    outputs = _stored(est, "n_outputs_")
    for label, member in _members(_stored(est, "estimators_")):
        if _stored(member, "n_outputs_") not in (None, outputs):
            _same_outputs(member, outputs, join(path, f"estimators_.{label}"))


def _forest_classes(est: Any) -> int | None:
    classes = _stored(est, "n_classes_")
    return int(classes) if isinstance(classes, (int, np.integer)) else None


def _adaboost(est: Any, path: str) -> None:
    _each_width(est, path, "estimators_", _n_classes(est))
    weights = _stored(est, "estimator_weights_")
    if isinstance(weights, np.ndarray) and len(weights) < len(_members(_stored(est, "estimators_"))):
        raise fail(join(path, "estimator_weights_"), "fewer weights than fitted estimators")


def _one_vs_rest(est: Any, path: str) -> None:
    n = _n_classes(est)
    members = _members(_stored(est, "estimators_"))
    if n is not None and not getattr(est, "multilabel_", False):
        _count(members, 1 if n == 2 else n, "binary estimators", join(path, "estimators_"))
    for label, member in members:
        where = join(path, f"estimators_.{label}")
        _same_width(member, _width(est), where)
        if (_n_classes(member) or 0) > 2:
            raise fail(where, f"{type(member).__name__} is not a binary classifier")


def _one_vs_one(est: Any, path: str) -> None:
    n = _n_classes(est) or 0
    members = _members(_stored(est, "estimators_"))
    _count(members, n * (n - 1) // 2, "pairwise estimators", join(path, "estimators_"))
    _each_width(est, path, "estimators_")


def _output_code(est: Any, path: str) -> None:
    book = _stored(est, "code_book_")
    members = _members(_stored(est, "estimators_"))
    if isinstance(book, np.ndarray) and book.ndim == 2:
        _count(members, book.shape[1], "estimators for the code book's columns", join(path, "estimators_"))
    _each_width(est, path, "estimators_")


def _multi_output(est: Any, path: str) -> None:
    _each_width(est, path, "estimators_")


def _chain(est: Any, path: str) -> None:
    members = _members(_stored(est, "estimators_"))
    order = _stored(est, "order_")
    if order is not None:
        _count(members, len(order), "chained estimators for the chain's order", join(path, "estimators_"))
    base = _width(est)
    for i, (label, member) in enumerate(members):
        # Link i reads the input and the i predictions before it (sklearn's chain).
        _same_width(member, None if base is None else base + i, join(path, f"estimators_.{label}"), "the chain")


def _rfe(est: Any, path: str) -> None:
    support = _stored(est, "support_")
    if isinstance(support, np.ndarray):
        _count(support, _width(est) or 0, "entries in 'support_'", join(path, "support_"))
        _same_width(_stored(est, "estimator_"), int(np.count_nonzero(support)), join(path, "estimator_"),
                    "the selected features")


def _transformed_target(est: Any, path: str) -> None:
    _single("regressor_")(est, path)
    transformer = _stored(est, "transformer_")
    if transformer is not None:
        _same_width(transformer, 1, join(path, "transformer_"), "the target column")


#: The calibrator class each calibration method fits (predict_proba's path follows the method).
_CALIBRATORS = {"sigmoid": "_SigmoidCalibration", "isotonic": "IsotonicRegression",
                "temperature": "_TemperatureScaling"}


def _calibrated(est: Any, path: str) -> None:
    n = _n_classes(est)
    for i, calibrated in enumerate(_stored(est, "calibrated_classifiers_") or ()):
        where = join(path, f"calibrated_classifiers_.{i}")
        _same_width(getattr(calibrated, "estimator", None), _width(est), join(where, "estimator"))
        calibrators = getattr(calibrated, "calibrators", ())
        method = getattr(calibrated, "method", None)
        if n is not None:  # temperature scaling fits one calibrator for every class
            _count(calibrators, 1 if n == 2 or method == "temperature" else n, "calibrators",
                   join(where, "calibrators"))
        wanted = _CALIBRATORS.get(method)
        for j, calibrator in enumerate(calibrators or ()):
            if wanted is not None and type(calibrator).__name__ != wanted:
                raise fail(join(where, f"calibrators.{j}"), f"a {type(calibrator).__name__}; method={method!r} "
                                                            f"fits a {wanted}")
        own = getattr(calibrated, "classes", None)
        if n is not None and isinstance(own, np.ndarray) and len(own) != n:
            raise fail(where, f"{len(own)} classes, the parent {n}")


def _gradient_boosting(est: Any, path: str) -> None:
    init = _stored(est, "init_")
    if init is None or isinstance(init, str):
        return
    where = join(path, "init_")
    _same_width(init, _width(est), where)
    n = _stored(est, "n_classes_")
    if isinstance(n, (int, np.integer)):
        # predict_stages adds trees into raw predictions shaped by the link of init_'s
        # predict_proba: one column per class of the parent.
        _class_count(init, int(n), where)
    elif (_stored(init, "n_outputs_") or 1) != 1:
        raise fail(where, f"{type(init).__name__} predicts {_stored(init, 'n_outputs_')} outputs, "
                          "gradient boosting one")


def _embedding(est: Any, path: str) -> None:
    _forest(est, path)
    encoder = _stored(est, "one_hot_encoder_")
    if encoder is not None:
        _same_width(encoder, len(_members(_stored(est, "estimators_"))), join(path, "one_hot_encoder_"),
                    "one leaf index per tree")


def _isomap(est: Any, path: str) -> None:
    _single("nbrs_")(est, path)
    neighbors, kernel_pca = _stored(est, "nbrs_"), _stored(est, "kernel_pca_")
    if neighbors is not None and kernel_pca is not None:
        # transform() hands kernel_pca_ a row of geodesic distances to every training sample.
        _same_width(kernel_pca, _stored(neighbors, "n_samples_fit_"), join(path, "kernel_pca_"),
                    "the training samples of 'nbrs_'")


def _iterative_imputer(est: Any, path: str) -> None:
    """The initial imputer sees every column; each step's estimator exactly its neighbour columns."""
    _same_width(_stored(est, "initial_imputer_"), _width(est), join(path, "initial_imputer_"))
    for i, step in enumerate(_stored(est, "imputation_sequence_") or []):
        neighbours = getattr(step, "neighbor_feat_idx", None)
        if neighbours is not None:
            _same_width(step.estimator, len(neighbours), join(path, f"imputation_sequence_.{i}.estimator"),
                        "its neighbour features")


def _delegates(est: Any, path: str) -> None:
    """The parent reads width and classes from the nested estimator itself: nothing can disagree."""


_SINGLE = "the nested estimator's `n_features_in_` and `classes_` equal the parent's"
_MEMBERS = "every member's `n_features_in_` equals the parent's"
_BAG = ("`estimators_features_` has one subset per member; member i was fitted on `len(estimators_features_[i])` "
        "features, its classes a subset of `range(n_classes_)`")
_FOREST = "every tree fitted on `n_features_in_`, `n_outputs_` and `n_classes_` (arrays checked by the forest schema)"
_SEARCH = "`n_features_in_` and `classes_` are read from `best_estimator_` itself: none to disagree"

#: class key -> the contract its nested fitted estimators must keep.
CONTRACTS: dict[str, Contract] = {
    "sklearn.pipeline.Pipeline": Contract(
        "step i+1's `n_features_in_` equals step i's output width (`_n_features_out`, `components_` rows, ...)",
        _pipeline),
    "sklearn.compose.ColumnTransformer": Contract(
        "each transformer's `n_features_in_` equals its column count, its output width its `output_indices_` slice",
        _column_transformer),
    "sklearn.pipeline.FeatureUnion": Contract("every transformer fitted on the same width", _feature_union),
    "sklearn.ensemble.StackingClassifier": Contract(
        f"{_MEMBERS}, class count the parent's; `final_estimator_` width equals the stacked columns "
        "(per `stack_method_`, class count, passthrough), and `_n_feature_outs` each member's columns", _stacking),
    "sklearn.ensemble.StackingRegressor": Contract(
        f"{_MEMBERS}; `final_estimator_` width equals members (+ passthrough width), `_n_feature_outs` one column "
        "each", _stacking),
    "sklearn.ensemble.VotingClassifier": Contract(f"{_MEMBERS}, class count `le_.classes_`'s", _voting),
    "sklearn.ensemble.VotingRegressor": Contract(_MEMBERS, _voting),
    "sklearn.ensemble.BaggingClassifier": Contract(_BAG, _bagging),
    "sklearn.ensemble.BaggingRegressor": Contract(_BAG, _bagging),
    "sklearn.ensemble.IsolationForest": Contract(_BAG, _bagging),
    "sklearn.ensemble.AdaBoostClassifier": Contract(f"{_MEMBERS}, classes the parent's; a weight per member",
                                                    _adaboost),
    "sklearn.ensemble.AdaBoostRegressor": Contract(f"{_MEMBERS}; a weight per member", _adaboost),
    "sklearn.ensemble.RandomForestClassifier": Contract(_FOREST, _forest),
    "sklearn.ensemble.RandomForestRegressor": Contract(_FOREST, _forest),
    "sklearn.ensemble.ExtraTreesClassifier": Contract(_FOREST, _forest),
    "sklearn.ensemble.ExtraTreesRegressor": Contract(_FOREST, _forest),
    "sklearn.ensemble.RandomTreesEmbedding": Contract(
        f"{_FOREST}; `one_hot_encoder_` fitted on one column per tree", _embedding),
    "sklearn.ensemble.GradientBoostingClassifier": Contract(
        "`init_` fitted on `n_features_in_`, its `predict_proba` one column per class of `n_classes_`",
        _gradient_boosting),
    "sklearn.ensemble.GradientBoostingRegressor": Contract(
        "`init_` fitted on `n_features_in_`, predicting one output", _gradient_boosting),
    "sklearn.multiclass.OneVsRestClassifier": Contract(
        f"{_MEMBERS}; one binary member per class (one for two classes)", _one_vs_rest),
    "sklearn.multiclass.OneVsOneClassifier": Contract(f"{_MEMBERS}; n(n-1)/2 pairwise members", _one_vs_one),
    "sklearn.multiclass.OutputCodeClassifier": Contract(f"{_MEMBERS}; one member per `code_book_` column",
                                                        _output_code),
    "sklearn.multioutput.MultiOutputClassifier": Contract(_MEMBERS, _multi_output),
    "sklearn.multioutput.MultiOutputRegressor": Contract(_MEMBERS, _multi_output),
    "sklearn.multioutput.ClassifierChain": Contract(
        "one member per `order_` entry; member i fitted on `n_features_in_ + i` features", _chain),
    "sklearn.multioutput.RegressorChain": Contract(
        "one member per `order_` entry; member i fitted on `n_features_in_ + i` features", _chain),
    "sklearn.feature_selection.RFE": Contract(
        "`support_` has `n_features_in_` entries; `estimator_` fitted on the selected count", _rfe),
    "sklearn.feature_selection.RFECV": Contract(
        "`support_` has `n_features_in_` entries; `estimator_` fitted on the selected count", _rfe),
    "sklearn.feature_selection.SelectFromModel": Contract(
        "`n_features_in_` and the support mask are read from `estimator_` itself: none to disagree", _delegates),
    "sklearn.compose.TransformedTargetRegressor": Contract(
        "`regressor_` fitted on the parent's width; `transformer_` on one column", _transformed_target),
    "sklearn.calibration.CalibratedClassifierCV": Contract(
        "each calibrated classifier's estimator fitted on the parent's width, one calibrator per class "
        "(one for two), its classes the parent's", _calibrated),
    "sklearn.semi_supervised.SelfTrainingClassifier": Contract(_SINGLE, _single("estimator_")),
    "sklearn.model_selection.TunedThresholdClassifierCV": Contract(_SINGLE, _single("estimator_")),
    "sklearn.model_selection.FixedThresholdClassifier": Contract(_SINGLE, _single("estimator_")),
    "sklearn.linear_model.RANSACRegressor": Contract(_SINGLE, _single("estimator_")),
    "sklearn.gaussian_process.GaussianProcessClassifier": Contract(_SINGLE, _single("base_estimator_")),
    "sklearn.manifold.Isomap": Contract(
        "`nbrs_` fitted on the parent's width; `kernel_pca_` on one column per sample of `nbrs_`", _isomap),
    "sklearn.manifold.LocallyLinearEmbedding": Contract(_SINGLE, _single("nbrs_")),
    "sklearn.semi_supervised.LabelPropagation": Contract(_SINGLE, _single("nn_fit")),
    "sklearn.semi_supervised.LabelSpreading": Contract(_SINGLE, _single("nn_fit")),
    "sklearn.model_selection.GridSearchCV": Contract(_SEARCH, _delegates),
    "sklearn.model_selection.RandomizedSearchCV": Contract(_SEARCH, _delegates),
    "sklearn.model_selection.HalvingGridSearchCV": Contract(_SEARCH, _delegates),
    "sklearn.model_selection.HalvingRandomSearchCV": Contract(_SEARCH, _delegates),
    "sklearn.impute.IterativeImputer": Contract(
        "`initial_imputer_` fitted on the parent's width, each step's estimator on its `neighbor_feat_idx` "
        "columns", _iterative_imputer),
    "sklearn.frozen.FrozenEstimator": Contract(
        "width and classes are the frozen estimator's own: none to disagree", _delegates),
    "aprender.ensemble.MixtureOfExpertsClassifier": Contract(
        "experts and `gating_` fitted on the mixture's width, experts' classes the mixture's "
        "(checked by `schemas/moe.py`)", _delegates),
    "aprender.ensemble.MixtureOfExpertsRegressor": Contract(
        "experts and `gating_` fitted on the mixture's width (checked by `schemas/moe.py`)", _delegates),
}

_BY_TYPE: dict[type, Contract | None] = {}


def contract_for(cls: type) -> Contract | None:
    """The contract of ``cls``: its own key's or that of the first base class that has one."""
    if cls not in _BY_TYPE:
        from aprender.codec._registry import public_key

        found = (CONTRACTS.get(public_key(base)) for base in cls.__mro__)
        _BY_TYPE[cls] = next((c for c in found if c is not None), None)
    return _BY_TYPE[cls]


def check_contract(est: Any, path: str) -> None:
    """Raise :class:`FormatError` when a fitted ``est`` holds a nested estimator that breaks its contract."""
    contract = contract_for(type(est))
    if contract is None:
        return
    try:
        contract.check(est, path)
    except AprenderError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # The parent's own fields are type-checked by its schema only where it has one.
        raise fail(path, f"nested estimators cannot be checked: {type(exc).__name__}: {exc}") from None
