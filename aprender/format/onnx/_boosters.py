"""ONNX converters for the XGBoost, LightGBM and CatBoost scikit-learn estimators (private).

skl2onnx knows none of these classes. They are registered with it (through
:func:`~aprender.format.onnx._converters.register_converter`) only when their library
is imported, which it is whenever a model of it exists, so an export of a scikit-learn
model never imports a booster library:

- **LightGBM, XGBoost**: onnxmltools' converters (``convert_lightgbm``, ``convert_xgboost``)
  with skl2onnx's linear classifier / regressor shape calculators; classifiers take the
  ``zipmap`` and ``nocl`` options, so they return a plain probability tensor as every
  other classifier does here, alone or as a Pipeline's last step.
- **CatBoost**: CatBoost's own ONNX export (``catboost.utils.convert_to_onnx_object``), whose
  one ``TreeEnsemble*`` node is copied into the graph being built.

Exactness (measured; docs/onnx.md, "XGBoost, LightGBM and CatBoost"), kept by
:class:`_Precision` around the converters' container:

- XGBoost stores float32 thresholds and compares float32 inputs with ``<``; CatBoost
  compares float32 inputs with float32 borders: a float32 graph decides as they do, and a
  double graph casts the input to float32 before their trees, as they do.
- LightGBM stores double thresholds and compares double inputs with ``<=``. A float32 graph
  whose thresholds are rounded to nearest sends a float32 value lying between a threshold
  and its rounding the other way. Each threshold is therefore rounded *toward the branch it
  decides* (:func:`float32_toward`), so the float32 graph decides every float32 input as
  LightGBM does; a double graph keeps the thresholds double (``nodes_values_as_tensor``).
  LightGBM reads ``|x| <= 1e-35f`` as 0 (:func:`lightgbm_zero_band`).
- LightGBM fitted on pandas ``category`` columns reads them through ``_booster_frames``.

What these graphs cannot reproduce is refused before conversion (:func:`booster_gap`).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from aprender.format.onnx._converters import register_converter

__all__ = ["ESTIMATORS", "LIGHTGBM_ZERO", "OBJECTIVES", "booster_gap", "booster_splits", "double_attributes",
           "MAX_SPLIT_CATEGORIES", "float32_toward", "is_booster", "lightgbm_zero_band", "positional",
           "register_installed"]

#: Options of the boosters' classifier converters (as skl2onnx's own tree classifiers).
_CLASSIFIER_OPTIONS = {"zipmap": [True, False, "columns"], "nocl": [True, False]}
_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor")
#: Libraries whose estimators are registered, by module name.
_registered: set[str] = set()


def is_booster(est: Any) -> bool:
    """``est`` is an estimator of XGBoost, LightGBM or CatBoost."""
    return type(est).__module__.split(".")[0] in ("xgboost", "lightgbm", "catboost")


#: library -> its estimator classes that export, each with whether it is a classifier.
ESTIMATORS: dict[str, tuple[tuple[str, bool], ...]] = {
    "lightgbm": (("LGBMClassifier", True), ("LGBMRegressor", False), ("LGBMRanker", False)),
    "xgboost": (("XGBClassifier", True), ("XGBRegressor", False), ("XGBRanker", False),
                ("XGBRFClassifier", True), ("XGBRFRegressor", False)),
    "catboost": (("CatBoostClassifier", True), ("CatBoostRegressor", False)),
}


def register_installed() -> None:
    """Register the converters of every booster library imported so far (once each).

    A library that is not imported has no fitted model in this process, so nothing is
    imported here: a scikit-learn export stays free of them.
    """
    for library, classes in ESTIMATORS.items():
        if library not in sys.modules or library in _registered:
            continue
        _registered.add(library)
        if library == "lightgbm":
            from aprender.format.onnx._booster_frames import register_frame

            register_frame()
        module = sys.modules[library]  # imported already (the test above)
        convert = {"lightgbm": _convert_lightgbm, "xgboost": _convert_xgboost, "catboost": _convert_catboost}[library]
        for name, classifier in classes:
            _register(getattr(module, name), convert, classifier, library)


def _register(cls: type, convert: Callable[..., Any], classifier: bool, library: str) -> None:
    from skl2onnx.common.shape_calculator import (
        calculate_linear_classifier_output_shapes,
        calculate_linear_regressor_output_shapes,
    )

    alias = {"lightgbm": "LightGbm", "xgboost": "XGBoost", "catboost": "CatBoost"}[library] + cls.__name__
    # CatBoost's classifiers are no ClassifierMixin, so skl2onnx's parser would declare one output;
    # LightGBM's may read a DataFrame with category columns (one input per column).
    parser = {"catboost": _parse_classifier if classifier else None, "lightgbm": _parse_lightgbm}.get(library)
    if classifier:
        register_converter(cls, calculate_linear_classifier_output_shapes, convert, parser, alias=alias,
                           options=_CLASSIFIER_OPTIONS)
    else:
        register_converter(cls, calculate_linear_regressor_output_shapes, convert, parser, alias=alias)


def _parse_lightgbm(scope: Any, model: Any, inputs: list[Any], custom_parsers: Any = None) -> list[Any]:
    """skl2onnx's parse, after turning per-column inputs into the matrix the trees read."""
    from skl2onnx._parse import _parse_sklearn_classifier, _parse_sklearn_simple_model
    from sklearn.base import is_classifier

    from aprender.format.onnx._booster_frames import frame_inputs

    parse = _parse_sklearn_classifier if is_classifier(model) else _parse_sklearn_simple_model
    return parse(scope, model, frame_inputs(scope, model, inputs), custom_parsers=custom_parsers)


