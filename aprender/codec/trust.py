"""What a model file may name without the caller's say-so, and how a caller trusts more.

A model file holds functions by name (``FunctionTransformer(func=np.log1p)``,
``SelectKBest(score_func=f_classif)``, scorers) and sets hyperparameters. Both are
input: a file that names a test runner or a function taking a callable runs what it
likes, and one that sets ``memory="/some/dir"`` makes a later ``fit`` unpickle what
that folder holds. This module holds the two reviewed tables loading consults:

- :func:`default_functions`: the functions trusted by default. Pure numeric
  functions only: every ufunc of numpy and of ``scipy.special`` (elementwise
  arithmetic by construction: ``isinstance(obj, np.ufunc)``), and the named
  non-ufunc functions of :data:`REVIEWED`, each with the reason it is safe. Never
  trusted by default: anything doing I/O or imports, test runners, anything that
  changes process-wide state (``seterr``, ``set_printoptions``, ...), and anything
  that takes a callable or a path (``fromfunction``, ``vectorize``,
  ``apply_along_axis``, ``pairwise_distances(metric=callable)``, ``load*``, ...).
- :data:`PARAM_RULES`: hyperparameters that name paths, processes or resources, each
  with the values a file may set without the caller's trust.

More is trusted only by the caller: ``aprender.load(path, trusted=[module.func])``
for one load (function objects, never names, so nothing is ever imported or looked
up by a name a file chose; a string names a hyperparameter of :data:`PARAM_RULES`
instead), or :func:`aprender.register_function` for the process. Where the caller
is a command line or a server's settings, :func:`trusted_from_specs` turns what the
caller typed (``--trust mypkg.features:log_ratio``) into those objects.
"""

from __future__ import annotations

import functools
import importlib
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = ["CALL_KEYWORDS", "PAIRWISE_REASONS", "PARAM_RULES", "REVIEWED", "UFUNC_MODULES", "Trust", "call_keyword",
           "default_functions", "function_name", "is_pairwise", "make_trust", "qualified_name", "register_function",
           "registered", "spec_of", "trusted_from_specs"]

#: Modules whose ufuncs are trusted, in the order their names are preferred when saving.
UFUNC_MODULES = ("numpy", "scipy.special")

_REDUCE = "reduction over axes of its array argument; options are axes, dtypes and flags"
_NAN_REDUCE = "NaN-ignoring reduction over axes of its array argument"
_ORDER = "order statistic of its array argument; options are q, axes and a method name"
_ELEMENT = "elementwise function of its array argument, not a ufunc; options are numbers"
_SOFTMAX = "normalizes its array argument along an axis"
_METRIC = "score of (y_true, y_pred) arrays; options are labels, averaging names and numbers"
_CLUSTER = "clustering score of label (or data and label) arrays; options are names and numbers"
_DISTANCE = "distances between rows of its array arguments; no callable, no n_jobs"
_PAIRED = "distances between matching rows of its two array arguments; no callable"
_KERNEL = "kernel matrix of its array arguments; options are numbers"
_SCORE_FUNC = "univariate feature score of (X, y) arrays; options are flags, numbers and a seed"

