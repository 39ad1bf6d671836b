"""LightGBM's text model <-> named arrays and checked header values.

A LightGBM booster is stored as the arrays of its text model (``Booster.model_to_string``):
the per-tree node arrays concatenated in tree order, with each tree's ``num_leaves`` and
``num_cat`` saying how many entries it owns (:data:`TREE_ARRAYS`). Saving parses the text
LightGBM wrote; loading writes a new text from arrays and header values that passed
:func:`aprender.codec.schemas._lgbm_checks.check_model`, and only that text reaches
LightGBM's parser. Nothing here imports LightGBM: ``apr inspect`` can read the arrays
without it.

Doubles are written with ``repr``'s text, the shortest that parses back to the same double
(by orjson, in C, when the ``fast`` extra is installed: formatting a 500-tree model's
numbers one by one in Python took most of its load); LightGBM's parser reads them exactly,
so the rebuilt booster holds the same bits (tests/test_lightgbm.py compares the rebuilt
model's own text with the original's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.exceptions import UnsupportedTypeError

try:  # the ``fast`` extra: orjson writes numbers in C, with ``repr``'s text up to the exponent's form
    import orjson as _orjson
except ImportError:  # pragma: no cover - tests take the standard library's path by setting _orjson to None
    _orjson = None

__all__ = ["HEADER_INTS", "MULTICLASS", "OBJECTIVES", "TREE_ARRAYS", "TREE_COUNTS", "format_feature_info",
           "format_objective", "parse_feature_info", "parse_model", "parse_objective", "write_model"]

#: Node array -> (dtype, what one entry belongs to): ``node`` (num_leaves - 1 per tree),
#: ``leaf`` (num_leaves per tree), ``cat`` (num_cat + 1 per tree when num_cat > 0, else none),
#: ``word`` (the tree's last cat_boundaries entry: its bitset words).
TREE_ARRAYS: dict[str, tuple[np.dtype, str]] = {
    "split_feature": (np.dtype(np.int32), "node"),
    "split_gain": (np.dtype(np.float64), "node"),
    "threshold": (np.dtype(np.float64), "node"),
    "decision_type": (np.dtype(np.int8), "node"),
    "left_child": (np.dtype(np.int32), "node"),
    "right_child": (np.dtype(np.int32), "node"),
    "leaf_value": (np.dtype(np.float64), "leaf"),
    "leaf_weight": (np.dtype(np.float64), "leaf"),
    "leaf_count": (np.dtype(np.int64), "leaf"),
    "internal_value": (np.dtype(np.float64), "node"),
    "internal_weight": (np.dtype(np.float64), "node"),
    "internal_count": (np.dtype(np.int64), "node"),
    "cat_boundaries": (np.dtype(np.int32), "cat"),
    "cat_threshold": (np.dtype(np.uint32), "word"),
}
#: One entry per tree.
TREE_COUNTS: dict[str, np.dtype] = {
    "num_leaves": np.dtype(np.int32),
    "num_cat": np.dtype(np.int32),
    "shrinkage": np.dtype(np.float64),
}
#: Integer header lines, in the order LightGBM writes them.
HEADER_INTS = ("num_class", "num_tree_per_iteration", "label_index", "max_feature_idx")

#: LightGBM's objectives as its model text names them -> the options its ``ToString`` writes
#: after the name (``"binary sigmoid:1"``, ``"regression sqrt"``): option -> ``"int"``,
#: ``"float"`` (``key:value``) or ``"flag"`` (a bare word). The objective decides how raw
#: scores become predictions, so a name outside this table is refused.
OBJECTIVES: dict[str, dict[str, str]] = {
    "regression": {"sqrt": "flag"},
    "regression_l1": {"sqrt": "flag"},
    "huber": {"sqrt": "flag"},
    "fair": {"sqrt": "flag"},
    "quantile": {"sqrt": "flag"},
    "mape": {"sqrt": "flag"},
    "poisson": {},
    "gamma": {},
    "tweedie": {},
    "binary": {"sigmoid": "float"},
    "multiclass": {"num_class": "int"},
    "multiclassova": {"num_class": "int", "sigmoid": "float"},
    "cross_entropy": {},
    "cross_entropy_lambda": {},
    "lambdarank": {},
    "rank_xendcg": {},
}
#: The objectives whose booster grows one tree per class each iteration.
MULTICLASS = frozenset(["multiclass", "multiclassova"])

_LINE = re.compile(r"^([a-z_]+)=(.*)$")
_OPTION = re.compile(r"^([a-z_]+):(.+)$")


def parse_objective(text: str) -> tuple[str, dict[str, Any]] | None:
    """``"multiclass num_class:3"`` -> ``("multiclass", {"num_class": 3})``; ``None`` if it breaks the table."""
    name, *tokens = text.split(" ")
    allowed = OBJECTIVES.get(name)
    if allowed is None:
        return None
    options: dict[str, Any] = {}
    for token in tokens:
        match = _OPTION.match(token)
        key, raw = (match.group(1), match.group(2)) if match else (token, None)
        kind = allowed.get(key)
        if kind is None or key in options or (kind == "flag") != (raw is None):
            return None
        try:
            options[key] = True if raw is None else int(raw) if kind == "int" else float(raw)
        except ValueError:
            return None
    return name, options


def format_objective(name: str, options: Mapping[str, Any]) -> str:
    """The objective line's value, in LightGBM's order of options (the table's)."""
    parts = [name]
    for key, kind in OBJECTIVES[name].items():
        if key in options:
            parts.append(key if kind == "flag" else f"{key}:{options[key]!r}")
    return " ".join(parts)


def _refuse(path: str, why: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(path, "lightgbm.basic.Booster", why)


def _header(lines: list[str], path: str) -> dict[str, Any]:
    header: dict[str, Any] = {"average_output": False, "monotone_constraints": None}
    for line in lines:
        if line == "average_output":
            header["average_output"] = True
            continue
        match = _LINE.match(line)
        if match is None:
            raise _refuse(path, f"its model text has a header line aprender does not know: {line[:60]!r}")
        key, value = match.groups()
        if key in HEADER_INTS:
            header[key] = int(value)
        elif key in ("version", "objective"):
            header[key] = value
        elif key == "feature_names" or key == "feature_infos":
            header[key] = value.split(" ")
        elif key == "monotone_constraints":
            header[key] = [int(v) for v in value.split(" ")]
        elif key != "tree_sizes":  # offsets into the text, rewritten by LightGBM when it writes one
            raise _refuse(path, f"its model text has a header line aprender does not know: {key!r}")
    missing = [k for k in ("version", *HEADER_INTS, "objective", "feature_names", "feature_infos") if k not in header]
    if missing:
        why = "a custom objective function" if missing == ["objective"] else f"no {missing[0]!r} line"
        raise _refuse(path, f"its model has {why}; aprender stores boosters of LightGBM's named objectives")
    return header


def _numbers(value: str, dtype: np.dtype) -> np.ndarray:
    return np.array(value.split(" ") if value else [], dtype=np.float64 if dtype.kind == "f" else np.int64
                    ).astype(dtype)


def parse_model(text: str, pandas_categorical: Any, path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Split the text LightGBM wrote into header values and concatenated tree arrays.

    Raises :class:`~aprender.exceptions.UnsupportedTypeError` for what aprender does not
    store: linear trees, custom objectives, header lines it does not know.
    """
    head, sep, rest = text.partition("\nTree=0\n")
    if not sep:
        raise _refuse(path, "its model has no trees")
    header = _header([ln for ln in head.splitlines()[1:] if ln], path)
    header["pandas_categorical"] = pandas_categorical
    trees_text = rest.partition("\nend of trees")[0]
    columns: dict[str, list[np.ndarray]] = {name: [] for name in (*TREE_ARRAYS, *TREE_COUNTS)}
    for t, block in enumerate(re.split(r"\nTree=\d+\n", trees_text)):
        fields = dict(ln.split("=", 1) for ln in block.strip().splitlines())
        if fields.pop("is_linear", "0") != "0":
            raise _refuse(path, "linear trees (linear_tree=True) are not supported: refit without it")
        num_leaves, num_cat = int(fields.pop("num_leaves")), int(fields.pop("num_cat"))
        columns["num_leaves"].append(np.array([num_leaves], dtype=np.int32))
        columns["num_cat"].append(np.array([num_cat], dtype=np.int32))
        columns["shrinkage"].append(np.array([float(fields.pop("shrinkage"))]))
        for name, (dtype, _) in TREE_ARRAYS.items():
            values = _numbers(fields.pop(name, ""), dtype)
            if name == "leaf_weight" and num_leaves == 1:  # LightGBM keeps no weight for a lone leaf
                values = np.zeros(1, dtype=dtype)
            columns[name].append(values)
        if fields:
            raise _refuse(path, f"tree {t} has a field aprender does not know: {sorted(fields)[0]!r}")
    dtypes = {**TREE_COUNTS, **{name: dtype for name, (dtype, _) in TREE_ARRAYS.items()}}
    arrays = {name: np.concatenate(parts).astype(dtypes[name]) for name, parts in columns.items()}
    return header, arrays


_RANGE = re.compile(r"^\[([^:\]]+):([^:\]]+)\]$")
_CATEGORIES = re.compile(r"^-?\d{1,10}(:-?\d{1,10})*$")


def parse_feature_info(text: str) -> tuple[float, float] | list[int] | None:
    """One ``feature_infos`` entry: ``none`` (an unused feature), ``[min:max]`` (a numeric one)
    or ``c1:c2:...`` (the categories of a categorical one). A ValueError if it is none of them."""
    if text == "none":
        return None
    match = _RANGE.match(text)
    if match:
        return float(match.group(1)), float(match.group(2))
    if _CATEGORIES.match(text):
        return [int(c) for c in text.split(":")]
    raise ValueError(f"not a LightGBM feature info: {text[:40]!r}")


def format_feature_info(info: tuple[float, float] | list[int] | None) -> str:
    """The text of one entry :func:`parse_feature_info` read."""
    if info is None:
        return "none"
    if isinstance(info, tuple):
        # LightGBM keeps this text as it was written, with 17 significant digits (C++ setprecision(17)).
        return f"[{info[0]:.17g}:{info[1]:.17g}]"
    return ":".join(map(str, info))


def _pieces(values: np.ndarray, begins: np.ndarray, ends: np.ndarray) -> list[str]:
    """The text of ``values[begins[t]:ends[t]]`` for each tree ``t``: numbers separated by spaces.

    The whole array is formatted in one call (by orjson in C when installed, ``repr``'s text
    either way: the shortest that parses back to the same number), then cut at its spaces.
    """
    if _orjson is None:
        raw = " ".join(map(repr, values.tolist())).encode("ascii")
    else:
        try:  # the array itself: the same text as its list's, without making the list
            raw = _orjson.dumps(values, option=_orjson.OPT_SERIALIZE_NUMPY)
        except _orjson.JSONEncodeError:  # not C-contiguous, or not in native byte order
            raw = _orjson.dumps(values.tolist())
        raw = raw[1:-1].replace(b",", b" ")
    gaps = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == ord(" "))
    first = np.concatenate([[0], gaps + 1])  # where each number's text starts
    last = np.concatenate([gaps, [len(raw)]])  # and ends
    empty = ends <= begins
    cut_begin = np.where(empty, 0, first[np.minimum(begins, first.shape[0] - 1)]).tolist()
    cut_end = np.where(empty, 0, last[ends - 1]).tolist()
    text = raw.decode("ascii")
    return [text[b:e] for b, e in zip(cut_begin, cut_end, strict=True)]


def write_model(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray], offsets: Mapping[str, np.ndarray]) -> str:
    """LightGBM model text from checked header values and arrays.

    ``offsets`` holds, for ``node``, ``leaf``, ``cat`` and ``word``, where each tree's
    entries start (one more entry than trees), as the checks computed them.
    """
    lines = ["tree", f"version={header['version']}"]
    lines += [f"{key}={header[key]}" for key in HEADER_INTS]
    lines.append(f"objective={format_objective(*header['objective'])}")
    if header["average_output"]:
        lines.append("average_output")
    lines.append("feature_names=" + " ".join(header["feature_names"]))
    if header["monotone_constraints"] is not None:
        lines.append("monotone_constraints=" + " ".join(map(str, header["monotone_constraints"])))
    lines.append("feature_infos=" + " ".join(header["feature_infos"]))
    lines.append("")
    num_leaves, num_cat = arrays["num_leaves"].tolist(), arrays["num_cat"].tolist()
    shrinkage = _pieces(arrays["shrinkage"], np.arange(len(num_leaves)), np.arange(1, len(num_leaves) + 1))
    texts = {}
    for name, (_, per) in TREE_ARRAYS.items():
        begins, ends = offsets[per][:-1], offsets[per][1:]
        if name == "leaf_weight":  # LightGBM writes none for a lone leaf
            ends = np.where(arrays["num_leaves"] == 1, begins, ends)
        texts[name] = _pieces(arrays[name], begins, ends)
    for t in range(len(num_leaves)):
        lines += [f"Tree={t}", f"num_leaves={num_leaves[t]}", f"num_cat={num_cat[t]}"]
        lines += [f"{name}={texts[name][t]}" for name, (_, per) in TREE_ARRAYS.items()
                  if num_cat[t] or per not in ("cat", "word")]
        lines += ["is_linear=0", f"shrinkage={shrinkage[t]}", "", ""]
    # The objective's name among the parameters, as LightGBM writes it: the rebuilt booster's ``params``.
    lines += ["end of trees", "", "parameters:", f"[objective: {header['objective'][0]}]", "end of parameters", "",
              f"pandas_categorical:{json.dumps(header['pandas_categorical'])}", ""]
    return "\n".join(lines)