def _parse_classifier(scope: Any, model: Any, inputs: list[Any], custom_parsers: Any = None) -> list[Any]:
    """Declare a classifier's label and probabilities (skl2onnx's own parser declares one output here).

    skl2onnx gives two outputs to ``ClassifierMixin`` subclasses only, which CatBoost's are not.
    """
    from skl2onnx._parse import _apply_zipmap
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common.data_types import Int64TensorType, StringTensorType, guess_tensor_type

    options = scope.get_options(model, {"zipmap": True})
    operator = scope.declare_local_operator(sklearn_operator_name_map[type(model)], model)
    operator.inputs = inputs
    strings = all(isinstance(c, str) for c in model.classes_)
    operator.outputs.append(scope.declare_local_variable("label", StringTensorType() if strings else Int64TensorType()))
    operator.outputs.append(scope.declare_local_variable("probabilities", guess_tensor_type(inputs[0].type)))
    if options["zipmap"] is False:
        return list(operator.outputs)
    return _apply_zipmap(options["zipmap"], scope, model, inputs[0].type, operator.outputs)


def float32_toward(thresholds: list[float], modes: list[str]) -> list[float]:
    """Round double thresholds to float32 so that no float32 input changes branch.

    ``x <= t`` over float32 ``x`` equals ``x <= f`` for ``f`` the largest float32 not above
    ``t``; ``x < t`` equals ``x < f`` for ``f`` the smallest float32 not below ``t`` (and
    ``>``, ``>=`` are their negations). Equality tests (categories) and leaves keep the
    nearest float32.
    """
    values = np.asarray(thresholds, dtype=np.float64)
    with np.errstate(over="ignore"):  # a threshold beyond float32's range becomes its largest value
        nearest = values.astype(np.float32)
    down = np.where(nearest.astype(np.float64) > values, np.nextafter(nearest, np.float32(-np.inf)), nearest)
    up = np.where(nearest.astype(np.float64) < values, np.nextafter(nearest, np.float32(np.inf)), nearest)
    mode = np.asarray(modes)
    out = np.where(np.isin(mode, ["BRANCH_LEQ", "BRANCH_GT"]), down,
                   np.where(np.isin(mode, ["BRANCH_LT", "BRANCH_GTE"]), up, nearest))
    return [float(v) for v in out]


#: LightGBM reads every value with ``|x| <= kZeroThreshold`` (1e-35f) as 0 (its dense-row reader drops them).
LIGHTGBM_ZERO = float(np.float32(1e-35))