#: The reviewed non-ufunc functions trusted by default: module -> {name: reason}. A name
#: the installed version lacks is skipped. Modules are listed in the order their names
#: are preferred when saving (``sklearn.metrics.euclidean_distances`` before the
#: ``sklearn.metrics.pairwise`` name of the same function, as files have always said).
REVIEWED: dict[str, dict[str, str]] = {
    "numpy": {
        **dict.fromkeys(["mean", "average", "median", "sum", "prod", "max", "min", "amax", "amin", "ptp", "std",
                         "var", "argmax", "argmin", "all", "any", "count_nonzero", "cumsum", "cumprod"], _REDUCE),
        **dict.fromkeys(["nanmean", "nanmedian", "nansum", "nanprod", "nanmax", "nanmin", "nanstd", "nanvar",
                         "nanargmax", "nanargmin", "nancumsum", "nancumprod"], _NAN_REDUCE),
        **dict.fromkeys(["percentile", "quantile", "nanpercentile", "nanquantile", "sort"], _ORDER),
        **dict.fromkeys(["clip", "round", "around", "fix", "nan_to_num", "sinc", "i0"], _ELEMENT),
    },
    "scipy.special": dict.fromkeys(["softmax", "log_softmax", "logsumexp"], _SOFTMAX),
    "sklearn.metrics": {
        **dict.fromkeys([
            "accuracy_score", "balanced_accuracy_score", "f1_score", "fbeta_score", "precision_score",
            "recall_score", "jaccard_score", "log_loss", "roc_auc_score", "average_precision_score",
            "brier_score_loss", "matthews_corrcoef", "cohen_kappa_score", "hamming_loss", "zero_one_loss",
            "hinge_loss", "top_k_accuracy_score", "d2_log_loss_score", "d2_brier_score", "auc",
            "r2_score", "explained_variance_score", "mean_squared_error", "root_mean_squared_error",
            "mean_absolute_error", "median_absolute_error", "mean_absolute_percentage_error",
            "mean_squared_log_error", "root_mean_squared_log_error", "max_error", "mean_poisson_deviance",
            "mean_gamma_deviance", "mean_tweedie_deviance", "mean_pinball_loss", "d2_absolute_error_score",
            "d2_pinball_score", "d2_tweedie_score", "ndcg_score", "dcg_score", "coverage_error",
            "label_ranking_average_precision_score", "label_ranking_loss"], _METRIC),
        **dict.fromkeys([
            "adjusted_rand_score", "rand_score", "adjusted_mutual_info_score", "normalized_mutual_info_score",
            "mutual_info_score", "homogeneity_score", "completeness_score", "v_measure_score",
            "fowlkes_mallows_score", "silhouette_score", "calinski_harabasz_score", "davies_bouldin_score"],
            _CLUSTER),
        **dict.fromkeys(["euclidean_distances", "nan_euclidean_distances"], _DISTANCE),
    },
    "sklearn.metrics.pairwise": {
        **dict.fromkeys([
            "euclidean_distances", "nan_euclidean_distances", "manhattan_distances", "cosine_distances",
            "cosine_similarity", "haversine_distances"], _DISTANCE),
        **dict.fromkeys(["paired_euclidean_distances", "paired_manhattan_distances", "paired_cosine_distances"],
                        _PAIRED),
        **dict.fromkeys([
            "linear_kernel", "polynomial_kernel", "rbf_kernel", "laplacian_kernel", "sigmoid_kernel",
            "chi2_kernel", "additive_chi2_kernel"], _KERNEL),
    },
    "sklearn.feature_selection": dict.fromkeys(
        ["f_classif", "f_regression", "r_regression", "chi2", "f_oneway", "mutual_info_classif",
         "mutual_info_regression"], _SCORE_FUNC),
}

#: Reasons of the reviewed functions whose result has a row per pair of their argument's rows: called on
#: n rows they allocate n * n values (30,000 rows: 6.7 GiB).
PAIRWISE_REASONS = frozenset([_DISTANCE, _KERNEL])

_lock = threading.Lock()


@functools.cache
def _table() -> tuple[dict[str, Callable[..., Any]], dict[int, str]]:
    by_name: dict[str, Callable[..., Any]] = {}
    by_id: dict[int, str] = {}

    def add(name: str, obj: Callable[..., Any]) -> None:
        by_name[name] = obj
        by_id.setdefault(id(obj), name)  # the first name listed is the one files hold

    with _lock:
        for module_name in UFUNC_MODULES:  # modules named here, never in a model file
            module = importlib.import_module(module_name)
            for name in sorted(vars(module)):
                obj = getattr(module, name)
                if not name.startswith("_") and isinstance(obj, np.ufunc):
                    add(f"{module_name}.{name}", obj)
        for module_name, names in REVIEWED.items():
            module = importlib.import_module(module_name)
            for name in names:
                obj = getattr(module, name, None)
                if callable(obj) and not isinstance(obj, type):
                    add(f"{module_name}.{name}", obj)
    return by_name, by_id


def default_functions() -> dict[str, Callable[..., Any]]:
    """Every function trusted by default, by the name files hold (a copy).

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.codec.trust import default_functions
    >>> table = default_functions()
    >>> table["numpy.log1p"] is np.log1p, "numpy.fromfunction" in table, "scipy.special.test" in table
    (True, False, False)
    """
    return dict(_table()[0])


def default_name(func: Any) -> str | None:
    """The name ``func`` has in the default table, or ``None``."""
    by_name, by_id = _table()
    name = by_id.get(id(func))
    return name if name is not None and by_name[name] is func else None


def is_pairwise(func: Any) -> bool:
    """Whether ``func`` (or the function a partial wraps) is a reviewed function of :data:`PAIRWISE_REASONS`."""
    while isinstance(func, functools.partial):
        func = func.func
    name = default_name(func)
    if name is None:
        return False
    module, _, short = name.rpartition(".")
    return REVIEWED.get(module, {}).get(short) in PAIRWISE_REASONS


