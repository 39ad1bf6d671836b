"""How aprender's classes join skl2onnx's registry (which ones may convert is ``_gaps``).

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

__all__ = ["convert_as", "nested", "register_converter", "replace_converter", "shape_of", "sync", "wrap_registered"]

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


def shape_of(alias: str) -> Callable[[Any], None]:
    """The shape calculator skl2onnx registers under ``alias``, for a converter that keeps skl2onnx's outputs."""

    def shape(operator: Any) -> None:
        from skl2onnx.common._registration import get_shape_calculator

        get_shape_calculator(alias)(operator)

    return shape


def convert_as(substitute: Any, converter: Callable[..., Any], scope: Any, operator: Any, container: Any) -> None:
    """Run skl2onnx's ``converter`` with ``substitute`` in the place of the operator's model.

    For a converter right in every respect but one fitted value: the substitute is a
    shallow copy holding the corrected value, and the operator gets its own model back
    however the conversion ends (later passes read ``raw_operator``).
    """
    model = operator.raw_operator
    operator.raw_operator = substitute
    try:
        converter(scope, operator, container)
    finally:
        operator.raw_operator = model


def wrap_registered(alias: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Register ``wrap(converter)`` in place of the converter skl2onnx has under ``alias``, with its options.

    For a converter right except in one case (a double input, a NaN of a string column): the
    wrapper handles that case and hands every other to the converter it wraps.
    """
    from skl2onnx.common._registration import get_converter, register_converter

    original = get_converter(alias)
    register_converter(alias, wrap(original), overwrite=True, options=original.get_allowed_options())


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
        # aprender's subclasses mapped before the replacement (an early sync()) follow it
        for sub in [c for c in _done if c is not cls and issubclass(c, cls) and c not in _extra]:
            _inherit(sub, cls)
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

        from aprender.codec import allow_list  # the class table: an export needs it, inspecting a file does not

        entries = allow_list(libraries=False)  # boosters get their converters from _boosters.py, when imported
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
            # A class whose base gets its converter later (aprender's replacement for
            # FixedThresholdClassifier registers on the first export, after a test's or a
            # caller's early sync()) is tried again on the next sync.
            if cls in sklearn_operator_name_map:
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