def lightgbm_zero_band(thresholds: list[float], modes: list[str]) -> list[float]:
    """LightGBM's ``<=`` thresholds made to send values within ``LIGHTGBM_ZERO`` of 0 the way of 0.

    LightGBM predicts as if ``x`` were 0 when ``|x| <= 1e-35f``. A threshold outside that
    band decides those values as it decides 0; one inside it (LightGBM writes -1e-35f for
    the split between negatives and zeros) does not, and is moved to the band's edge:
    ``-band <= t < 0`` sends only ``x < -band`` left, ``0 <= t < band`` every ``x <= band``.
    Measured: one of 175 probe rows, a value of -1e-35f at a -1e-35f threshold, went the
    other way before.
    """
    out = list(thresholds)
    for i, (t, mode) in enumerate(zip(thresholds, modes, strict=True)):
        if mode == "BRANCH_LEQ" and -LIGHTGBM_ZERO <= t < LIGHTGBM_ZERO:
            out[i] = float(np.nextafter(-LIGHTGBM_ZERO, -np.inf)) if t < 0 else LIGHTGBM_ZERO
    return out


class _Precision:
    """The converter's container, made to compare and compute as the library does.

    - LightGBM: thresholds within 1e-35 of 0 move to the edge of the band LightGBM reads as 0
      (:func:`lightgbm_zero_band`).
    - float32 graph: LightGBM's double thresholds are rounded toward their branch
      (:func:`float32_toward`).
    - double graph (``dtype=numpy.float64``): LightGBM's trees get double thresholds and leaf
      weights (ai.onnx.ml 3's ``*_as_tensor`` attributes) and read the double input, as
      LightGBM does; XGBoost's and CatBoost's trees read the input cast to float32, as those
      libraries do. Their converters compute in float32 after the trees, so float outputs are
      cast to the declared double outputs at the end (:meth:`finish`).
    """

    def __init__(self, scope: Any, operator: Any, container: Any, double_thresholds: bool) -> None:
        from onnx import TensorProto
        from skl2onnx.common.data_types import DoubleTensorType

        self._container = container
        self._double_thresholds = double_thresholds
        self._double = isinstance(operator.inputs[0].type, DoubleTensorType)
        self._renamed = {o.full_name: scope.get_unique_variable_name(f"{o.full_name}_float")
                         for o in operator.outputs if self._double and isinstance(o.type, DoubleTensorType)}
        self._input = operator.inputs[0].full_name
        self._read = self._input
        if self._double and not double_thresholds:
            self._read = scope.get_unique_variable_name(f"{self._input}_float")
            container.add_node("Cast", [self._input], [self._read], to=TensorProto.FLOAT,
                               name=scope.get_unique_operator_name("CastToFloat"))
        self._scope = scope

    def __getattr__(self, name: str) -> Any:
        return getattr(self._container, name)

    def add_node(self, op_type: str, inputs: Any, outputs: Any, *args: Any, **attrs: Any) -> Any:
        inputs = [self._read if n == self._input else n for n in ([inputs] if isinstance(inputs, str) else inputs)]
        outputs = [self._renamed.get(n, n) for n in ([outputs] if isinstance(outputs, str) else outputs)]
        if op_type in _TREE_OPS and self._double_thresholds:
            attrs["nodes_values"] = lightgbm_zero_band(attrs["nodes_values"], attrs["nodes_modes"])
            if self._double:
                attrs = double_attributes(attrs)
            else:
                attrs["nodes_values"] = float32_toward(attrs["nodes_values"], attrs["nodes_modes"])
        return self._container.add_node(op_type, inputs, outputs, *args, **attrs)

    def finish(self) -> None:
        from onnx import TensorProto

        for declared, computed in self._renamed.items():
            self._container.add_node("Cast", [computed], [declared], to=TensorProto.DOUBLE,
                                     name=self._scope.get_unique_operator_name("CastToDouble"))


def double_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    """Tree attributes with thresholds and weights as double tensors (ai.onnx.ml opset 3)."""
    from onnx import numpy_helper

    out = dict(attrs)
    for name in ("nodes_values", "class_weights", "target_weights", "base_values"):
        if name in out:
            values = np.asarray(out.pop(name), dtype=np.float64)
            out[f"{name}_as_tensor"] = numpy_helper.from_array(values, name=f"{name}_as_tensor")
    return out


