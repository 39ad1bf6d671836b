"""The ``distribution`` handler: frozen ``scipy.stats`` distributions of a search's ``param_distributions``.

``RandomizedSearchCV``, ``HalvingRandomSearchCV`` and ``ParameterSampler`` draw
hyperparameters from frozen distributions such as ``loguniform(1e-3, 1e2)``. One is
stored as its distribution's name, its arguments and its random state::

    {"__t__": "distribution", "name": "loguniform", "args": [0.001, 100.0],
     "kwds": [["loc", 0.0]], "random_state": null | random_state node}

A distribution object passed unfrozen (``{"alpha": stats.expon}``) is stored with
``"frozen": false`` and no parameters, and loads as scipy's own instance.
and rebuilt by calling the distribution of :data:`DISTRIBUTIONS` (a table of
``scipy.stats`` objects written here) with those arguments. ``args`` and ``kwds`` hold
at most the distribution's shape parameters plus ``loc`` (and ``scale`` for continuous
ones), each a finite JSON number; the parameters must be valid for the distribution
(its support is not NaN). ``random_state`` is ``null`` for scipy's default (NumPy's
global generator) or the distribution's own ``RandomState``/``Generator`` node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats
from scipy.stats._distn_infrastructure import rv_continuous_frozen, rv_discrete_frozen, rv_generic

from aprender.codec._checks import fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import NULL, Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["DISTRIBUTION", "DISTRIBUTIONS"]

_CONTINUOUS = (
    "uniform", "loguniform", "reciprocal", "norm", "expon", "gamma", "beta", "lognorm", "truncnorm", "truncexpon",
    "halfnorm", "halfcauchy", "cauchy", "laplace", "logistic", "t", "chi2", "weibull_min", "pareto", "triang",
    "powerlaw", "gumbel_r", "invgamma", "rayleigh",
)
_DISCRETE = ("randint", "poisson", "geom", "binom", "nbinom", "bernoulli", "betabinom", "zipf", "logser", "dlaplace")

#: The distributions a file may name: name -> the ``scipy.stats`` object that is called.
DISTRIBUTIONS: dict[str, Any] = {name: getattr(stats, name) for name in (*_CONTINUOUS, *_DISCRETE)}

_FROZEN = (rv_continuous_frozen, rv_discrete_frozen)
#: What a search may draw from: a frozen distribution, or a distribution object itself (``stats.uniform``).
_TYPES = (*_FROZEN, rv_generic)
#: The random-state tags a distribution's ``random_state`` node may have.
_STATE_TAGS = ("random_state", "numpy_generator")


def _parameters(dist: Any) -> list[str]:
    """Positional parameter names of ``dist``: its shapes, then ``loc`` (and ``scale`` if continuous)."""
    shapes = [s.strip() for s in (dist.shapes or "").split(",") if s.strip()]
    return [*shapes, "loc", *(["scale"] if isinstance(dist, stats.rv_continuous) else [])]


def _ctor(dist: Any) -> str:
    params = dict(dist._updated_ctor_param())
    params.pop("seed", None)
    return repr(sorted(params.items()))


def _number(value: Any) -> bool:
    """A finite float, or an int that NumPy's samplers can take (int64)."""
    if type(value) is int:
        return -(2**63) <= value < 2**63
    return type(value) is float and math.isfinite(value)


def _encode_number(value: Any, path: str) -> int | float:
    if isinstance(value, np.generic) and value.dtype.kind in "iuf":
        value = value.item()
    if not _number(value):
        raise UnsupportedTypeError(path, f"distribution parameter {preview(value, 40)}",
                                   "a stored distribution's parameters are finite numbers (ints within int64)")
    return value


