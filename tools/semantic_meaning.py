"""The lies in meaning of the semantic campaign (issue 36): files valid in every byte whose
hyperparameters, nested objects, private flags or strings say something false.

Four kinds, each a :class:`semantic_lies.Lie` whose ``kind`` names the value told and
whose ``target`` is the JSON path of what it replaces (so a report replays it):

``param=<json>``        a constructor parameter set to a value its class's
                        ``_parameter_constraints`` allow in enumerable form (each
                        ``StrOptions`` value, a bool flipped, an interval's edges, 0, -1,
                        a huge value, None) -- a hyperparameter that picks another
                        compiled path or sizes work at inference;
``kwargs=<name>``       a dict of keyword arguments (``*_params``, ``*_kwargs``, fitted
                        ``effective_metric_params_``) holding a
                        ruled key (``n_jobs``) or an array of the wrong size (``VI``,
                        ``w``, ``V``), with the metric that reads it where the node has one;
``regex=catastrophic``  a pattern parameter set to ``(a+)+$``;
``transplant=<how>``    a fitted nested estimator replaced by the same class fitted on
                        other data: one feature more or less, one class more, one output more;
``flag=<json>``         a private fitted scalar flipped (a bool negated, a string swapped for
                        another string the state holds); ``flag+_in_fit`` adds the flag
                        HistGradientBoosting sets only while fitting;
``widen`` / ``widen=dtype``  one element of a string array made 100,000 characters long
                        (with its stated dtype unchanged, or widened to match).
"""

from __future__ import annotations

import copy
import importlib
import json
import random
from functools import cache
from typing import Any

import numpy as np
import semantic_lies
from semantic_lies import Lie, Skip

KINDS = ("param", "kwargs", "regex", "transplant", "flag", "widen")
HUGE_INT, HUGE_REAL = 2**31 - 1, 1e300
WIDE = 100_000
CATASTROPHIC = "(a+)+$"
#: Ruled keys and wrong-sized arrays for a kwargs dict; ``n`` is the node's width.
KWARGS: dict[str, Any] = {
    "n_jobs": lambda n: {"n_jobs": 5000},
    "VI": lambda n: {"VI": np.eye(n + 1)},
    "w": lambda n: {"w": np.ones(n + 3)},
    "V": lambda n: {"V": np.ones(n + 1)},
    "VI-1": lambda n: {"VI": np.eye(max(n - 1, 1))},  # shorter than a row: a read past its end
    "w-1": lambda n: {"w": np.ones(max(n - 1, 1))},
}
#: The metric a kwargs array is read by: set with it where the node has a ``metric`` parameter,
#: so that the wrong-sized array reaches the distance code (``VI`` alone is ignored by euclidean).
COMPANION = {"VI": "mahalanobis", "w": "minkowski", "V": "seuclidean", "VI-1": "mahalanobis", "w-1": "minkowski"}
TRANSPLANTS = ("width+1", "width-1", "classes+1", "outputs+1")


def _is_kwargs(name: str) -> bool:
    return name.endswith(("_params", "_kwargs")) or name in ("kwds", "kw_args")