def _converter(convert: Callable[..., Any], double_thresholds: bool) -> Callable[..., Any]:
    """``convert`` run with :class:`_Precision` around the container."""
    def converter(scope: Any, operator: Any, container: Any) -> None:
        precise = _Precision(scope, operator, container, double_thresholds)
        convert(scope, operator, precise)
        precise.finish()

    return converter


def _convert_lightgbm(scope: Any, operator: Any, container: Any) -> None:
    from onnxmltools.convert.lightgbm.operator_converters.LightGbm import convert_lightgbm

    _converter(convert_lightgbm, double_thresholds=True)(scope, operator, container)


def positional(est: Any) -> Any:
    """A shallow copy of an XGBoost estimator whose booster (a copy) names its features by position.

    onnxmltools reads each split's feature from the name XGBoost's dump prints: ``f<k>`` or a
    number as column ``k``, any other name refused. A booster's names are its training columns'
    (in a file, any strings): columns named ``f4 f3 f2 f1 f0`` or ``4 3 2 1 0`` made a graph that
    reads them reversed (measured: probabilities off by 0.75), ``f4000000`` one that reads past
    its 5-wide input, and ``a b c`` refused. The graph's input is the matrix in column order.
    """
    booster = est.get_booster().copy()
    booster.feature_names = None
    out = copy.copy(est)
    out._Booster = booster
    return out


def _convert_xgboost(scope: Any, operator: Any, container: Any) -> None:
    from onnxmltools.convert.xgboost.operator_converters.XGBoost import convert_xgboost

    operator.raw_operator = positional(operator.raw_operator)
    _converter(convert_xgboost, double_thresholds=False)(scope, operator, container)


def _convert_catboost(scope: Any, operator: Any, container: Any) -> None:
    _converter(_copy_catboost_trees, double_thresholds=False)(scope, operator, container)


def _copy_catboost_trees(scope: Any, operator: Any, container: Any) -> None:
    """Copy the one tree node of CatBoost's own ONNX export into the graph."""
    import onnx
    from catboost.utils import convert_to_onnx_object

    from aprender.exceptions import UnsupportedExportError

    onx = convert_to_onnx_object(operator.raw_operator)
    nodes = list(onx.graph.node)
    if not nodes or nodes[0].op_type not in _TREE_OPS or any(n.op_type != "ZipMap" for n in nodes[1:]) \
            or len(onx.graph.initializer):
        raise UnsupportedExportError(
            f"cannot export {type(operator.raw_operator).__name__} to ONNX: CatBoost's ONNX export made a graph of "
            f"{[n.op_type for n in nodes]}, not the one tree ensemble aprender can place in a pipeline's graph")
    tree = nodes[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in tree.attribute}
    attrs = {k: [v.decode() for v in value] if k == "classlabels_strings" else
             value.decode() if isinstance(value, bytes) else value for k, value in attrs.items()}
    outputs = [o.full_name for o in operator.outputs]
    exponent = _objective(operator.raw_operator, "catboost") in _CATBOOST_EXP
    scores = [scope.get_unique_variable_name("raw_score")] if exponent else outputs
    container.add_node(tree.op_type, [operator.inputs[0].full_name], scores, op_domain="ai.onnx.ml",
                       name=scope.get_unique_operator_name(tree.op_type), **attrs)
    if exponent:  # CatBoost's export stops at the raw score; predict() returns its exponent
        container.add_node("Exp", scores, outputs, name=scope.get_unique_operator_name("Exp"))


#: Objectives whose converted graph computes something else than ``predict`` / ``predict_proba``,
#: per library, each with the measured difference. Verification refuses them too; this names why.
OBJECTIVES: dict[str, dict[str, str]] = {
    "xgboost": {
        "reg:logistic": "onnxmltools' regressor graph leaves out the sigmoid (measured: every value off, up to 0.82)",
        "multi:softmax": "predict_proba of a softmax-objective model is not what onnxmltools' graph returns "
                         "(measured: every row off, up to 1.6); use multi:softprob",
        "binary:logitraw": "onnxmltools has no graph for it",
    },
    "lightgbm": {
        "multiclassova": "LightGBM applies one sigmoid per class, onnxmltools' graph a softmax (measured: every "
                         "row off, up to 0.18)",
        "fair": "onnxmltools has no graph for it",
        "mape": "onnxmltools has no graph for it",
        "cross_entropy": "onnxmltools has no graph for it",
        "cross_entropy_lambda": "onnxmltools has no graph for it",
    },
    "catboost": {
        "MultiClassOneVsAll": "CatBoost applies one sigmoid per class, its ONNX export a softmax (measured: every "
                              "row off, up to 0.17)",
        "RMSEWithUncertainty": "it predicts two values per row, which CatBoost's ONNX export does not",
        "MultiRMSE": "it predicts several targets, which CatBoost's ONNX export does not",
    },
}


