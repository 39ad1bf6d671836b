"""Which estimators skl2onnx may convert, and how aprender's classes join its registry.

skl2onnx looks converters up by the *exact* class of each estimator, so aprender's
thin subclasses (``aprender.linear_model.LogisticRegression`` ...) are unknown to it.
:func:`sync` registers every allow-listed aprender class whose scikit-learn base
skl2onnx supports under that base's alias, shape calculator, converter and parser,
plus the converters given to :func:`register_converter` for aprender's own
estimators. It runs lazily (skl2onnx takes seconds to import) and registers each
class once; classes allow-listed later are picked up by the next call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aprender.codec import ModelType, registered
from aprender.exceptions import UnsupportedExportError, UnsupportedTypeError

__all__ = ["UNSUPPORTED", "check_exportable", "nested", "register_converter", "replace_converter", "sync",
           "threshold_gap"]

#: Model families with no ONNX graph, and why. Checked before skl2onnx is involved.
UNSUPPORTED: dict[ModelType, str] = {
    ModelType.NGRAM_LM: (
        "an n-gram language model scores and generates variable-length token sequences by "
        "count-table lookups with backoff; ONNX has no operator set for that, and "
        "its predictions are not a function of a fixed-width numeric input"
    ),
    ModelType.CONTENT_RECOMMENDER: (
        "recommend() ranks stored items by similarity and returns item identifiers for a "
        "query item, which is a lookup into the fitted catalogue, not a graph over an input tensor"
    ),
}


@dataclass(frozen=True)
class _Converter:
    shape_calculator: Callable[..., Any]
    converter: Callable[..., Any]
    parser: Callable[..., Any] | None
    alias: str
    options: Mapping[str, Any] | None


_lock = threading.RLock()
_extra: dict[type, _Converter] = {}
_replacing: set[type] = set()  # classes whose skl2onnx converter aprender replaces
_done: set[type] = set()
_synced = False


def register_converter(
    cls: type,
    shape_calculator: Callable[..., Any],
    converter: Callable[..., Any],
    parser: Callable[..., Any] | None = None,
    *,
    alias: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Give an estimator class its own ONNX converter (skl2onnx's three-function protocol).

    skl2onnx is not imported here: the functions are handed to
    ``skl2onnx.update_registered_converter`` on the first export, so a module may
    call this at import time for free. Registering a class twice is an error.

    Parameters
    ----------
    cls : type
        The estimator class.
    shape_calculator : callable
        ``shape_calculator(operator)``: sets the types and shapes of the outputs.
    converter : callable
        ``converter(scope, operator, container)``: adds the ONNX nodes.
    parser : callable, optional
        ``parser(scope, model, inputs, custom_parsers=None)``: declares the outputs.
        Classifiers that accept the ``zipmap`` option need none (skl2onnx's classifier
        parser is used when ``options`` lists ``zipmap``).
    alias : str, optional
        Operator name in skl2onnx's registry; ``"Aprender" + class name`` by default.
    options : dict, optional
        Converter options and their allowed values, e.g. ``{"zipmap": [True, False]}``.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from aprender.format.onnx import register_converter
    >>> class Doubler(BaseEstimator):
    ...     pass
    >>> def shape(operator): ...
    >>> def convert(scope, operator, container): ...
    >>> register_converter(Doubler, shape, convert)
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_converter() needs a class, got {type(cls).__name__}")
    for name, fn in (("shape_calculator", shape_calculator), ("converter", converter), ("parser", parser)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    entry = _Converter(shape_calculator, converter, parser, alias or f"Aprender{cls.__qualname__}",
                       dict(options) if options is not None else None)
    with _lock:
        if cls in _extra:
            raise ValueError(f"an ONNX converter for {cls.__qualname__} is already registered")
        _extra[cls] = entry
        if _synced:
            _apply(cls, entry)


def replace_converter(
    cls: type,
    shape_calculator: Callable[..., Any],
    converter: Callable[..., Any],
    *,
    options: Mapping[str, Any] | None = None,
) -> None:
    """Like :func:`register_converter`, for a scikit-learn class whose skl2onnx converter is wrong.

    The class is mapped onto ``"Aprender" + class name`` in skl2onnx's registry (the
    process-wide one: plain ``skl2onnx.to_onnx`` then uses it too); skl2onnx's own
    converter stays registered under its alias. Used for TunedThresholdClassifierCV,
    whose skl2onnx graph ignores the tuned threshold.
    """
    with _lock:
        _replacing.add(cls)
    register_converter(cls, shape_calculator, converter, options=options)


def _apply(cls: type, entry: _Converter) -> None:
    """Hand ``entry`` to skl2onnx; a refused registration is forgotten so other exports still work."""
    from skl2onnx import update_registered_converter
    from skl2onnx.common._registration import get_converter

    try:
        get_converter(entry.alias)
    except ValueError:  # the alias is free
        # overwrite=False: skl2onnx itself refuses to map a class it converts onto another alias.
        update_registered_converter(cls, entry.alias, entry.shape_calculator, entry.converter,
                                    overwrite=cls in _replacing, parser=entry.parser, options=entry.options)
        _done.add(cls)
        return
    # Checked before registering: skl2onnx maps the class onto the alias before refusing it.
    del _extra[cls]
    raise ValueError(
        f"cannot register the ONNX converter of {cls.__qualname__}: skl2onnx already has a converter named "
        f"'{entry.alias}'; pass another alias="
    )


def _searches() -> dict[type, type]:
    """Searches skl2onnx lacks, each with the class whose conversion is theirs: GridSearchCV's.

    skl2onnx converts a GridSearchCV as its ``best_estimator_`` (parser, shape calculator
    and converter read nothing else), which is what every search's predict/transform
    calls; it only registers GridSearchCV itself.
    """
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV
    from sklearn.model_selection._search_successive_halving import HalvingGridSearchCV, HalvingRandomSearchCV

    return {cls: GridSearchCV for cls in (RandomizedSearchCV, HalvingGridSearchCV, HalvingRandomSearchCV)}


def _inherit(cls: type, base: type | None = None) -> None:
    """Map ``cls`` onto the alias (converter, shape calculator, parser) of ``base``.

    ``base`` defaults to the nearest base class that skl2onnx supports.
    """
    from skl2onnx import update_registered_parser
    from skl2onnx._parse import sklearn_parsers_map
    from skl2onnx._supported_operators import sklearn_operator_name_map

    if base is None:
        base = next((b for b in cls.__mro__[1:] if b in sklearn_operator_name_map), None)
    if base is None:
        return  # nothing to inherit: the export fails with a message naming the class
    # The subclass takes the parent's alias, the key of the parent's converter and shape
    # calculator: several converters branch on it (operator.type == "SklearnGaussianNB").
    # update_registered_converter() would re-register the alias and, for converters with
    # an output_class_labels option, also force the classifier parser onto the class
    # (wrong for LinearSVC), so the class is added to the alias map directly.
    sklearn_operator_name_map[cls] = sklearn_operator_name_map[base]
    parser = sklearn_parsers_map.get(base) or _exact_type_parsers().get(base)
    if parser is not None:
        update_registered_parser(cls, parser)


def _exact_type_parsers() -> dict[type, Callable[..., Any]]:
    """Parsers for subclasses of classes that skl2onnx's generic parser recognises by exact type.

    skl2onnx declares a mixture's two outputs (label, probabilities) only for
    ``type(model) in {GaussianMixture, BayesianGaussianMixture}``; a subclass would get
    one output and fail with InvalidOutputLengthException.
    """
    from sklearn.mixture import BayesianGaussianMixture, GaussianMixture

    return {GaussianMixture: _parse_mixture, BayesianGaussianMixture: _parse_mixture}


def _parse_mixture(scope: Any, model: Any, inputs: list[Any], custom_parsers: Any = None) -> list[Any]:
    """skl2onnx's mixture branch of its generic parser (label and probabilities; no score_samples option)."""
    from skl2onnx._supported_operators import sklearn_operator_name_map
    from skl2onnx.common.data_types import Int64TensorType, guess_tensor_type

    operator = scope.declare_local_operator(sklearn_operator_name_map[type(model)], model)
    operator.inputs = inputs
    operator.outputs.append(scope.declare_local_variable("label", Int64TensorType()))
    operator.outputs.append(scope.declare_local_variable("probabilities", guess_tensor_type(inputs[0].type)))
    return operator.outputs