def lookup_default(name: str) -> Callable[..., Any] | None:
    """The default-trusted function of that name, or ``None``."""
    return _table()[0].get(name)


# -- hyperparameters ---------------------------------------------------------------------

#: Largest thread or process count a file may ask for (and ``-MAX_JOBS`` the most negative,
#: joblib's "all CPUs but n - 1"): more than any machine joblib runs on, far fewer than a
#: file could make a ``fit`` start.
MAX_JOBS = 1024
#: Largest libsvm kernel cache, in MB, a file may ask a later ``fit`` to allocate.
MAX_CACHE_MB = 65536
# joblib's documented forms of pre_dispatch: "all", an int, or "n_jobs" times a small
# integer. joblib evaluates the string as arithmetic, where 9**9**9 would not finish.
_PRE_DISPATCH = re.compile(r"\s*(?:all|(?:[1-9][0-9]{0,2}\s*\*\s*)?n_jobs)\s*")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _memory(value: Any) -> bool:
    return value is None


def _n_jobs(value: Any) -> bool:
    return value is None or (_is_int(value) and -MAX_JOBS <= value <= MAX_JOBS)


def _pre_dispatch(value: Any) -> bool:
    if _is_int(value):
        return 1 <= value <= 1 << 20
    return isinstance(value, str) and len(value) <= 32 and _PRE_DISPATCH.fullmatch(value) is not None


def _cache_size(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and value <= MAX_CACHE_MB


def _input(value: Any) -> bool:
    return value == "content"


def _relative_folder(value: Any) -> bool:
    """None, or a short relative path that stays below the working folder."""
    if value is None:
        return True
    if not isinstance(value, str) or not value or len(value) > 255 or value.startswith(("/", "\\", "~")):
        return False
    parts = re.split(r"[/\\]", value)
    return ".." not in parts and ":" not in value


def _none_or_false(value: Any) -> bool:
    return value is None or value is False


def _cpu(value: Any) -> bool:
    return value is None or value == "CPU"


def _numeric_dtype(value: Any) -> bool:
    """None, or a numeric numpy dtype: a type or a short name of one, as numpy reads it."""
    if value is None:
        return True
    if isinstance(value, str) and len(value) > 32:
        return False
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError, SyntaxError):
        return False
    return dtype.kind in "biufc" and dtype.fields is None and dtype.subdtype is None and dtype.itemsize <= 16


#: Hyperparameters a file may set only to the values a rule allows, unless the caller
#: names the hyperparameter in ``trusted=``: name -> (rule, what the rule allows).
#: Rules go by name, for every class: each name means the same thing wherever
#: scikit-learn uses it.
PARAM_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    # Pipeline, FeatureAgglomeration, AgglomerativeClustering, OPTICS: a joblib cache folder
    # whose results a later fit unpickles.
    "memory": (_memory, "None (a cache folder's contents are unpickled by a later fit)"),
    "n_jobs": (_n_jobs, f"None or an integer from -{MAX_JOBS} to {MAX_JOBS}"),
    "pre_dispatch": (_pre_dispatch, "'all', 'n_jobs', 'k*n_jobs' (k below 1000) or an integer up to 2**20"),
    "cache_size": (_cache_size, f"at most {MAX_CACHE_MB} (MB)"),
    # CountVectorizer, TfidfVectorizer, HashingVectorizer: 'filename' and 'file' make transform
    # open whatever paths its input rows name.
    "input": (_input, "'content' ('filename' and 'file' open the paths the input names)"),
    # CatBoost: the threads a fit starts, the folders a fit writes into, the files it reads.
    "thread_count": (_n_jobs, f"None or an integer from -{MAX_JOBS} to {MAX_JOBS}"),
    "train_dir": (_relative_folder, "None or a relative folder below the working one (a fit writes its logs there)"),
    "snapshot_file": (_relative_folder, "None or a relative path below the working folder"),
    "save_snapshot": (_none_or_false, "None or False (a fit resumes from whatever snapshot file it finds)"),
    "input_borders": (_memory, "None (a fit reads borders from the file it names)"),
    "output_borders": (_memory, "None (a fit writes borders to the file it names)"),
    "task_type": (_cpu, "None or 'CPU' (a fit on 'GPU' claims the devices the file names)"),
    # Vectorizers, encoders, hashers: the dtype of the arrays transform allocates. A type node is allow-listed,
    # but a name reaches numpy as it is: 'V1000000000' asked 13 GiB for 14 elements, 'O' and 'f8,f8' too.
    "dtype": (_numeric_dtype, "None or a numeric numpy dtype of at most 16 bytes ('float64', numpy.float32, ...)"),
}


