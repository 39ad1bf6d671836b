"""The model in a file as the tree a scikit-learn user knows: steps, columns, non-default hyperparameters.

``apr inspect`` shows a Pipeline the way scikit-learn's repr and HTML display do: each
step and transformer by name, the columns each transformer takes, each estimator with
the hyperparameters that differ from its defaults, and the input columns with the type
the fitted state shows for them. It reads only the metadata tree (the codec's JSON), so
it needs no key, no tensor data and no scikit-learn: defaults come from a generated table
(:mod:`aprender.cli._defaults`, tools/gen_param_defaults.py).

:func:`untag` turns any node of the codec's tree into plain JSON (no ``__t__`` tags);
:func:`model_tree` builds the tree (the ``model`` field of ``apr inspect --json``), and
:func:`branches` gives it as plain text for the command line's tree renderer, which escapes
it as it escapes every table. docs/cli.md documents the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["branches", "input_columns", "inputs_line", "model_tree", "untag"]

#: Params that hold (name, estimator[, columns]) lists, shown as named children.
_NAMED_LISTS = ("steps", "transformers", "transformer_list", "estimators")
#: Fitted lists that replace their parameter in the tree (they hold the fitted estimators).
_FITTED_LISTS = {"transformers": "transformers_"}
#: Attributes whose arrays show a column's values are numbers.
_NUMERIC_STATS = ("mean_", "scale_", "statistics_", "data_min_", "center_", "var_", "n_bins_", "lambdas_")


def _is_estimator(node: Any) -> bool:
    return isinstance(node, Mapping) and node.get("__t__") == "estimator"


def _items(node: Any) -> list:
    """A tuple or list node's items (tuples are tagged, lists are plain)."""
    if isinstance(node, Mapping) and node.get("__t__") == "tuple":
        return list(node.get("v") or [])
    return list(node) if isinstance(node, list) else []


def _untag_estimator(node: Mapping[str, Any]) -> Any:
    params = node.get("params") or {}
    return {"class": _short(node.get("class")), "params": {k: untag(v) for k, v in params.items()}}


def _untag_items(node: Mapping[str, Any]) -> Any:
    return [untag(v) for v in node.get("v") or []]


def _untag_dict(node: Mapping[str, Any]) -> Any:
    """An object when every key is a string, else a list of [key, value] pairs."""
    items = node.get("items") or []
    if all(isinstance(k, str) for k, _ in items):
        return {k: untag(v) for k, v in items}
    return [[untag(k), untag(v)] for k, v in items]


def _untag_value(node: Mapping[str, Any]) -> Any:
    return node.get("v")


def _untag_tensor(node: Mapping[str, Any]) -> Any:
    return {"tensor": node.get("name")}


def _untag_named(node: Mapping[str, Any]) -> Any:
    return node.get("name") or node.get("v")


def _untag_partial(node: Mapping[str, Any]) -> Any:
    return {"partial": untag(node.get("func")), "args": untag(node.get("args")),
            "keywords": untag(node.get("keywords"))}


def _untag_range(node: Mapping[str, Any]) -> Any:
    return f"range({node.get('start')}, {node.get('stop')}, {node.get('step')})"


def _untag_column_selector(node: Mapping[str, Any]) -> Any:
    args = {k: untag(node.get(k)) for k in ("pattern", "dtype_include", "dtype_exclude") if node.get(k) is not None}
    return f"make_column_selector({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def _untag_opaque(node: Mapping[str, Any]) -> Any:
    return f"<{_short(node.get('class') or node.get('name'))}>"


#: The codec's tag -> the plain JSON its node shows as; any other tag shows as ``<tag>``.
_UNTAG = {"estimator": _untag_estimator, "tuple": _untag_items, "strarray": _untag_items, "objarray": _untag_items,
          "dict": _untag_dict, "float": _untag_value, "scalar": _untag_value, "type": _untag_value,
          "pandas_missing": _untag_value, "tensor": _untag_tensor, "function": _untag_named, "class": _untag_named,
          "partial": _untag_partial, "range": _untag_range, "column_selector": _untag_column_selector,
          "object": _untag_opaque, "callback": _untag_opaque, "distribution": _untag_opaque}


