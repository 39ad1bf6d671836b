"""The rule of each kind of hyperparameter in the generated table :data:`KINDS`.

A file can lie in a hyperparameter whose every byte is valid: a kernel that gives the stored
arrays another meaning, a metric whose parameters do not fit the data, a count that sizes
work at ``transform``, a dict of keyword arguments that carries ``n_jobs`` past
:data:`~aprender.codec.trust.PARAM_RULES`, a regular expression that backtracks. Every
constructor parameter of every allow-listed class has one kind (tools/gen_param_table.py),
and :func:`check_params` applies its rule before the estimator is built:

- ``checked``, ``estimator``: scikit-learn's constraints, and the decoder for nested
  estimators; nothing more here.
- ``sizes``: integers at most :data:`aprender._limits.MAX_WORK_COUNT`, or the smaller
  :data:`~aprender._limits.MAX_INFERENCE_COUNT` bound of counts every inference spends, or the
  :data:`~aprender._limits.MAX_FIT_DIMENSION` bound of counts a fit allocates by; a list of layer
  widths (:data:`~aprender._limits.LAYER_WIDTHS`) at most ``MAX_WORK_COUNT`` weights in all.
- ``path``: a kernel or metric fits the stored arrays and its parameters fit the metric.
- ``kwargs``: keys and values follow the callee's own rules, recursively.
- ``resource``: :data:`PARAM_RULES` (checked by the decoder for every class) and the
  regular-expression rule of :mod:`aprender.codec._regex`.

Whatever their kind, the scales compiled solvers iterate with (libsvm's and liblinear's ``C``,
TSNE's exaggeration and learning rate) are at most :data:`aprender._limits.MAX_SOLVER_SCALE`:
past it a refit never returns, or crashes.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aprender import _limits
from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec._param_table import kinds_of
from aprender.codec._regex import check_pattern
from aprender.codec._registry import public_key
from aprender.codec.trust import PARAM_RULES, Trust, call_keyword, is_pairwise
from aprender.exceptions import UntrustedParameterError

__all__ = ["BOUNDED_BY_STATE", "FORMAT_FIELDS", "KERNEL_PARAMS", "METRIC_PARAMS", "OBJECT_COUNTS", "REPEATED_TEXT",
           "ROW_FUNCTIONS", "SEARCH_SPACES", "check_object_state", "check_params"]

#: Keyword arguments each metric takes, and the length of each array one (``n`` is
#: ``n_features_in_``; ``VI`` and a mahalanobis ``V`` are square). Other metrics take none
#: but ``p``, which scikit-learn passes on for the minkowski family.
METRIC_PARAMS: dict[str, dict[str, int]] = {
    "minkowski": {"p": 0, "w": 1}, "wminkowski": {"p": 0, "w": 1}, "seuclidean": {"V": 1},
    "mahalanobis": {"VI": 2, "V": 2},
}
#: Keyword arguments each kernel of ``sklearn.metrics.pairwise_kernels`` takes.
KERNEL_PARAMS: dict[str, frozenset[str]] = {
    "rbf": frozenset(["gamma"]), "laplacian": frozenset(["gamma"]), "chi2": frozenset(["gamma"]),
    "poly": frozenset(["gamma", "degree", "coef0"]), "polynomial": frozenset(["gamma", "degree", "coef0"]),
    "sigmoid": frozenset(["gamma", "coef0"]),
}
#: Function hyperparameters called on the rows of every ``transform`` or ``predict`` (FunctionTransformer's and
#: TransformedTargetRegressor's ``func``, a neighbors model's ``weights`` on the neighbors' distances): their
#: result must not be pairwise over those rows, which would make a request of n rows allocate n * n values (a
#: FunctionTransformer, or a KNeighborsClassifier's weights, of ``rbf_kernel`` asked 6.7 GiB for 30,000 rows).
ROW_FUNCTIONS = frozenset(["func", "inverse_func", "weights"])
#: Hyperparameters that are ``str.format`` templates, and the fields each may name. A template runs on every
#: feature name, whenever names are made (``get_feature_names_out``, a pandas ``transform``): a format spec
#: pads (``{feature_name:>1000000000}`` asked over 1 GB per name), a field reaches attributes
#: (``{feature_name.__class__}``). Fields are bare names, the template at most :data:`MAX_TEMPLATE` characters.
FORMAT_FIELDS: dict[str, frozenset[str]] = {
    "verbose_feature_names_out": frozenset(["transformer_name", "feature_name"]),
}
#: ``sizes`` hyperparameters that some class's inference reads (``predict``, ``transform``, ``kneighbors``,
#: ...) but whose cost there is bounded by arrays the file stores, not by the count: name -> why. Every other one
#: an inference reads has a bound in :data:`aprender._limits.MAX_INFERENCE_COUNT` or
#: :data:`~aprender._limits.MAX_INFERENCE_COUNT_OF` (tests/test_inference_costs.py reads scikit-learn's source
#: of every allow-listed class's inference methods for them).
BOUNDED_BY_STATE: dict[str, str] = {
    "n_estimators": "a forest or bagging predicts with its stored `estimators_`; the count only splits them into "
                    "jobs (the ensemble contracts tie the two)",
    "n_neighbors": "a query returns at most the stored training rows: scikit-learn refuses more than "
                   "`n_samples_fit_`",
    "n_components": "the stored `components_` (or random weights, hash tables) set the output's width; the count "
                    "is compared with them",
    "max_samples": "IsolationForest reads its fitted `_max_samples` as a number in a path-length formula",
    "n": "NgramLm stores one array per order, so its order costs the file's bytes (schemas/own_models.py)",
    "max_patches": "at most every patch of the caller's image, whose size `patch_size` bounds",
}
#: Longest format template, in characters: its text is repeated in every feature name.
MAX_TEMPLATE = 256
#: String hyperparameters, of any kind, that a ``transform`` joins into a new string per value of every row
#: (DictVectorizer's ``separator``): at most :data:`MAX_TEMPLATE` characters. A 1 MB separator made a
#: 20,000-row transform take 23 s.
REPEATED_TEXT = frozenset(["separator"])
# Fitted arrays that hold training rows a kernel is evaluated against: as wide as the input.
_TRAINING_ROWS = ("X_fit_", "components_")
_PLAIN = (bool, int, float, str, np.number, np.bool_, type(None))


def _n_features(attrs: Mapping[str, Any]) -> int | None:
    n = attrs.get("n_features_in_")
    if type(n) is int:
        return n
    fit_X = attrs.get("_fit_X")
    return fit_X.shape[1] if isinstance(fit_X, np.ndarray) and fit_X.ndim == 2 else None


def _kwargs(value: Any, where: str, trust: Trust) -> None:
    """Keyword arguments hold plain values, numeric arrays and lists, tuples and dicts of them; PARAM_RULES keys
    follow their rule at every level (the decoder bounds how deep a value nests)."""
    if isinstance(value, _PLAIN) or callable(value):  # a callable was loaded under the function trust rules
        return
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise fail(where, f"an array of keyword arguments must be numeric, found dtype {value.dtype}")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _kwargs(item, join(where, i), trust)
        return
    if not isinstance(value, dict):
        raise fail(where, f"keyword arguments must be numbers, strings, numeric arrays or lists, tuples and dicts "
                          f"of them, found {type(value).__name__}")
    for key, item in value.items():
        if type(key) is not str:
            raise fail(where, f"a keyword argument's name must be a string, found {preview(key, 40)}")
        why = call_keyword(key, item)
        if why is not None:
            raise fail(join(where, key), f"a keyword argument may not pass {why}")
        rule = PARAM_RULES.get(key)
        if rule is not None and not rule[0](item) and key not in trust.params:
            raise UntrustedParameterError(key, where, rule[1], item)
        _kwargs(item, join(where, key), trust)


def _metric(metric: Any, metric_params: Any, n: int | None, where: str, trust: Trust) -> None:
    """``metric_params`` holds only what ``metric`` takes, its arrays sized by ``n`` features."""
    if metric_params is None:
        return
    _kwargs(metric_params, where, trust)
    if not isinstance(metric_params, dict) or not isinstance(metric, str):
        return  # a callable metric takes whatever keyword arguments its trusted function does
    takes = METRIC_PARAMS.get(metric, {"p": 0})
    for key, value in metric_params.items():
        ndim = takes.get(key)
        if ndim is None:
            raise fail(join(where, key), f"metric {preview(metric, 40)} takes no parameter {key!r} "
                                         f"(it takes {sorted(takes) or 'none'})")
        if value is None:  # scikit-learn's own default (minkowski's w=None: unweighted)
            continue
        if ndim == 0:
            if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
                raise fail(join(where, key), f"must be a number, found {type(value).__name__}")
            continue
        shape = np.shape(value) if isinstance(value, (np.ndarray, list, tuple)) else None
        if n is not None and shape != (n,) * ndim:
            found = list(shape) if shape is not None else type(value).__name__
            raise fail(join(where, key), f"metric {metric!r} needs {key} of shape {list((n,) * ndim)} for "
                                         f"{n} features, found {found}")


def _kernel(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str, trust: Trust) -> None:
    """'precomputed' only when the stored training rows are the square kernel matrix.

    Any other kernel needs them ``n_features_in_`` wide, and ``kernel_params`` holds only what the kernel takes.
    """
    kernel, n = params.get("kernel"), _n_features(attrs)
    for name in _TRAINING_ROWS:
        rows = attrs.get(name)
        if not isinstance(rows, np.ndarray) or rows.ndim != 2 or n is None:
            continue
        # X_fit_ is every training row: a precomputed fit's is the square kernel matrix (Nystroem's
        # components_ are only some of its rows).
        if rows.shape[1] != n or (kernel == "precomputed" and name == "X_fit_" and rows.shape[0] != n):
            raise fail(join(path, "kernel"), f"kernel {preview(kernel, 40)} does not fit the stored '{name}' of shape "
                              f"{list(rows.shape)} for {n} features")
    extra = params.get("kernel_params")
    if extra is not None:  # its values' own rules first: a PARAM_RULES key is refused as such
        _kwargs(extra, join(path, "kernel_params"), trust)
    if isinstance(kernel, str) and isinstance(extra, dict):
        takes = KERNEL_PARAMS.get(kernel, frozenset())
        for key in extra:
            if key not in takes:
                raise fail(join(join(path, "kernel_params"), key),
                           f"kernel {kernel!r} takes no parameter {key!r} (it takes {sorted(takes) or 'none'})")


def _field(field: str, spec: str | None, conversion: str | None) -> str:
    return "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"


def _template(value: str, fields: frozenset[str]) -> str | None:
    """Why ``value`` may not be a format template naming ``fields``, or ``None``."""
    if len(value) > MAX_TEMPLATE:
        return f"a format template is at most {MAX_TEMPLATE} characters, found {len(value)}"
    try:
        parsed = list(string.Formatter().parse(value))
    except ValueError as exc:
        return f"is not a format template ({exc})"
    for _, field, spec, conversion in parsed:
        if field is not None and (field not in fields or spec or conversion is not None):
            return (f"a format template's fields are bare names among {sorted(fields)}, with no format spec or "
                    f"conversion, found {preview(_field(field, spec, conversion), 60)}")
    return None


def _path(name: str, value: Any, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust,
          path: str) -> None:
    if name == "kernel":
        _kernel(params, attrs, path, trust)
    elif name in ("metric", "affinity"):
        _metric(value, params.get("metric_params"), _n_features(attrs), join(path, "metric_params"), trust)
    elif name in FORMAT_FIELDS and isinstance(value, str):
        why = _template(value, FORMAT_FIELDS[name])
        if why is not None:
            raise fail(join(path, name), why)
    elif name in ROW_FUNCTIONS and is_pairwise(value):
        raise fail(join(path, name), "is called on the rows of every call, and this function's result has a row "
                                     "per pair of them (n rows make n * n values)")


def _cap(owner: str, name: str) -> int:
    """The bound of ``sizes`` hyperparameter ``name`` of class ``owner`` (its name without the module)."""
    of_class = _limits.MAX_INFERENCE_COUNT_OF.get(owner, {}).get(name)
    if of_class is not None:
        return of_class
    return _limits.MAX_INFERENCE_COUNT.get(name, _limits.MAX_FIT_DIMENSION.get(name, _limits.MAX_WORK_COUNT))


def _sizes(name: str, value: Any, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust,
           path: str, *, owner: str = "", where: str = "") -> None:
    """``where`` names the value when it is not the hyperparameter itself (a fitted copy of it)."""
    cap = _cap(owner, name)
    where = where or join(path, name)
    if isinstance(value, np.ndarray):  # a grid of values (RidgeCV's alphas): only integer ones count work
        value = [value.max()] if value.dtype.kind in "iu" and value.size else []
    # A float counts too when it is the whole value (TheilSen's max_subpopulation); in a list of
    # values (a grid of alphas) only integers count work.
    counts = (int, np.integer) if isinstance(value, (list, tuple)) else (int, float, np.integer, np.floating)
    for item in value if isinstance(value, (list, tuple)) else (value,):
        if name in _limits.UNBOUNDED_COUNTS and item == float("inf"):
            continue
        if isinstance(item, counts) and not isinstance(item, (bool, np.bool_)) and not item <= cap:
            raise fail(where, f"counts work: at most {cap}, found {preview(item, 40)} "
                              f"(aprender._limits bounds it; raise the bound to load a larger one)")
    if name in _limits.LAYER_WIDTHS and isinstance(value, (list, tuple)):
        widths = [int(w) for w in value if isinstance(w, (int, np.integer)) and not isinstance(w, (bool, np.bool_))]
        weights = sum(a * b for a, b in itertools.pairwise(widths))
        if weights > _limits.MAX_WORK_COUNT:
            raise fail(where, f"layers of these widths hold {weights} weights, at most "
                                         f"{_limits.MAX_WORK_COUNT} (aprender._limits bounds them; raise "
                                         "MAX_WORK_COUNT to load larger layers)")


def _kwargs_param(name: str, value: Any, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust,
                  path: str) -> None:
    if name != "metric_params" or "metric" not in params:  # else checked with its metric, which says what it takes
        _kwargs(value, join(path, name), trust)


def _resource(name: str, value: Any, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust,
              path: str) -> None:
    if name in PARAM_RULES or value is None:
        return  # PARAM_RULES are checked by the decoder for every class, table or not
    why = check_pattern(value)
    if why is not None:
        raise fail(join(path, name), why)


def _scales(params: Mapping[str, Any], path: str) -> None:
    """Solver scales (``C``, ``intercept_scaling``) at most :data:`aprender._limits.MAX_SOLVER_SCALE`, any class."""
    for name, bound in _limits.MAX_SOLVER_SCALE.items():
        value = params.get(name)
        values = value.ravel().tolist() if isinstance(value, np.ndarray) else value
        for item in values if isinstance(values, (list, tuple)) else (values,):
            if isinstance(item, (int, float, np.number)) and not isinstance(item, (bool, np.bool_)) \
                    and not abs(item) <= bound:
                raise fail(join(path, name), f"a solver scale: at most {bound:g} in magnitude, found "
                                             f"{preview(item, 40)} (past it liblinear does not return and TSNE "
                                             "crashes; aprender._limits bounds it, raise the bound to load a larger "
                                             "one)")


#: Counts a helper object holds (a cross-validation splitter's): bounded as a ``sizes`` hyperparameter is.
OBJECT_COUNTS = frozenset(["n_splits", "n_repeats"])
#: Names of a helper object's attributes that are passed on as keyword arguments (PairwiseKernel's
#: ``pairwise_kernels_kwargs``, a scorer's ``_kwargs``), as a ``kwargs`` hyperparameter's are.
_KWARGS_SUFFIX = "_kwargs"


def check_object_state(state: Mapping[str, Any], trust: Trust, path: str) -> None:
    """The rules of hyperparameters, by name, for the state of a helper object that is not an estimator.

    A Gaussian-process kernel, a splitter or a scorer holds parameters as an estimator does, but has no row in
    :data:`KINDS`: :data:`PARAM_RULES` hold for each attribute, a ``*_kwargs`` dict follows the ``kwargs`` rule
    (PARAM_RULES and CALL_KEYWORDS at every level), and :data:`OBJECT_COUNTS` the ``sizes`` rule.

    Raises
    ------
    FormatError
        Naming the attribute and its place in the model.
    UntrustedParameterError
        For a value :data:`PARAM_RULES` refuse.
    """
    for name, value in state.items():
        rule = PARAM_RULES.get(name)
        if rule is not None and not rule[0](value) and name not in trust.params:
            raise UntrustedParameterError(name, path, rule[1], value)
        if name.endswith(_KWARGS_SUFFIX) and value is not None:
            _kwargs(value, join(path, name), trust)
        if name in OBJECT_COUNTS:
            _sizes(name, value, state, {}, trust, path)


#: Hyperparameters that hold candidate values of other hyperparameters (a search's space, a dict or a list of
#: dicts from ``step__name`` to a list of values): a later ``fit`` sets each candidate on the estimator, so each
#: follows the rules its own hyperparameter follows. Before, ``param_grid={'memory': ['/some/dir']}`` loaded,
#: and a refit made a joblib cache there. Distributions are checked by their own handler.
SEARCH_SPACES = frozenset(["param_grid", "param_distributions"])


def _owner(estimator: Any, prefix: str) -> Any:
    """The estimator a ``prefix__name`` key of a search space sets ``name`` on, or ``None``."""
    if not prefix:
        return estimator
    try:
        return estimator.get_params(deep=True).get(prefix)
    except Exception:  # an estimator whose get_params fails is refused by its own checks
        return None


def _search_space(params: Mapping[str, Any], trust: Trust, path: str) -> None:
    for name in SEARCH_SPACES:
        space = params.get(name)
        for grid in space if isinstance(space, (list, tuple)) else (space,):
            if not isinstance(grid, dict):
                continue
            for key, values in grid.items():
                if not isinstance(key, str) or not isinstance(values, (list, tuple, np.ndarray)):
                    continue
                prefix, _, param = key.rpartition("__")
                owner = _owner(params.get("estimator"), prefix)
                where = join(join(path, name), key)
                for value in values.tolist() if isinstance(values, np.ndarray) else values:
                    rule = PARAM_RULES.get(param)
                    if rule is not None and not rule[0](value) and param not in trust.params:
                        raise UntrustedParameterError(param, where, rule[1], value)
                    if owner is None or type(owner) is type:
                        _scales({param: value}, where)
                    else:
                        check_params(public_key(type(owner)), {param: value}, {}, trust, where)


def _private_copies(kinds: Mapping[str, str], owner: str, params: Mapping[str, Any], attrs: Mapping[str, Any],
                    trust: Trust, path: str) -> None:
    """A fitted private copy ``_name`` of hyperparameter ``name`` follows the rule of ``name``'s kind.

    Inference reads the copy, not the hyperparameter (MiniBatchNMF's ``transform`` iterates
    ``_transform_max_iter`` times), so the bound on the hyperparameter alone left the copy free:
    ``_transform_max_iter = 2**40`` loaded and a one-row ``transform`` did not return.
    """
    for attr, value in attrs.items():
        name = attr[1:] if attr.startswith("_") else ""
        kind = kinds.get(name)
        if kind == "sizes":
            _sizes(name, value, params, attrs, trust, path, owner=owner, where=join(path, attr))
        elif kind == "kwargs":
            _kwargs(value, join(path, attr), trust)
        elif kind == "path":
            _path(name, value, {**params, name: value}, attrs, trust, path)


_Rule = Callable[[str, Any, Mapping[str, Any], Mapping[str, Any], Trust, str], None]
_RULES: dict[str, _Rule] = {"sizes": _sizes, "path": _path, "kwargs": _kwargs_param, "resource": _resource}


def check_params(key: str, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust, path: str) -> None:
    """Apply the rule of each parameter's kind in :data:`KINDS` to the ``params`` of class ``key``.

    ``attrs`` are the fitted attributes (empty for an unfitted estimator), which a ``path``
    parameter must fit. A class registered by the user at run time has no row: only
    :data:`PARAM_RULES` hold for it.

    Raises
    ------
    FormatError
        Naming the parameter and its place in the model.
    UntrustedParameterError
        For a key of a ``kwargs`` parameter that :data:`PARAM_RULES` refuse.
    """
    kinds = kinds_of(key)
    if kinds is None:
        return
    _scales(params, path)
    _search_space(params, trust, path)
    for name in REPEATED_TEXT:
        value = params.get(name)
        if isinstance(value, str) and len(value) > MAX_TEMPLATE:
            raise fail(join(path, name), f"is joined into a string per value of every row: at most {MAX_TEMPLATE} "
                                         f"characters, found {len(value)}")
    owner = key.rpartition(".")[2]
    for name, value in params.items():
        kind = kinds.get(name, "")
        if kind == "sizes":
            _sizes(name, value, params, attrs, trust, path, owner=owner)
        elif kind in _RULES:
            _RULES[kind](name, value, params, attrs, trust, path)
    _private_copies(kinds, owner, params, attrs, trust, path)
    # The fitted metric neighbors search with is checked as its parameter is.
    if "effective_metric_params_" in attrs:
        _metric(attrs.get("effective_metric_"), attrs["effective_metric_params_"], _n_features(attrs),
                join(path, "effective_metric_params_"), trust)
