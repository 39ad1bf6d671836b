"""Functions held by estimators, stored by qualified name and rebuilt only when trusted.

``FunctionTransformer(func=np.log1p)``, ``SelectKBest(score_func=f_classif)``,
``TransformedTargetRegressor(func=..., inverse_func=...)``, scorers and metric
callables hold functions. A function is code, so it is never written into a file:
the file holds its qualified name (``{"__t__": "function", "name": "numpy.log1p"}``).
Loading looks that name up, in this order, among

- the functions trusted by default, :func:`aprender.codec.trust.default_functions`
  (numpy and scipy.special ufuncs and a reviewed list of pure numeric functions),
- the functions a user adds with :func:`register_function`,
- the function objects the caller passes to this load as ``trusted=``,

and refuses any other name with :class:`~aprender.exceptions.UntrustedFunctionError`.
Nothing is ever imported or looked up by a name read from a file. Saving stores any
module-level function by ``module.qualname``; lambdas and nested functions, whose
names are not unique, raise :class:`~aprender.exceptions.UnsupportedTypeError`.

``functools.partial`` of a function is stored as its function plus its arguments
(``{"__t__": "partial", "func": ..., "args": [...], "keywords": {...}}``). The
arguments are bounded literals (:func:`check_literal`): numbers, booleans, None, short
strings, and short lists, tuples and string-keyed dicts of those, never a function,
estimator, array or object. Keywords that would change the caller's data in place
(``copy=False``, ``overwrite_input=True``) are refused, and keywords named like a
hyperparameter of :data:`aprender.codec.trust.PARAM_RULES` (``n_jobs``) follow its rule.

A function cached with ``joblib.Memory(...).cache(func)`` is stored as ``func`` itself,
which then follows the rules above: the cache is a folder of pickles that a later call
would load, so it is never kept, and the loaded model calls the function directly (the
same results, computed again).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from joblib.memory import MemorizedFunc, NotMemorizedFunc

from aprender.codec import trust as _trust
from aprender.codec._checks import fail
from aprender.codec._nodes import join
from aprender.codec.handlers._base import Handler, register_handler
from aprender.codec.trust import function_name, qualified_name, register_function
from aprender.exceptions import UnsupportedTypeError, UntrustedFunctionError, UntrustedParameterError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["FUNCTION", "PARTIAL", "check_literal", "function_name", "qualified_name", "register_function"]

#: Bounds of a partial's literal arguments: a string's length, a list's, tuple's or dict's
#: items, and the nesting of those containers.
MAX_LITERAL_STR = 256
MAX_LITERAL_ITEMS = 64
MAX_LITERAL_DEPTH = 3


def _container_values(node: Any, kind: type, tag: object) -> tuple[list, str | None]:
    """The values inside a list, tuple or dict node, or why the node is not such a small container."""
    if kind is list or tag == "tuple":
        items = node if kind is list else node.get("v")
        if type(items) is not list or len(items) > MAX_LITERAL_ITEMS:
            return [], f"a list or tuple of more than {MAX_LITERAL_ITEMS} items"
        return items, None
    if tag == "dict":
        items = node.get("items")
        if type(items) is not list or len(items) > MAX_LITERAL_ITEMS or not all(
                type(p) is list and len(p) == 2 and type(p[0]) is str for p in items):
            return [], f"a dict of more than {MAX_LITERAL_ITEMS} items or with keys that are not strings"
        return [value for _, value in items], None
    what = tag if isinstance(tag, str) else kind.__name__
    return [], f"a {str(what)[:40]!r} node (only numbers, booleans, None, strings and small containers of those)"


def check_literal(node: Any, path: str, depth: int = 0) -> str | None:
    """Why a (stored) partial argument is not a bounded literal, or ``None`` if it is.

    ``node`` is the argument's metadata node, as saving writes it and loading reads it.
    """
    kind = type(node)
    if node is None or kind in (bool, int, float):
        return None
    if kind is str:
        return None if len(node) <= MAX_LITERAL_STR else f"a string longer than {MAX_LITERAL_STR} characters"
    if depth >= MAX_LITERAL_DEPTH:
        return f"containers nested deeper than {MAX_LITERAL_DEPTH} levels"
    tag = node.get("__t__") if kind is dict else None
    if tag in ("float", "scalar"):  # a non-finite float, a numpy number: checked when decoded
        return None
    values, why = _container_values(node, kind, tag)
    for value in values:
        why = why or check_literal(value, path, depth + 1)
    return why


def _encode_function(func: Any, enc: Encoding, path: str) -> dict[str, Any]:
    if isinstance(func, _CACHED):
        func = func.func
    name = function_name(func) or qualified_name(func)
    if name is None:
        shown = getattr(func, "__qualname__", type(func).__name__)
        raise UnsupportedTypeError(
            path, f"function {getattr(func, '__module__', '?')}.{shown}",
            "functions are stored by name and this one has no unique name; use a module-level function, "
            "or call aprender.register_function(func, name='...') before saving and before loading",
        )
    return {"name": name}


def _decode_function(node: Mapping[str, Any], dec: Decoding, path: str) -> Callable[..., Any]:
    name = node["name"]
    func = _trust.lookup_default(name) or _trust.registered(name) or dec.trust.functions.get(name)
    if func is None:
        raise UntrustedFunctionError(name[:120], path)
    return func


def _encode_partial(value: functools.partial, enc: Encoding, path: str) -> dict[str, Any]:
    node = {
        "func": enc.value(value.func, join(path, "func"), 1),
        "args": [enc.value(a, join(path, i), 1) for i, a in enumerate(value.args)],
        "keywords": {k: enc.value(v, join(path, k), 1) for k, v in sorted(value.keywords.items())},
    }
    for key, arg in [*enumerate(node["args"]), *node["keywords"].items()]:
        why = check_literal(arg, path) or (
            _trust.call_keyword(key, value.keywords[key]) if isinstance(key, str) else None)
        if why is not None:
            raise UnsupportedTypeError(join(path, key), "partial argument",
                                       f"a stored partial's arguments are bounded literals that leave the "
                                       f"caller's data alone, and this is {why}")
    return node


def _decode_partial(node: Mapping[str, Any], dec: Decoding, path: str) -> functools.partial:
    func_node, args, keywords = node["func"], node["args"], node["keywords"]
    if func_node.get("__t__") not in ("function", "partial"):
        raise fail(path, "'partial' node needs a function 'func'")
    if not all(isinstance(k, str) and k.isidentifier() for k in keywords):
        raise fail(path, "'partial' node needs an object 'keywords' of identifiers")
    func = dec.value(func_node, join(path, "func"), 1)  # an untrusted function is named first
    for key, arg in [*enumerate(args), *keywords.items()]:
        why = check_literal(arg, path)
        if why is not None:
            raise fail(join(path, key), f"a partial's arguments must be bounded literals, found {why}")
    decoded_args = [dec.value(a, join(path, i), 1) for i, a in enumerate(args)]
    decoded = {k: dec.value(v, join(path, k), 1) for k, v in keywords.items()}
    for key, value in decoded.items():
        why = _trust.call_keyword(key, value)
        if why is not None:
            raise fail(join(path, key), f"a partial may not pass {why}")
        rule = _trust.PARAM_RULES.get(key)
        if rule is not None and key not in dec.trust.params and not rule[0](value):
            raise UntrustedParameterError(key, path, rule[1], value)
    return functools.partial(func, *decoded_args, **decoded)


#: What a stored function can be: Python functions, builtins, methods of builtin types (``str.lower``, a
#: vectorizer's preprocessor), ufuncs and numpy's dispatchers.
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType, np.ufunc,
                   type(np.mean))
#: joblib's cached functions (``Memory.cache``), stored as the function they wrap.
_CACHED = (MemorizedFunc, NotMemorizedFunc)

PARTIAL = register_handler(Handler("partial", (functools.partial,), _encode_partial, _decode_partial,
                                   {"func": (dict,), "args": (list,), "keywords": (dict,)}))
FUNCTION = register_handler(Handler("function", (*_FUNCTION_TYPES, *_CACHED), _encode_function, _decode_function,
                                    {"name": (str,)}))
