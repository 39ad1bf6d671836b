"""scikit-learn's callbacks (``est.set_callbacks(ScoringMonitor(scoring=...))``, scikit-learn >= 1.9).

A callback holds its configuration and the machinery of one fitting session: a log of
timestamped records, a listener that worker processes send to (a socket path and its
authentication key), per-estimator scorers. Only the configuration is stored::

    {"__t__": "callback", "class": "ScoringMonitor", "config": {"scoring": node}}

and the callback is rebuilt by its own constructor from it, as a user builds one: its log
starts empty and it opens its own listener. The session's key and log are never written
(they would change the bytes of every save, and the key is a secret of the process that
fitted). The classes come from :data:`CALLBACKS` only; each configuration value is a
node the codec checks (``scoring`` a metric name, a list of names, a scorer object or a
function by name, as for a search's ``scoring``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aprender.codec._checks import bounded_int, fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import Handler, register_handler
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

__all__ = ["CALLBACK", "CALLBACKS"]

#: Callback class name -> (module, the attribute holding each constructor argument).
CALLBACKS: dict[str, tuple[str, dict[str, str]]] = {
    "ScoringMonitor": ("sklearn.callback._scoring_monitor", {"scoring": "_scoring"}),
    "ProgressBar": ("sklearn.callback._progressbar", {"max_propagation_depth": "max_propagation_depth"}),
}
#: Deepest nesting a ProgressBar may follow: more levels than any estimator has.
_MAX_DEPTH = 64


def _callback_class(name: Any, path: str) -> type:
    where = CALLBACKS.get(name) if isinstance(name, str) else None
    if where is None:
        raise fail(path, f"callback class {preview(name, 80)} is not allow-listed")
    try:
        return getattr(importlib.import_module(where[0]), name)
    except (ImportError, AttributeError):
        raise fail(path, f"this scikit-learn has no callback {name} (it is new in 1.9)") from None


class _Callback(type):
    """``isinstance(c, _AllowedCallback)``: ``type(c)`` is exactly a class of :data:`CALLBACKS`."""

    def __instancecheck__(cls, value: Any) -> bool:
        name = type(value).__name__
        return name in CALLBACKS and type(value).__module__ == CALLBACKS[name][0]


class _AllowedCallback(metaclass=_Callback):
    pass


def _encode_callback(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    name = type(value).__name__
    config = {}
    for argument, attribute in CALLBACKS[name][1].items():
        if not hasattr(value, attribute):
            raise UnsupportedTypeError(path, name, f"this callback keeps no '{attribute}'")
        config[argument] = enc.value(getattr(value, attribute), join(path, argument), 1)
    return {"class": name, "config": config}


def _decode_callback(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    cls = _callback_class(node["class"], path)
    arguments = CALLBACKS[node["class"]][1]
    config = node["config"]
    if set(config) != set(arguments):
        raise fail(path, f"a {node['class']} is configured by exactly {sorted(arguments)}")
    kwargs = {k: dec.value(v, join(path, k), 1) for k, v in config.items()}
    if "max_propagation_depth" in kwargs and kwargs["max_propagation_depth"] is not None:
        bounded_int(kwargs["max_propagation_depth"], "max_propagation_depth", path, high=_MAX_DEPTH)
    _check_scoring(kwargs.get("scoring"), path)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise fail(path, f"invalid {node['class']} configuration: {type(exc).__name__}: {str(exc)[:120]}") from None


def _check_scoring(scoring: Any, path: str) -> None:
    """Metric names are scikit-learn's (checked here, not at the refit that would first use them)."""
    from sklearn.metrics import get_scorer_names

    names = [scoring] if isinstance(scoring, str) else scoring if isinstance(scoring, (list, tuple)) else []
    for name in names:
        if not isinstance(name, str) or name not in get_scorer_names():
            raise fail(join(path, "scoring"), f"invalid ScoringMonitor configuration: {preview(name, 60)} is not "
                                              "a scikit-learn metric name")


CALLBACK = register_handler(Handler("callback", (_AllowedCallback,), _encode_callback, _decode_callback,
                                    {"class": (str,), "config": (dict,)}))