#: CatBoost losses whose predict() is exp(raw score), which CatBoost's ONNX export leaves out.
_CATBOOST_EXP = frozenset({"Poisson", "Tweedie"})


def _objective(est: Any, library: str) -> str | None:
    if library == "catboost":
        # The model's own loss: get_all_params reads training options a model loaded from JSON (as aprender
        # rebuilds one) does not hold, and raised for every loaded CatBoost model.
        loss = est._object._get_loss_function_name() if est.is_fitted() else est.get_params().get("loss_function")
        return str(loss).split(":")[0] if loss is not None else None
    objective = getattr(est, "objective_", None) if library == "lightgbm" else None
    objective = objective or est.get_params().get("objective")
    return objective if isinstance(objective, str) else None


def booster_gap(est: Any) -> str | None:
    """Why a booster's ONNX graph would not predict as the estimator does, or None."""
    library = type(est).__module__.split(".")[0]
    gap = {"lightgbm": _lightgbm_gap, "xgboost": _xgboost_gap, "catboost": _catboost_gap}.get(library)
    if gap is None:
        return None
    objective = _objective(est, library)
    if objective in OBJECTIVES[library]:
        return f"objective {objective!r}: {OBJECTIVES[library][objective]}"
    return gap(est)


def _lightgbm_gap(est: Any) -> str | None:
    params = est.get_params()
    if params.get("linear_tree"):
        return "linear_tree=True: its leaves are linear models, and ONNX's tree ensembles hold constant leaves"
    if params.get("boosting_type") == "rf":
        # Measured: 41 of 91 labels and every probability wrong (max 0.87) on a 5-tree forest.
        return ("boosting_type='rf': onnxmltools' random-forest graph divides the positive-class score by a "
                "fixed 100, which is not what LightGBM predicts")
    if params.get("zero_as_missing"):
        return ("zero_as_missing=True: LightGBM sends zeros the way of missing values, and ONNX's tree ensembles "
                "compare zeros as numbers")
    if callable(params.get("objective")):
        return "a custom objective function: the graph cannot tell which output transform it needs"
    most = _lightgbm_split_categories(est)
    if most > MAX_SPLIT_CATEGORIES:
        return (f"a categorical split tests {most} categories: onnxmltools makes one chained node per category, "
                f"recursively (at most {MAX_SPLIT_CATEGORIES} convert; a 412 KB file of three 65,536-category "
                "splits ran 79 s before a RecursionError)")
    return None


#: Most categories one LightGBM categorical split may test for an export. onnxmltools turns a split into a
#: chain of one ``BRANCH_EQ`` node per category and walks it recursively, so past Python's recursion limit
#: it fails, after spending time and memory in proportion. A fit's splits test at most ``max_cat_threshold``
#: categories (32 by default).
MAX_SPLIT_CATEGORIES = 512


def _lightgbm_split_categories(est: Any) -> int:
    """The most categories any categorical split of a fitted LightGBM estimator tests (0 if none)."""
    from aprender.codec.schemas._lgbm_text import parse_model
    from aprender.exceptions import UnsupportedTypeError

    if getattr(est, "_Booster", None) is None:
        return 0
    try:
        _, arrays = parse_model(est.booster_.model_to_string(num_iteration=-1), None, "booster_")
    except UnsupportedTypeError:  # a text aprender does not store (never one it rebuilt): converted as before
        return 0
    per_word = np.unpackbits(arrays["cat_threshold"].astype("<u4").view(np.uint8)).reshape(-1, 32).sum(axis=1)
    boundaries = arrays["cat_boundaries"].astype(np.int64)
    most, first_word, first = 0, 0, 0
    for n in arrays["num_cat"].tolist():
        if not n:
            continue
        bounds = boundaries[first:first + n + 1]  # this tree's bitsets: increasing word offsets
        counts = np.concatenate([[0], np.cumsum(per_word[first_word:first_word + bounds[-1]])])
        most = max(most, int((counts[bounds[1:]] - counts[bounds[:-1]]).max()))
        first, first_word = first + n + 1, first_word + int(bounds[-1])
    return most