def _is_false(value: Any) -> bool:
    return isinstance(value, (bool, int, np.bool_, np.integer)) and not bool(value)


def _is_true(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_)) and bool(value)


#: Keyword arguments a file may pass to a function (a stored partial's, and every key of a ``kwargs``
#: hyperparameter such as FunctionTransformer's ``kw_args``, at any depth) only at the values a rule
#: allows: name -> (rule, what any other value does). They decide where a call writes, not what it
#: computes, and no trust lifts them: no model needs them to compute its result.
CALL_KEYWORDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "copy": (lambda value: not _is_false(value), "changes the caller's data in place"),
    "overwrite_input": (lambda value: value is None or _is_false(value), "changes the caller's data in place"),
    # np.positive(X, out=stored) returns the stored array from every call: concurrent requests to a
    # server share one result, and each reads what the last one wrote.
    "out": (lambda value: value is None, "makes every call write into and return one stored array, which "
                                         "concurrent calls share"),
    # np.positive(X, where=False) returns an uninitialized array: heap contents, addresses included.
    "where": (_is_true, "leaves the result's elements uninitialized where it is false, so a call returns "
                        "whatever memory held"),
}


def call_keyword(key: str, value: Any) -> str | None:
    """Why passing ``key=value`` to a function may not come from a file (:data:`CALL_KEYWORDS`), or ``None``."""
    rule = CALL_KEYWORDS.get(key)
    if rule is None or rule[0](value):
        return None
    shown = value if isinstance(value, (bool, int, float, np.bool_, np.number, type(None))) else type(value).__name__
    return f"{key}={shown}, which {rule[1]}"


class Trust:
    """What one load trusts beyond the defaults: function objects by name, hyperparameter names."""

    __slots__ = ("functions", "params")

    def __init__(self, functions: dict[str, Callable[..., Any]], params: frozenset[str]) -> None:
        self.functions = functions
        self.params = params


# -- functions the process trusts (register_function) ------------------------------------

_registry_lock = threading.RLock()
#: Functions added with register_function: name -> function, id -> name.
_by_name: dict[str, Callable[..., Any]] = {}
_by_id: dict[int, str] = {}


def registered(name: str) -> Callable[..., Any] | None:
    """The function registered under ``name`` in this process, if any."""
    return _by_name.get(name)


