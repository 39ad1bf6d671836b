"""``diff``: compare two model files' metadata and tensors, whatever their formats."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.markup import escape

from aprender.cli._files import plain, read
from aprender.cli._options import INPUT, Invalid, debug_option, json_option
from aprender.cli._render import console, emit_json, json_safe, say, short, table
from aprender.cli._secrets import Secrets, secret_options
from aprender.codec import ModelState

__all__ = ["compare", "diff"]


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


#: Codec nodes compared whole: a tensor reference, a number, a function, a type.
_LEAF_TAGS = frozenset(["tensor", "float", "scalar", "type", "function", "n_threads", "strarray"])


def _tuple_children(items: list[Any], prefix: str) -> Iterator[tuple[str, Any]]:
    """A tuple's items by index, or, for a ``(name, estimator, ...)`` tuple, the estimator by the name."""
    named = len(items) >= 2 and isinstance(items[0], str) and isinstance(items[1], Mapping)
    for i, item in enumerate(items):
        if named and i == 0:
            continue
        yield _join(prefix, items[0] if named and i == 1 else i), item


def _string_keyed(node: Mapping[str, Any]) -> bool:
    """A codec dict whose keys are all strings, walked as an object."""
    return node.get("__t__") == "dict" and isinstance(node.get("items"), list) and all(
        isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) for p in node["items"])


