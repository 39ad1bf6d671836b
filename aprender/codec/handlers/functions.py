"""Functions held by estimators, stored by qualified name and rebuilt from an allow-list.

``FunctionTransformer(func=np.log1p)``, ``SelectKBest(score_func=f_classif)``,
``TransformedTargetRegressor(func=..., inverse_func=...)``, scorers and metric
callables hold functions. A function is code, so it is never written into a file:
the file holds its qualified name (``{"__t__": "function", "name": "numpy.log1p"}``)
and loading looks that name up in a table built from aprender's own source:

- numpy's public functions and ufuncs (file and pickle I/O excluded),
- ``scipy.special`` (ufuncs),
- scikit-learn's metrics, pairwise metrics and kernels, and feature-selection score functions,
- functions a user adds with :func:`register_function`.

``functools.partial`` of an allowed function is stored as its function plus its
arguments (``{"__t__": "partial", "func": ..., "args": [...], "keywords": {...}}``).
Nothing is ever imported by a name read from a file: the modules above are named
here, imported, and their attributes collected into the table that names are looked
up in. Lambdas, closures and other unregistered functions raise
:class:`~aprender.exceptions.UnsupportedTypeError` saying how to register them.
"""

from __future__ import annotations

import functools
import importlib
import threading
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender.codec._checks import fail
from aprender.codec._nodes import join
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec._decode import Decoder
    from aprender.codec._encode import Encoder

__all__ = ["FUNCTION", "PARTIAL", "function_name", "register_function"]

#: Modules whose public callables are allowed, in lookup-name priority order.
_MODULES = (
    "numpy",
    "scipy.special",
    "sklearn.metrics",
    "sklearn.metrics.pairwise",
    "sklearn.feature_selection",
)

#: numpy functions that touch files, pickles or the process: never rebuilt from a file.
_NUMPY_DENIED = frozenset([
    "load", "save", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt", "fromfile",
    "fromregex", "memmap", "info", "show_config", "show_runtime", "get_include", "test",
    "setbufsize", "seterr", "seterrcall", "set_printoptions", "printoptions", "frompyfunc", "vectorize",
])

_lock = threading.RLock()
_by_name: dict[str, Callable[..., Any]] = {}
_by_id: dict[int, str] = {}
_builtins_loaded = False


def _allowed_member(module: str, name: str, obj: Any) -> bool:
    if name.startswith("_") or isinstance(obj, (type, types.ModuleType)) or not callable(obj):
        return False
    return not (module == "numpy" and name in _NUMPY_DENIED)


def _add(name: str, func: Callable[..., Any]) -> None:
    _by_name[name] = func
    _by_id.setdefault(id(func), name)  # the first (most public) name wins


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _lock:
        if _builtins_loaded:
            return
        for module_name in _MODULES:  # modules named in this file, never in a model file
            module = importlib.import_module(module_name)
            for name in sorted(vars(module)):
                obj = getattr(module, name)
                if _allowed_member(module_name, name, obj):
                    _add(f"{module_name}.{name}", obj)
        _builtins_loaded = True


def register_function(func: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
    """Allow ``func`` to be stored by name in model files and rebuilt on load.

    Loading then finds the function in this process's table by its name; the code
    itself is never saved. Register it (same name) in every process that loads the file.
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
    _ensure_builtins()
    if not callable(func):
        raise TypeError(f"{func!r} is not callable")
    if name is None:
        qualname = getattr(func, "__qualname__", "")
        if not qualname or "<" in qualname:
            raise ValueError(f"{func!r} has no unique qualified name; pass name='...'")
        name = f"{getattr(func, '__module__', None) or 'builtins'}.{qualname}"
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    with _lock:
        known = _by_name.get(name)
        if known is not None and known is not func:
            raise ValueError(f"another function is already registered as '{name}'")
        _by_name[name] = func
        _by_id[id(func)] = name
    return func


def function_name(func: Any) -> str | None:
    """The registered name of ``func``, or ``None``."""
    _ensure_builtins()
    name = _by_id.get(id(func))
    return name if name is not None and _by_name.get(name) is func else None


def _encode_function(func: Any, enc: Encoder, path: str) -> dict[str, Any]:
    name = function_name(func)
    if name is None:
        shown = getattr(func, "__qualname__", type(func).__name__)
        raise UnsupportedTypeError(
            path, f"function {getattr(func, '__module__', '?')}.{shown}",
            "functions are stored by name and only allow-listed ones can be saved; use a module-level "
            "function and call aprender.register_function(func) before saving and before loading",
        )
    return {"name": name}


def _decode_function(node: Mapping[str, Any], dec: Decoder, path: str) -> Callable[..., Any]:
    _ensure_builtins()
    name = node.get("name")
    func = _by_name.get(name) if isinstance(name, str) else None
    if func is None:
        raise fail(path, f"function {str(name)[:120]!r} is not allow-listed; if you trust it, "
                         "call aprender.register_function on it before loading")
    return func


def _encode_partial(value: functools.partial, enc: Encoder, path: str) -> dict[str, Any]:
    return {
        "func": enc.value(value.func, join(path, "func"), 1),
        "args": [enc.value(a, join(path, i), 1) for i, a in enumerate(value.args)],
        "keywords": {k: enc.value(v, join(path, k), 1) for k, v in sorted(value.keywords.items())},
    }


def _decode_partial(node: Mapping[str, Any], dec: Decoder, path: str) -> functools.partial:
    func_node, args, keywords = node.get("func"), node.get("args"), node.get("keywords")
    if not isinstance(func_node, dict) or func_node.get("__t__") not in ("function", "partial"):
        raise fail(path, "'partial' node needs a function 'func'")
    if not isinstance(args, list) or not isinstance(keywords, dict) \
            or not all(isinstance(k, str) and k.isidentifier() for k in keywords):
        raise fail(path, "'partial' node needs a list 'args' and an object 'keywords' of identifiers")
    func = dec.value(func_node, join(path, "func"), 1)
    return functools.partial(
        func,
        *[dec.value(a, join(path, i), 1) for i, a in enumerate(args)],
        **{k: dec.value(v, join(path, k), 1) for k, v in keywords.items()},
    )


#: What a stored function can be: Python functions, builtins, ufuncs and numpy's dispatchers.
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type(np.mean))

PARTIAL = register_handler(Handler("partial", (functools.partial,), _encode_partial, _decode_partial,
                                   {"func": (dict,), "args": (list,), "keywords": (dict,)}))
FUNCTION = register_handler(Handler("function", _FUNCTION_TYPES, _encode_function, _decode_function, {"name": (str,)}))