def sync() -> None:
    """Register every not-yet-registered class with skl2onnx (idempotent, thread-safe)."""
    global _synced
    with _lock:
        from skl2onnx._supported_operators import sklearn_operator_name_map

        # aprender's own estimators bring their converters with this package (importing
        # the module registers them once), never with the codec's schemas.
        from aprender.format.onnx import _moe, _threshold  # noqa: F401

        entries = registered()
        for cls, entry in list(_extra.items()):
            if cls not in _done:
                _apply(cls, entry)
        for cls, base in _searches().items():  # before aprender's subclasses of them inherit
            if cls not in sklearn_operator_name_map:
                _inherit(cls, base)
        for reg in entries:
            cls = reg.cls
            if cls in _done or cls in _extra:
                continue
            if cls not in sklearn_operator_name_map:
                _inherit(cls)
            _done.add(cls)
        _synced = True


def nested(model: Any) -> list[Any]:
    """``model`` and every estimator among its (deep) parameters."""
    found = [model]
    if hasattr(model, "get_params"):
        try:
            params = model.get_params(deep=True)
        except (TypeError, AttributeError):  # a half-built user estimator
            params = {}
        found += [v for v in params.values() if hasattr(v, "get_params") and hasattr(v, "fit")]
    return found


def _svm_gap(est: Any) -> str | None:
    kernel = est.kernel
    if kernel != "precomputed" and not callable(kernel):
        return None
    what = "a precomputed kernel matrix" if kernel == "precomputed" else "a Python kernel function"
    return (
        f"kernel={kernel!r}: ONNX's SVM operators evaluate a built-in kernel against stored support "
        f"vectors, and {what} has no ONNX equivalent"
    )