def register_function(func: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
    """Trust ``func`` in every load of this process, and store it under ``name``.

    Loading then finds the function in this process's table by its name; the code
    itself is never saved. Register it (same name) in every process that loads the
    file, or pass it to one load instead: ``aprender.load(path, trusted=[func])``.
    Returns ``func`` so it can be used as a decorator.

    Parameters
    ----------
    func : callable
        A module-level function (or any callable object).
    name : str, optional
        The name written into files; defaults to ``module.qualname``. Required for
        lambdas and nested functions, whose qualified names are not unique.

    Examples
    --------
    >>> import numpy as np
    >>> import aprender
    >>> def log_plus_two(x):
    ...     return np.log(x + 2.0)
    >>> aprender.register_function(log_plus_two, name="examples.log_plus_two") is log_plus_two
    True
    """
    if not callable(func):
        raise TypeError(f"{func!r} is not callable")
    if name is None:
        name = qualified_name(func)
        if name is None:
            raise ValueError(f"{func!r} has no unique qualified name; pass name='...'")
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    with _registry_lock:
        known = _by_name.get(name) or lookup_default(name)
        if known is not None and known is not func:
            raise ValueError(f"another function is already registered as '{name}'")
        _by_name[name] = func
        _by_id[id(func)] = name
    return func


def qualified_name(func: Any) -> str | None:
    """``module.qualname`` of ``func``, or ``None`` when it is not unique (lambdas, nested functions)."""
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if not isinstance(qualname, str) or not qualname or "<" in qualname:
        return None
    module = getattr(func, "__module__", None)
    return f"{module if isinstance(module, str) and module else 'builtins'}.{qualname}"


def function_name(func: Any) -> str | None:
    """The name ``func`` is trusted under without ``trusted=``: its default or registered name, or ``None``."""
    name = default_name(func)
    if name is not None:
        return name
    name = _by_id.get(id(func))
    return name if name is not None and _by_name.get(name) is func else None


#: The trust of a load given no ``trusted=``.
NONE = Trust({}, frozenset())


def _names(func: Callable[..., Any]) -> list[str]:
    """The names a file may give ``func``: its registered or default name and ``module.qualname``."""
    return [n for n in (function_name(func), qualified_name(func)) if n is not None]


def make_trust(trusted: Iterable[Any] | None) -> Trust:
    """The :class:`Trust` of a ``trusted=`` argument.

    Parameters
    ----------
    trusted : iterable or None
        Function objects a file may name (found by their registered name or
        ``module.qualname``), and names of hyperparameters of :data:`PARAM_RULES` a
        file may set to any value. A function is never looked up by a string: pass
        the object.

    Raises
    ------
    TypeError
        For an entry that is neither a callable nor a string.
    ValueError
        For a string that is not a hyperparameter of :data:`PARAM_RULES`.
    """
    if trusted is None:
        return NONE
    if isinstance(trusted, (str, bytes)) or callable(trusted):
        trusted = [trusted]
    functions: dict[str, Callable[..., Any]] = {}
    params = set()
    for item in trusted:
        if isinstance(item, str):
            if item not in PARAM_RULES:
                raise ValueError(
                    f"trusted={item!r}: a string in trusted names a hyperparameter a file may set freely "
                    f"({', '.join(PARAM_RULES)}); functions are trusted by passing the function object itself, "
                    "e.g. trusted=[mymodule.myfunc], never by name")
            params.add(item)
        elif callable(item) and not isinstance(item, type):
            names = _names(item)
            if not names:
                raise ValueError(f"trusted function {item!r} has no unique qualified name; register it with "
                                 "aprender.register_function(func, name=...) instead")
            for name in names:
                functions[name] = item
        else:
            raise TypeError(f"trusted entries are function objects or hyperparameter names, "
                            f"got {type(item).__name__}")
    return Trust(functions, frozenset(params))


def spec_of(item: Any) -> str:
    """The spec :func:`trusted_from_specs` turns back into ``item``: ``module:qualname`` of a function, a
    hyperparameter name as it is. For carrying a caller's ``trusted=`` to another process (a Dask worker).

    Examples
    --------
    >>> import numpy as np
    >>> spec_of(np.log1p), spec_of("n_jobs")
    ('numpy:log1p', 'n_jobs')
    """
    if isinstance(item, str):
        return item
    module, qualname = getattr(item, "__module__", None), getattr(item, "__qualname__", None)
    if not (callable(item) and isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        raise ValueError(f"{item!r} has no module:qualname another process can import; trust a module-level "
                         "function")
    return f"{module}:{qualname}"


def trusted_from_specs(specs: Iterable[str]) -> list[Any]:
    """The ``trusted=`` list of what a caller typed: ``module:qualname`` functions, hyperparameter names.

    For command-line flags and server settings, never for names a file holds: the caller
    names the module, and importing it is the caller's decision, as ``python -c "import
    module"`` would be. A spec with a colon imports ``module`` and walks ``qualname``
    (``pkg.mod:func``, ``pkg.mod:Class.method``) to a callable; a spec without one is a
    hyperparameter name of :data:`PARAM_RULES`.

    Parameters
    ----------
    specs : iterable of str
        ``"module:qualname"`` or a hyperparameter name.

    Returns
    -------
    list
        Function objects and hyperparameter names, for ``trusted=``.

    Raises
    ------
    ValueError
        For a spec that names no importable module, no attribute of it, something not
        callable, or a hyperparameter outside :data:`PARAM_RULES`.

    Examples
    --------
    >>> trusted_from_specs(["numpy:log1p", "n_jobs"])
    [<ufunc 'log1p'>, 'n_jobs']
    """
    out: list[Any] = []
    for spec in specs:
        if not isinstance(spec, str) or not spec:
            raise ValueError(f"a trust spec is 'module:function' or a hyperparameter name, got {spec!r}")
        if ":" not in spec:
            if spec not in PARAM_RULES:
                raise ValueError(f"'{spec}' is neither 'module:function' nor a hyperparameter a file may be trusted "
                                 f"to set ({', '.join(PARAM_RULES)})")
            out.append(spec)
            continue
        module_name, _, qualname = spec.partition(":")
        if not module_name or not qualname:
            raise ValueError(f"'{spec}': give the function as 'module:function'")
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(f"'{spec}': cannot import {module_name}: {exc}") from None
        for part in qualname.split("."):
            if not hasattr(obj, part):
                raise ValueError(f"'{spec}': {module_name} has no attribute {qualname}")
            obj = getattr(obj, part)
        if not callable(obj) or isinstance(obj, type):
            raise ValueError(f"'{spec}' is not a function (a {type(obj).__name__})")
        out.append(obj)
    return out
