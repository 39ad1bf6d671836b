"""The lies of the semantic campaign (tools/semantic_fuzz.py): edits of a valid ModelState.

Each lie is one false statement about a fitted model, written back with the library's
own SafeTensors writer so that the file is valid in every byte:

* a fitted tensor's length +1, -1, 0 or x1000 (capped at :data:`CAP` elements), its
  last axis one longer or shorter, its first two dimensions merged (a 1-d tensor
  becomes 0-d), or a dimension added in front or behind;
* one element of an integer tensor set to -1, its length, 2**31-1 or 2**40 (a value the
  dtype cannot hold is a :class:`Skip`);
* one element of a float tensor set to NaN or inf;
* a tensor swapped with a sibling of the same estimator node;
* a plain integer of the fitted metadata (``n_features_in_``, ``t_``, a tree's
  ``max_depth``, a vocabulary index, ...) set to 0, -1, itself + 1, 2**31-1 or 2**40.

Tensors and fields whose names differ only by a list index (the trees of a forest) are
one group; one member of each group, picked by the seeded generator, is lied about.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Most elements a lengthened tensor may have: the files stay small.
CAP = 1_000_000
INT_VALUES = {"-1": -1, "n": None, "2**31-1": 2**31 - 1, "2**40": 2**40}  # None: the tensor's length
META_VALUES = {"0": 0, "-1": -1, "+1": None, "2**31-1": 2**31 - 1, "2**40": 2**40}  # None: the value + 1


@dataclass(frozen=True)
class Lie:
    """One false statement about a seed: ``kind`` applied to ``target`` (a tensor or a metadata path)."""

    kind: str
    target: str
    node: str  # the class key of the estimator node that owns the target

    def __str__(self) -> str:
        return f"{self.kind} {self.target}"


@dataclass
class _Refs:
    """The fitted tensors and integers of a metadata tree, with the estimator node owning each."""

    tensors: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (owner class, owner path)
    ints: dict[str, str] = field(default_factory=dict)  # JSON path -> owner class


def _walk(node: Any, path: list, owner: tuple[str, str], fitted: bool, refs: _Refs) -> None:
    if isinstance(node, dict):
        tag = node.get("__t__")
        if tag == "tensor" and isinstance(node.get("name"), str):
            refs.tensors[node["name"]] = owner
            return
        if tag == "estimator":
            here = (str(node.get("class")), ".".join(map(str, path)))
            _walk(node.get("params"), [*path, "params"], here, False, refs)
            _walk(node.get("attrs"), [*path, "attrs"], here, True, refs)
            return
        for key, value in node.items():
            if key not in ("__t__", "class", "dtype"):
                _walk(value, [*path, key], owner, fitted, refs)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, [*path, i], owner, fitted, refs)
    elif fitted and isinstance(node, int) and not isinstance(node, bool):
        refs.ints[json.dumps(path)] = owner[0]


def refs_of(meta: dict) -> _Refs:
    """Every tensor reference and fitted plain integer under ``meta["model"]``."""
    refs = _Refs()
    _walk(meta["model"], ["model"], ("", ""), False, refs)
    return refs


def _group(key: str) -> str:
    """A tensor name or JSON path with its list indices blanked: the trees of a forest are one group."""
    return re.sub(r"(?<![\w])\d+(?![\w])", "*", key)


def _representatives(keys: list[str], rng: random.Random) -> list[str]:
    groups: dict[str, list[str]] = defaultdict(list)
    for key in sorted(keys):
        groups[_group(key)].append(key)
    return [rng.choice(members) for _, members in sorted(groups.items())]


def lies_of(state: Any, rng: random.Random) -> list[Lie]:
    """Every lie of the campaign about one seed's state, in a fixed order."""
    refs = refs_of(state.meta)
    out = []
    for name in _representatives(list(refs.tensors), rng):
        owner, node_path = refs.tensors[name]
        array = state.tensors[name]
        kinds = ["len+1", "len-1", "len=0", "len*1000", "dim-", "dim+front", "dim+back"]
        kinds += ["last+1", "last-1"] if array.ndim >= 2 else []
        if array.dtype.kind in "iu":
            kinds += [f"value={v}" for v in INT_VALUES]
        elif array.dtype.kind == "f":
            kinds += ["value=nan", "value=inf"]
        if any(o == node_path and n != name for n, (_, o) in refs.tensors.items()):
            kinds.append("swap")
        out += [Lie(kind, name, owner) for kind in kinds]
    for path in _representatives(list(refs.ints), rng):
        out += [Lie(f"meta={v}", path, refs.ints[path]) for v in META_VALUES]
    return out


class Skip(Exception):
    """A lie that cannot be told about this state (a value the dtype cannot hold, an empty tensor)."""