def _encode_distribution(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    frozen = isinstance(value, _FROZEN)
    dist = value.dist if frozen else value
    name = getattr(dist, "name", None)
    known = DISTRIBUTIONS.get(name) if isinstance(name, str) else None
    # A distribution object itself is stored only as scipy's own instance, which loading hands back.
    if known is None or type(dist) is not type(known) or _ctor(dist) != _ctor(known) or not (frozen or dist is known):
        raise UnsupportedTypeError(path, f"scipy.stats distribution {preview(name, 40)} "
                                         f"({type(dist).__module__}.{type(dist).__qualname__})",
                                   "only the distributions of the table DISTRIBUTIONS in "
                                   "aprender/codec/handlers/distributions.py are stored, as scipy.stats builds them")
    if not frozen:
        return {"name": name, "args": [], "kwds": [], "random_state": None, "frozen": False}
    args = [_encode_number(a, join(path, i)) for i, a in enumerate(value.args)]
    kwds = [[k, _encode_number(v, join(path, k))] for k, v in value.kwds.items()]
    state = value.random_state
    global_state = state is np.random.mtrand._rand
    return {
        "name": name,
        "args": args,
        "kwds": kwds,
        "random_state": None if global_state else enc.value(state, join(path, "random_state"), 1),
    }


def _keywords(name: str, kwds: list, allowed: list[str], n_args: int, path: str) -> dict[str, int | float]:
    """The ``[name, number]`` pairs as keywords: each a parameter not given by position, once, a finite number."""
    keywords: dict[str, int | float] = {}
    for pair in kwds:
        if not (type(pair) is list and len(pair) == 2 and type(pair[0]) is str):
            raise fail(path, f"{name}'s 'kwds' must be [name, number] pairs")
        key, number = pair
        if key not in allowed[n_args:] or key in keywords:
            raise fail(path, f"{name} has no further parameter {preview(key, 40)} (parameters: {', '.join(allowed)})")
        if not _number(number):
            raise fail(join(path, key), f"{name}'s parameter {key} must be a finite number, found {preview(number)}")
        keywords[key] = number
    return keywords


def _freeze(dist: Any, name: str, args: list, keywords: dict[str, int | float], path: str) -> Any:
    """``dist`` frozen with checked parameters that scipy accepts and that give it a support."""
    try:
        frozen = dist(*args, **keywords)
        support = frozen.support()
    except Exception as exc:  # scipy refusing the parameters
        raise fail(path, f"invalid parameters for {name}: {type(exc).__name__}: {exc}") from None
    if np.isnan(support).any():
        raise fail(path, f"{name}{tuple(args)} {keywords or ''} has invalid parameters (scipy gives no support)")
    return frozen


def _decode_distribution(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    name, args, kwds, state_node = node["name"], node["args"], node["kwds"], node.get("random_state")
    dist = DISTRIBUTIONS.get(name)
    if dist is None:
        raise fail(path, f"distribution {preview(name, 40)} is not among those a file may name")
    if node.get("frozen", True) is False:
        if args or kwds or state_node is not None:  # scipy's shared instance: nothing of it comes from the file
            raise fail(path, f"the distribution object {name} itself takes no parameters and no random_state")
        return dist
    allowed = _parameters(dist)
    if len(args) > len(allowed):
        raise fail(path, f"{name} takes at most {len(allowed)} parameters ({', '.join(allowed)}), found {len(args)}")
    if not all(_number(a) for a in args):
        raise fail(path, f"{name}'s parameters must be finite numbers (ints within int64), found {preview(args, 80)}")
    frozen = _freeze(dist, name, args, _keywords(name, kwds, allowed, len(args), path), path)
    if state_node is not None:
        if state_node.get("__t__") not in _STATE_TAGS:
            raise fail(join(path, "random_state"), "a distribution's random_state must be a RandomState or Generator")
        frozen.random_state = dec.value(state_node, join(path, "random_state"), 1)
    return frozen


DISTRIBUTION = register_handler(Handler("distribution", _TYPES, _encode_distribution, _decode_distribution,
                                        {"name": (str,), "args": (list,), "kwds": (list,),
                                         "random_state": (dict, NULL), "frozen": (bool, NULL)}))