def untag(node: Any) -> Any:
    """A node of the codec's metadata tree as plain JSON: values, not tags."""
    if isinstance(node, list):
        return [untag(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    tag = node.get("__t__")
    if tag is None:
        return {str(k): untag(v) for k, v in node.items()}
    untagged = _UNTAG.get(tag) if isinstance(tag, str) else None  # a file's tag may be any JSON value
    return f"<{tag}>" if untagged is None else untagged(node)


def _short(key: Any) -> str:
    return key.rsplit(".", 1)[-1] if isinstance(key, str) else "?"


def _non_default(node: Mapping[str, Any], skip: set[str]) -> dict[str, Any]:
    """The estimator's hyperparameters that differ from its class's defaults, as plain values."""
    from aprender.cli._defaults import defaults_of

    defaults = defaults_of(node.get("class"))
    out = {}
    for name, value in sorted((node.get("params") or {}).items()):
        if name in skip:
            continue
        value = untag(value)
        if name not in defaults or not _same(value, defaults[name]):
            out[name] = value
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as scikit-learn's repr judges a default: 1 and 1.0 alike, True and 1 not."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return a == b and (numbers or type(a) is type(b))


def model_tree(model: Any) -> dict[str, Any] | None:
    """The tree of an estimator node: ``{"class", "key", "params", "children": [...]}`` (``None`` for no model)."""
    if not _is_estimator(model):
        return None
    params = model.get("params") or {}
    attrs = model.get("attrs") or {}
    children, nested = [], set()
    for name, value in params.items():
        if name in _NAMED_LISTS and any(_is_estimator(i) or isinstance(i, str) for t in _items(value)
                                        for i in _items(t)[1:2]):
            nested.add(name)
            fitted = attrs.get(_FITTED_LISTS.get(name, ""))
            for entry in _items(fitted if fitted is not None else value):
                parts = _items(entry)
                if len(parts) < 2:
                    continue
                child = model_tree(parts[1]) or {"class": untag(parts[1]), "params": {}, "children": []}
                child = {"name": untag(parts[0]), **child}
                if len(parts) > 2:
                    child["columns"] = untag(parts[2])
                children.append(child)
        elif _is_estimator(value):
            nested.add(name)
            children.append({"name": name, **model_tree(value)})
    return {"class": _short(model.get("class")), "key": model.get("class"),
            "params": _non_default(model, nested), "children": children}


def input_columns(model: Any) -> list[dict[str, Any]]:
    """The input columns (``feature_names_in_`` of the model or its first step), typed as its fitted state shows."""
    first = model
    while _is_estimator(first) and "feature_names_in_" not in (first.get("attrs") or {}):
        steps = _items((first.get("params") or {}).get("steps"))
        first = _items(steps[0])[1] if steps and len(_items(steps[0])) > 1 else None
    if not _is_estimator(first):
        return []
    names = untag(first["attrs"]["feature_names_in_"])
    types = _column_types(first, names) if isinstance(names, list) else {}
    return [{"name": n, "type": types.get(n, "unknown")} for n in names] if isinstance(names, list) else []


def _column_types(model: Mapping[str, Any], names: list) -> dict[str, str]:
    """Column -> "string" or "number", from the fitted transformer each column reaches first."""
    attrs = model.get("attrs") or {}
    out: dict[str, str] = {}
    for entry in _items(attrs.get("transformers_")):
        parts = _items(entry)
        if len(parts) < 3:
            continue
        columns = untag(parts[2])
        columns = [names[c] if isinstance(c, int) and 0 <= c < len(names) else c
                   for c in (columns if isinstance(columns, list) else [columns])]
        kind = _first_kind(parts[1])
        if kind is None:
            continue
        for i, column in enumerate(columns):
            out[str(column)] = kind(i) if callable(kind) else kind
    return out


def _first_kind(node: Any) -> Any:
    """What the first fitted estimator of a branch shows of its columns: a type, a per-column function, or None."""
    while _is_estimator(node) and _short(node.get("class")) == "Pipeline":
        steps = _items((node.get("params") or {}).get("steps"))
        node = _items(steps[0])[1] if steps and len(_items(steps[0])) > 1 else None
    if not _is_estimator(node):
        return None
    attrs = node.get("attrs") or {}
    categories = attrs.get("categories_")
    if isinstance(categories, list):
        kinds = [_values_kind(c) for c in categories]
        return lambda i: kinds[i] if i < len(kinds) else "unknown"
    if any(isinstance(attrs.get(name), Mapping) and attrs[name].get("__t__") == "tensor" for name in _NUMERIC_STATS):
        return "number"
    return None


def _values_kind(node: Any) -> str:
    if isinstance(node, Mapping) and node.get("__t__") == "tensor":
        return "number"
    values = untag(node)
    if isinstance(values, list) and values and all(isinstance(v, str) or v is None for v in values):
        return "string"
    return "unknown"


def _repr(value: Any, width: int = 60) -> str:
    """A value as scikit-learn's repr prints a hyperparameter, cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _line(node: Mapping[str, Any]) -> str:
    params = ", ".join(f"{k}={_repr(v)}" for k, v in node["params"].items())
    name = f"{node['name']}: " if "name" in node else ""
    return f"{name}{node['class']}({params})"


def branches(tree: Mapping[str, Any]) -> tuple[str, str, list]:
    """The tree as plain-text branches for :func:`aprender.cli._render.tree`: label, columns, children."""
    columns = f"← {_repr(tree['columns'], 80)}" if "columns" in tree else ""
    return _line(tree), columns, [branches(child) for child in tree["children"]]


def inputs_line(columns: list[dict[str, Any]]) -> str:
    """The input columns in one line: ``Input 3 columns: age (number), ...``."""
    if not columns:
        return ""
    return f"Input {len(columns)} columns: " + ", ".join(f"{c['name']} ({c['type']})" for c in columns)