def _node_children(node: Mapping[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
    if node.get("__t__") == "tuple" and isinstance(node.get("v"), list):
        return _tuple_children(node["v"], prefix)
    if _string_keyed(node):
        return ((_join(prefix, key), value) for key, value in node["items"])
    return ((_join(prefix, key), node[key]) for key in sorted(node) if key != "__t__")


def _leaf_tag(tag: Any) -> bool:
    # a file writes the tag: a list or dict there is a hostile node, walked as an object
    return isinstance(tag, str) and tag in _LEAF_TAGS


def _children(node: Any, prefix: str) -> Iterator[tuple[str, Any]] | None:
    """The (path, child) pairs of a node that is walked; ``None`` for a leaf, compared whole."""
    if isinstance(node, Mapping) and node and not _leaf_tag(node.get("__t__")):
        return _node_children(node, prefix)
    if isinstance(node, list) and any(isinstance(v, (Mapping, list)) for v in node):
        return ((_join(prefix, i), value) for i, value in enumerate(node))
    return None


def _flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted paths of the leaves of a metadata tree, through the codec's nodes.

    Objects and lists of objects are walked; lists of plain values, tensor references and
    scalars are compared whole. A ``(name, estimator, ...)`` tuple (a Pipeline step, a
    ColumnTransformer entry) is named by its name, so that a change of ``C`` in a pipeline's
    second step reads ``model.params.steps.1.logisticregression.params.C``.
    """
    children = _children(node, prefix)
    if children is None:
        yield prefix, node
        return
    for path, child in children:
        yield from _flatten(child, path)


def _same(a: Any, b: Any) -> bool:
    return json.dumps(json_safe(a), sort_keys=True) == json.dumps(json_safe(b), sort_keys=True)


def _metadata(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    fa, fb = dict(_flatten(a)), dict(_flatten(b))
    missing = object()
    rows = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key, missing), fb.get(key, missing)
        if va is missing or vb is missing or not _same(va, vb):
            rows.append({"key": key, "a": None if va is missing else va, "b": None if vb is missing else vb,
                         "status": "only_b" if va is missing else "only_a" if vb is missing else "changed"})
    return rows


def _stored_dtypes(state: ModelState) -> dict[str, str]:
    """Each tensor's dtype as stored: the block format for quantized tensors."""
    record = state.meta.get("quantization")
    blocks = record.get("tensors", {}) if isinstance(record, dict) else {}
    return {name: (record["type"] if name in blocks else array.dtype.name) for name, array in state.tensors.items()}


def _values(x: np.ndarray, y: np.ndarray) -> tuple[bool, float | None, int]:
    """(equal, max |x - y| over positions that are numbers in both, positions where only one is NaN)."""
    if x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind in "fcV"):
        return True, 0.0, 0
    xf, yf = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    nan_x, nan_y = np.isnan(xf), np.isnan(yf)
    both = ~(nan_x | nan_y)
    with np.errstate(invalid="ignore", over="ignore"):
        delta = np.abs(xf[both] - yf[both])
    return False, float(delta.max()) if delta.size else None, int((nan_x != nan_y).sum())


def compare(a: ModelState, b: ModelState, atol: float = 0.0) -> dict[str, Any]:
    """Metadata and tensor differences of two states (quantized tensors compared dequantized)."""
    dtypes_a, dtypes_b = _stored_dtypes(a), _stored_dtypes(b)
    ta, tb = plain(a).tensors, plain(b).tensors
    tensors = []
    for name in sorted(set(ta) | set(tb)):
        row: dict[str, Any] = {"name": name, "dtype_a": dtypes_a.get(name), "dtype_b": dtypes_b.get(name),
                               "shape_a": list(ta[name].shape) if name in ta else None,
                               "shape_b": list(tb[name].shape) if name in tb else None,
                               "max_abs_diff": None, "nan_mismatch": 0}
        if name not in tb or name not in ta:
            row["status"] = "only_a" if name in ta else "only_b"
        elif ta[name].shape != tb[name].shape:
            row["status"] = "shape"
        else:
            equal, delta, nan = _values(ta[name], tb[name])
            row["max_abs_diff"], row["nan_mismatch"] = delta, nan
            if row["dtype_a"] != row["dtype_b"]:
                row["status"] = "dtype"
            elif equal:
                row["status"] = "equal"
            else:
                row["status"] = "close" if nan == 0 and (delta or 0.0) <= atol else "values"
        tensors.append(row)
    metadata = _metadata(a.meta, b.meta)
    differ = [t for t in tensors if t["status"] not in ("equal", "close")]
    return {"identical": not metadata and not differ, "metadata": metadata, "tensors": tensors,
            "n_tensors_differ": len(differ), "atol": atol}


def _cell(dtype: str | None, shape: list[int] | None) -> str:
    return "-" if dtype is None else f"{dtype} {'x'.join(map(str, shape or [])) or 'scalar'}"


@click.command(short_help="Compare metadata and tensors of two files.")
@click.argument("a", type=INPUT)
@click.argument("b", type=INPUT)
@click.option("--atol", type=click.FloatRange(min=0.0), default=0.0, show_default=True,
              help="Treat tensors whose values differ by at most this much as equal.")
@secret_options
@json_option
@debug_option
def diff(a: Path, b: Path, atol: float, secrets: Secrets, as_json: bool) -> int:
    """Compare the metadata and tensors of A and B (any formats). Exit status 0 when identical, 1 when not.

    Reports metadata keys that differ, tensors only in one file, shape and dtype
    changes, and the largest absolute difference of each changed tensor. Quantized
    tensors are compared by their dequantized values.
    """
    result = {"a": str(a), "b": str(b), **compare(read(a, secrets).state, read(b, secrets).state, atol)}
    if as_json:
        emit_json(result)
    else:
        _render(result)
    if not result["identical"]:
        raise Invalid()
    return 0


def _render(result: dict[str, Any]) -> None:
    out = console()
    same = sum(t["status"] in ("equal", "close") for t in result["tensors"])
    if result["identical"]:
        say(f"identical: {escape(result['a'])} and {escape(result['b'])} ({same} tensors, metadata equal)")
        return
    if result["metadata"]:
        rows = [[m["key"], "-" if m["status"] == "only_b" else short(m["a"], 40),
                 "-" if m["status"] == "only_a" else short(m["b"], 40)] for m in result["metadata"]]
        out.print(table("Metadata differences", ["Key", "A", "B"], rows))
    changed = [t for t in result["tensors"] if t["status"] not in ("equal", "close")]
    if changed:
        rows = [[t["name"], t["status"], _cell(t["dtype_a"], t["shape_a"]), _cell(t["dtype_b"], t["shape_b"]),
                 "-" if t["max_abs_diff"] is None else f"{t['max_abs_diff']:.6g}", t["nan_mismatch"] or ""]
                for t in changed]
        out.print(table("Tensor differences", ["Tensor", "Change", "A", "B", "Max abs diff", "NaN mismatch"], rows,
                        right=("Max abs diff", "NaN mismatch")))
    say(f"{escape(result['a'])} and {escape(result['b'])} differ: {len(result['metadata'])} metadata keys, "
        f"{len(changed)} of {len(result['tensors'])} tensors ({same} equal)")