def _text_gap(est: Any) -> str | None:
    # Measured against ONNX Runtime: both conversions run but give other numbers.
    ngram_range = getattr(est, "ngram_range", (1, 1))  # TfidfTransformer has none
    if getattr(est, "analyzer", "word") == "word" and ngram_range[1] > 1:
        return (
            f"ngram_range={ngram_range}: ONNX Runtime's TfIdfVectorizer misses the n-grams that "
            "scikit-learn forms across removed tokens (stop words, one-letter words), "
            "see onnxruntime issue 4201; use unigrams"
        )
    if getattr(est, "sublinear_tf", False):
        return "sublinear_tf=True: skl2onnx's 1 + log(tf) scaling does not reproduce scikit-learn's values"
    if hasattr(est, "token_pattern"):
        from aprender.format.onnx._precision import check_token_pattern

        return check_token_pattern(est)
    return None


def _knn_gap(est: Any) -> str | None:
    if est.weights == "uniform":
        return None
    return (
        f"weights={est.weights!r}: scikit-learn gives a query equal to a training row that row's target "
        "(zero distance), while skl2onnx's graph divides by the zero distance there"
    )


def _radius_gap(est: Any) -> str:
    # Measured with ONNX Runtime 1.32 / skl2onnx 1.20: the session fails on any query with
    # a training row outside the radius; with a radius covering every row it would run.
    return (
        "skl2onnx's radius-neighbours graph marks training rows outside the radius with index -1 and "
        "passes them to ArrayFeatureExtractor, which ONNX Runtime rejects ('index is out of range') for "
        "every query that does not have all training rows within the radius"
    )


def threshold_gap(est: Any) -> str | None:
    from aprender.format.onnx._threshold import response_method

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


def _imputer_gap(est: Any) -> str | None:
    if not est.add_indicator:
        return None
    return "add_indicator=True: skl2onnx drops the missing-value indicator columns from the output"


def _parameter_gap(est: Any) -> str | None:
    """Why an otherwise convertible estimator cannot be converted faithfully with its parameters."""
    from sklearn import feature_extraction, impute, model_selection, neighbors, svm

    checks = (
        ((neighbors.RadiusNeighborsClassifier, neighbors.RadiusNeighborsRegressor), _radius_gap),
        ((model_selection.TunedThresholdClassifierCV, model_selection.FixedThresholdClassifier), threshold_gap),
        ((svm.SVC, svm.NuSVC, svm.SVR, svm.NuSVR, svm.OneClassSVM), _svm_gap),
        ((feature_extraction.text.CountVectorizer, feature_extraction.text.TfidfTransformer), _text_gap),
        ((neighbors.KNeighborsClassifier, neighbors.KNeighborsRegressor), _knn_gap),
        ((impute.SimpleImputer,), _imputer_gap),
    )
    for classes, check in checks:
        if isinstance(est, classes):
            return check(est)
    return None


def check_exportable(model: Any) -> None:
    """Raise :class:`UnsupportedExportError` for a model that has no ONNX graph."""
    from aprender.codec._registry import entry_for_class

    for est in nested(model):
        gap = _parameter_gap(est)
        if gap is not None:
            raise UnsupportedExportError(f"{type(est).__name__} cannot be exported to ONNX: {gap}.")
        try:
            model_type = entry_for_class(type(est)).spec.model_type
        except UnsupportedTypeError:  # not on the allow-list: skl2onnx decides
            continue
        reason = UNSUPPORTED.get(model_type)
        if reason is not None:
            raise UnsupportedExportError(
                f"{type(est).__name__} cannot be exported to ONNX: {reason}."
                f"{_exportable_parts(est)} Save it as .apr, .safetensors or .gguf instead."
            )


def _exportable_parts(est: Any) -> str:
    """Point at fitted sub-estimators that do convert (a recommender's TF-IDF vectorizer)."""
    from skl2onnx._supported_operators import sklearn_operator_name_map

    sync()
    parts = sorted(
        name for name, value in vars(est).items()
        if name.endswith("_") and type(value) in sklearn_operator_name_map and _parameter_gap(value) is None
    )
    if not parts:
        return ""
    listed = ", ".join(f"model.{name}" for name in parts)
    return f" Its fitted {listed} can be exported on its own with aprender.format.onnx.to_onnx()."