def _xgboost_gap(est: Any) -> str | None:
    params = est.get_params()
    booster = params.get("booster") or "gbtree"
    if booster != "gbtree":
        return (f"booster={booster!r}: onnxmltools converts gbtree models only (gblinear has no trees; dart "
                "weighs its trees in a way the converted sum leaves out)")
    if callable(params.get("objective")):
        return "a custom objective function: the graph cannot tell which output transform it needs"
    if getattr(est, "_Booster", None) is not None and "c" in (est.get_booster().feature_types or []):
        return ("its input has categorical columns that XGBoost itself encodes (pandas 'category' dtype with "
                "enable_categorical): onnxmltools does not read XGBoost's category table. Encode the columns in the "
                "Pipeline instead (an OrdinalEncoder or OneHotEncoder in a ColumnTransformer before the model), "
                "which exports; LightGBM models on category columns export as they are")
    return None


def _catboost_gap(est: Any) -> str | None:
    if not est.is_fitted():
        return None
    kinds = {"categorical": est.get_cat_feature_indices(), "text": est.get_text_feature_indices(),
             "embedding": est.get_embedding_feature_indices()}
    used = [kind for kind, indices in kinds.items() if len(indices)]
    if used:
        return (f"it has {' and '.join(used)} features: CatBoost's ONNX export computes none of their statistics "
                "(categorical CTRs, text and embedding features), so it refuses them. Encode such columns in the "
                "Pipeline instead (an OrdinalEncoder or OneHotEncoder in a ColumnTransformer before the model)")
    return None


def _lightgbm_splits(est: Any) -> list[tuple[int, float]]:
    if getattr(est, "_Booster", None) is None:
        return []
    found: list[tuple[int, float]] = []
    stack = [tree["tree_structure"] for tree in est.booster_.dump_model()["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_feature" in node:
            if node["decision_type"] == "<=":
                found.append((int(node["split_feature"]), float(node["threshold"])))
            stack += [node["left_child"], node["right_child"]]
    return found


def _xgboost_splits(est: Any) -> list[tuple[int, float]]:
    if getattr(est, "_Booster", None) is None:
        return []
    import json

    booster = est.get_booster()
    names = booster.feature_names or [f"f{i}" for i in range(est.n_features_in_)]
    index = {name: i for i, name in enumerate(names)}
    found = []
    stack = [json.loads(tree) for tree in booster.get_dump(dump_format="json")]
    while stack:
        node = stack.pop()
        if "children" in node:
            if not isinstance(node.get("split_condition"), list):  # a category list is no threshold
                found.append((index[node["split"]], float(node["split_condition"])))
            stack += node["children"]
    return found


def _catboost_splits(est: Any) -> list[tuple[int, float]]:
    if not est.is_fitted():
        return []
    limit = float(np.finfo(np.float32).max)  # CatBoost's outermost borders may lie beyond float32
    return [(int(f), float(b)) for f, borders in est.get_borders().items() for b in borders if abs(b) < limit]


#: Booster library (the estimator's top-level module) -> the numeric splits of its fitted estimators.
_SPLITS = {"lightgbm": _lightgbm_splits, "xgboost": _xgboost_splits, "catboost": _catboost_splits}


def booster_splits(est: Any) -> list[tuple[int, float]]:
    """(feature, threshold) of every numeric split of a fitted booster; [] for anything else.

    Verification probes these values and their float32 neighbours, where a float32 graph
    and the library are most likely to part.
    """
    splits = _SPLITS.get(type(est).__module__.split(".")[0])
    return [] if splits is None else splits(est)