def _estimators(node: Any, path: list, fitted: bool, out: list) -> None:
    """Every estimator node under ``node``: (path, class key, fitted) -- fitted when under attrs."""
    if isinstance(node, dict):
        if node.get("__t__") == "estimator":
            out.append((path, str(node.get("class")), fitted))
            _estimators(node.get("params"), [*path, "params"], False, out)
            _estimators(node.get("attrs"), [*path, "attrs"], True, out)
            return
        for key, value in node.items():
            if key != "__t__":
                _estimators(value, [*path, key], fitted, out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _estimators(value, [*path, i], fitted, out)


def _at(meta: dict, path: list) -> Any:
    for key in path:
        meta = meta[key]
    return meta


@cache
def _by_name() -> dict[str, Any]:
    from sklearn.utils import all_estimators

    return dict(all_estimators())


def _class(key: str) -> Any:
    """The class a key names; a key of the registry's own spelling (``sklearn.ensemble.gradient_boosting.X``)
    by its name among scikit-learn's estimators."""
    module, _, name = key.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return _by_name().get(name)


def param_values(cls: Any, name: str, current: Any) -> list[Any]:
    """The enumerable values ``cls``'s constraints allow for parameter ``name``, other than ``current``."""
    from sklearn.utils._param_validation import Interval, StrOptions

    values: list[Any] = []
    for c in getattr(cls, "_parameter_constraints", {}).get(name, ()):
        if c is None:
            values.append(None)
        elif c == "boolean" or c is bool:
            values += [True, False]
        elif isinstance(c, StrOptions):
            values += sorted(c.options - set(getattr(c, "deprecated", ()) or ()))
        elif isinstance(c, Interval):
            integral = c.type is not float and getattr(c.type, "__name__", "") == "Integral"
            huge = HUGE_INT if integral else HUGE_REAL
            values += [v for v in (c.left, c.right) if v is not None]
            values += [v for v in (0, -1, huge) if v in c]
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(v, float) and not np.isfinite(v):
            continue
        seen = [(o, type(o)) for o in [current, *out]]
        if (v, type(v)) not in seen:
            out.append(v)
    return out


def _flags(attrs: dict) -> list[tuple[str, Any]]:
    strings = sorted({v for v in attrs.values() if isinstance(v, str)})
    out = []
    for key, value in sorted(attrs.items()):
        if isinstance(value, bool):
            out.append((key, not value))
        elif isinstance(value, str) and key.startswith("_"):
            out += [(key, s) for s in strings if s != value]
    return out


def _strings(node: Any, path: list, out: list) -> None:
    if isinstance(node, dict):
        if node.get("__t__") == "strarray" and node.get("v"):
            out.append([*path, "v"])
            return
        for key, value in node.items():
            _strings(value, [*path, key], out)
    elif isinstance(node, list):
        if node and all(isinstance(v, str) for v in node):
            out.append(path)
            return
        for i, value in enumerate(node):
            _strings(value, [*path, i], out)


def lies_in_meaning(state: Any, rng: random.Random) -> list[tuple[str, str, str]]:
    """Every (kind, JSON target, owner class) lie in meaning about ``state``, in a fixed order."""
    meta = state.meta
    nodes: list = []
    _estimators(meta["model"], ["model"], False, nodes)
    out = []
    for path, key, fitted in nodes:
        node, cls = _at(meta, path), _class(key)
        params = node.get("params") if isinstance(node.get("params"), dict) else {}
        for name, current in sorted(params.items()):
            target = json.dumps([*path, "params", name])
            if _is_kwargs(name):
                out += [(f"kwargs={k}", target, key) for k in KWARGS]
            elif "pattern" in name and (current is None or isinstance(current, str)):
                out.append(("regex=catastrophic", target, key))
            elif current is None or isinstance(current, (bool, int, float, str)):
                out += [(f"param={json.dumps(v)}", target, key) for v in param_values(cls, name, current)]
        attrs = node.get("attrs") if isinstance(node.get("attrs"), dict) else {}
        # the fitted copies inference reads (a KNN's effective_metric_params_), not only the parameters
        out += [(f"kwargs={k}", json.dumps([*path, "attrs", name]), key) for name, value in sorted(attrs.items())
                if _is_kwargs(name.rstrip("_")) and isinstance(value, dict) for k in KWARGS]
        for name, value in _flags(attrs):
            out.append((f"flag={json.dumps(value)}", json.dumps([*path, "attrs", name]), key))
        if attrs and "_in_fit" not in attrs:
            out.append(("flag+_in_fit", json.dumps([*path, "attrs"]), key))
        if fitted and attrs and len(path) > 1:
            out += [(f"transplant={how}", json.dumps(path), key) for how in TRANSPLANTS]
        strings: list = []
        _strings(attrs, [*path, "attrs"], strings)
        for spath in strings:
            out += [("widen", json.dumps(spath), key), ("widen=dtype", json.dumps(spath), key)]
    return out


def _tensor_names(node: Any, out: list) -> list:
    if isinstance(node, dict):
        if node.get("__t__") == "tensor" and isinstance(node.get("name"), str):
            out.append(node)
        for value in node.values():
            _tensor_names(value, out)
    elif isinstance(node, list):
        for value in node:
            _tensor_names(value, out)
    return out


def _donor(state: Any, path: list, how: str, rng: random.Random) -> tuple[dict, dict]:
    """The node at ``path`` refitted on data it was not fitted on: its metadata and tensors, renamed."""
    import warnings

    from sklearn.base import clone, is_classifier

    from aprender.codec import ModelState, from_state, to_state

    node = _at(state.meta, path)
    names = {ref["name"] for ref in _tensor_names(node, [])}
    sub = ModelState(tensors={k: v for k, v in state.tensors.items() if k in names}, meta={**state.meta, "model": node})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            nested = from_state(sub)
        except Exception as exc:
            raise Skip(f"the nested node does not load alone: {type(exc).__name__}") from None
        width = getattr(nested, "n_features_in_", None)
        if not isinstance(width, int):
            raise Skip("the nested estimator states no width")
        width += {"width+1": 1, "width-1": -1}.get(how, 0)
        if width < 1:
            raise Skip("no width below one feature")
        gen = np.random.default_rng(rng.randrange(2**32))
        X = gen.normal(size=(40, width))
        k = len(getattr(nested, "classes_", [0, 1])) + (how == "classes+1")
        y = np.arange(40) % max(k, 2) if is_classifier(nested) else gen.normal(size=40)
        if how == "outputs+1":
            outputs = int(getattr(nested, "n_outputs_", 1)) + 1
            y = np.stack([np.roll(y, i) for i in range(outputs)], axis=1)
        try:
            donor = to_state(clone(nested).fit(X, y))
        except Exception as exc:
            raise Skip(f"the donor does not fit: {type(exc).__name__}") from None
    meta = copy.deepcopy(donor.meta["model"])
    tensors = {}
    for ref in _tensor_names(meta, []):
        tensors[f"lie.{ref['name']}"] = donor.tensors[ref["name"]]
        ref["name"] = f"lie.{ref['name']}"
    return meta, tensors


def tell_in_meaning(meta: dict, tensors: dict, kind: str, target: str, rng: random.Random) -> None:
    """Tell the lie ``kind`` about ``target`` in ``meta`` and ``tensors`` (both edited in place)."""
    try:
        path = json.loads(target)
        holder = _at(meta, path[:-1]) if path else None
        here = _at(meta, path)
    except (KeyError, IndexError, TypeError, ValueError):
        raise Skip(f"the file holds no {target}") from None
    head, _, word = kind.partition("=")
    if head in ("param", "flag"):
        holder[path[-1]] = json.loads(word)
    elif kind == "flag+_in_fit":
        here["_in_fit"] = True
    elif head == "regex":
        holder[path[-1]] = CATASTROPHIC
    elif head == "kwargs":
        node = _at(meta, path[:-2])
        width = node.get("attrs", {}).get("n_features_in_") if isinstance(node.get("attrs"), dict) else None
        items = []
        for key, value in KWARGS[word](width if isinstance(width, int) else 4).items():
            if isinstance(value, np.ndarray):
                tensors[f"lie.kwargs.{key}"] = value
                value = {"__t__": "tensor", "name": f"lie.kwargs.{key}"}
            items.append([key, value])
        holder[path[-1]] = {"__t__": "dict", "items": items}
        for metric in ("metric", "effective_metric_"):
            if word in COMPANION and metric in holder:
                holder[metric] = COMPANION[word]
    elif head == "transplant":
        raise AssertionError("transplants are told by tell_transplant")
    elif head == "widen":
        strings = here
        if not strings:
            raise Skip("no string to widen")
        i = rng.randrange(len(strings))
        strings[i] = "a" * WIDE
        if word == "dtype" and path[-1] == "v":
            holder["dtype"] = f"<U{WIDE}"
    else:
        raise Skip(f"unknown lie {kind}")


def tell_transplant(state: Any, meta: dict, tensors: dict, kind: str, target: str, rng: random.Random) -> None:
    """Replace the nested estimator at ``target`` with a donor fitted on other data."""
    path = json.loads(target)
    try:
        holder = _at(meta, path[:-1])
    except (KeyError, IndexError, TypeError):
        raise Skip(f"the file holds no {target}") from None
    node, donor_tensors = _donor(state, path, kind.partition("=")[2], rng)
    holder[path[-1]] = node
    tensors.update(donor_tensors)


def lies_of(state: Any, rng: random.Random, kinds: str = "shape") -> list[Lie]:
    """The lies of ``kinds`` about one seed: ``shape`` (semantic_lies.py), ``meaning`` (this module) or ``all``."""
    out = semantic_lies.lies_of(state, rng) if kinds in ("shape", "all") else []
    if kinds in ("meaning", "all"):
        out += [Lie(kind, target, owner) for kind, target, owner in lies_in_meaning(state, rng)]
    return out


def tell(state: Any, lie: Lie, rng_seed: int) -> bytes:
    """The SafeTensors bytes of ``state`` with ``lie`` told, a lie of shape or of meaning."""
    from aprender.codec import ModelState
    from aprender.format import safetensors

    if lie.kind.partition("=")[0].partition("+")[0] not in KINDS:
        return semantic_lies.tell(state, lie, rng_seed)
    rng = random.Random(f"{rng_seed}:{lie}")
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    if lie.kind.startswith("transplant="):
        tell_transplant(state, meta, tensors, lie.kind, lie.target, rng)
    else:
        tell_in_meaning(meta, tensors, lie.kind, lie.target, rng)
    try:
        return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))
    except (TypeError, ValueError) as exc:  # the writer itself refuses the lie: nothing reaches a reader
        raise Skip(f"the writer refuses it: {type(exc).__name__}") from None