def _resized(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` with ``n`` entries along its first axis, repeating its own rows (zeros where it has none)."""
    if a.shape[0] == 0:
        return np.zeros((n, *a.shape[1:]), dtype=a.dtype)
    return np.ascontiguousarray(a[np.arange(n) % a.shape[0]])


def _tensor_lie(a: np.ndarray, kind: str, rng: random.Random) -> np.ndarray:
    if kind.startswith("len"):
        if a.ndim == 0:
            raise Skip("a 0-d tensor has no length")
        n = a.shape[0]
        row = max(a.size // max(n, 1), 1)
        target = {"len+1": n + 1, "len-1": n - 1, "len=0": 0, "len*1000": min(n * 1000, CAP // row)}[kind]
        if target < 0 or target == n:
            raise Skip(f"length {n} cannot become {kind}")
        return _resized(a, target)
    if kind.startswith("last"):  # the last axis of a 2-d or higher tensor: a row one short or long
        if a.ndim < 2 or (kind == "last-1" and a.shape[-1] == 0):
            raise Skip("no last axis to change")
        width = a.shape[-1] + (1 if kind == "last+1" else -1)
        return np.ascontiguousarray(np.moveaxis(_resized(np.moveaxis(a, -1, 0), width), 0, -1))
    if kind == "dim-":
        if a.ndim == 0 or a.size == 0:
            raise Skip("no dimension to drop from a 0-d or empty tensor")
        return a.reshape(-1, *a.shape[2:]) if a.ndim >= 2 else np.ascontiguousarray(a.reshape(-1)[:1].reshape(()))
    if kind == "dim+front":
        return np.ascontiguousarray(a[np.newaxis])
    if kind == "dim+back":
        return np.ascontiguousarray(a[..., np.newaxis])
    # value=...
    if a.size == 0:
        raise Skip("an empty tensor has no element to change")
    word = kind.partition("=")[2]
    if word in ("nan", "inf"):
        value: Any = float(word)
    else:
        value = INT_VALUES[word] if INT_VALUES[word] is not None else (a.shape[0] if a.ndim else 1)
        info = np.iinfo(a.dtype)
        if not info.min <= value <= info.max:
            raise Skip(f"{value} does not fit {a.dtype}")
    out = a.copy()
    flat = out.reshape(-1)
    places = np.flatnonzero(~np.isnan(flat) if value != value else flat != value)
    if places.size == 0:
        raise Skip(f"every element is already {value}")
    flat[int(places[rng.randrange(places.size)])] = value
    return out


def _at(tree: Any, path: list) -> tuple[Any, Any]:
    for key in path[:-1]:
        tree = tree[key]
    return tree, path[-1]


def _find_ref(node: Any, name: str) -> dict:
    if isinstance(node, dict):
        if node.get("__t__") == "tensor" and node.get("name") == name:
            return node
        values = node.values()
    elif isinstance(node, list):
        values = node
    else:
        values = ()
    for value in values:
        with contextlib.suppress(KeyError):
            return _find_ref(value, name)
    raise KeyError(name)


def tell(state: Any, lie: Lie, rng_seed: int) -> bytes:
    """The SafeTensors bytes of ``state`` with ``lie`` told, written by the library's own writer."""
    from aprender.codec import ModelState
    from aprender.format import safetensors

    rng = random.Random(f"{rng_seed}:{lie}")
    meta, tensors = state.meta, dict(state.tensors)
    if lie.kind == "none":  # the truth: checks the harness, not the library
        pass
    elif lie.kind == "swap":
        refs = refs_of(meta)
        node_path = refs.tensors[lie.target][1]
        others = sorted(n for n, (_, o) in refs.tensors.items() if o == node_path and n != lie.target)
        other = rng.choice(others)
        meta = copy.deepcopy(meta)
        a, b = _find_ref(meta["model"], lie.target), _find_ref(meta["model"], other)
        a["name"], b["name"] = other, lie.target
    elif lie.kind.startswith("meta="):
        meta = copy.deepcopy(meta)
        try:
            holder, key = _at(meta, json.loads(lie.target))
        except (KeyError, IndexError, TypeError):  # a replayed lie about a field this version no longer writes
            raise Skip(f"the file holds no {lie.target}") from None
        word = lie.kind.partition("=")[2]
        value = META_VALUES[word] if META_VALUES[word] is not None else holder[key] + 1
        if holder[key] == value:
            raise Skip(f"{lie.target} is already {value}")
        holder[key] = value
    else:
        if lie.target not in tensors:  # a replayed lie about a tensor this version no longer writes
            raise Skip(f"the file holds no tensor {lie.target}")
        tensors[lie.target] = _tensor_lie(tensors[lie.target], lie.kind, rng)
    return safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta))
