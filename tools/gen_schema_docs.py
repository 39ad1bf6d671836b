"""Generate docs/schema/reference/: every allow-listed estimator's stored state, from the registry.

For each class the codec's registry allows (aprender's own estimators, the scikit-learn
classes with a schema, and every other scikit-learn estimator, stored with the generic
encoding), an example is fitted (scikit-learn's own test instance from
tests/support/sklearn_instances.py, or aprender's zoo case from tests/support/zoo.py), encoded with
:func:`aprender.codec.to_state`, and described: every tensor with its dtype, example
shape and memory order; every other stored attribute with the node it is stored as;
the hyperparameters; and the dtype and shape of each inference method's output.

The pages cannot drift from the code: ``tests/test_schema_docs.py`` runs this script
with ``--check``, which fails when a page differs from what it would write.

Usage::

    python tools/gen_schema_docs.py            # rewrite docs/schema/reference/
    python tools/gen_schema_docs.py --check    # exit 1 if a page is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "schema" / "reference"
sys.path.insert(0, str(REPO / "tests" / "support"))

#: SafeTensors dtype names, as the format pages use them.
DTYPES = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32", "int16": "I16",
          "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8", "bool": "BOOL"}

#: What a tagged metadata node holds, for the "stored as" column.
TAGS = {
    "scalar": "numpy scalar",
    "float": "non-finite float (`nan`, `inf`, `-inf`)",
    "tuple": "tuple",
    "dict": "dict (key/value pairs)",
    "strarray": "array of strings",
    "objarray": "object array",
    "type": "numpy dtype or Python type, by name",
    "n_threads": "not stored: rebuilt as the loading machine's thread count",
    "estimator": "nested estimator",
}


@dataclass
class Section:
    """What one fitted example stores."""

    title: str
    keys: list[str]
    spec: Any
    example: str
    attrs: list[tuple[str, str]] = field(default_factory=list)  # (path, stored as)
    tensors: list[tuple[str, str, str, str, str]] = field(default_factory=list)  # name, attr, dtype, shape, order
    params: list[str] = field(default_factory=list)
    outputs: list[tuple[str, str, str]] = field(default_factory=list)  # method, dtype, shape


def _kind(node: Any) -> str:
    if isinstance(node, dict) and "__t__" in node:
        tag = node["__t__"]
        text = TAGS.get(tag, f"`{tag}` node")
        if tag == "scalar":
            text += f" ({node['dtype']})"
        if tag == "estimator":
            text += f" `{node['class']}`"
        return text
    if isinstance(node, bool):
        return "JSON boolean"
    if isinstance(node, int):
        return "JSON integer"
    if isinstance(node, float):
        return "JSON number"
    if isinstance(node, str):
        return "JSON string"
    if node is None:
        return "JSON null"
    if isinstance(node, list):
        return "JSON array (list)"
    return "JSON object"


def _collapse(path: str) -> str:
    """``estimators_.17.tree_`` -> ``estimators_.*.tree_``: one row per repeated structure."""
    return re.sub(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.|$)", "*", path)


def _walk(node: Any, path: str, section: Section, state: Any, seen: set[str]) -> None:
    """Record every tensor reference and every attribute under ``node``."""
    if isinstance(node, dict) and node.get("__t__") == "tensor":
        name = node["name"]
        array = state.tensors.get(name)
        key = _collapse(name)
        if array is not None and key not in seen:
            seen.add(key)
            dtype = DTYPES.get(array.dtype.name, array.dtype.str)
            shape = "[" + ", ".join(map(str, array.shape)) + "]"
            section.tensors.append((key, _collapse(path), dtype, shape, node.get("order") or "C"))
        return
    if isinstance(node, dict):
        children = node.items() if "__t__" not in node else (
            (k, v) for k, v in node.items() if k not in ("__t__", "class"))
        if node.get("__t__") == "estimator":
            for name in node["params"]:
                _walk(node["params"][name], f"{path}.{name}" if path else name, section, state, seen)
            for name, value in node["attrs"].items():
                attr = f"{path}.{name}" if path else name
                row = (_collapse(attr), _kind(value))
                if row not in section.attrs and not (isinstance(value, dict) and value.get("__t__") == "tensor"):
                    section.attrs.append(row)
                _walk(value, attr, section, state, seen)
            return
        for name, value in children:
            _walk(value, f"{path}.{name}" if path else str(name), section, state, seen)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, f"{path}.{i}" if path else str(i), section, state, seen)


def _shape_of(value: Any, n_rows: int) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return "list" if isinstance(value, list) else type(value).__name__
    return "[" + ", ".join("n_samples" if d == n_rows else str(d) for d in shape) + "]"


def _outputs(est: Any, rows: Any) -> list[tuple[str, str, str]]:
    import scipy.sparse as sp
    from sklearn_instances import outputs

    n_rows = len(rows) if hasattr(rows, "__len__") else -1
    found = []
    for method, value in outputs(est, rows).items():
        if isinstance(value, type):
            found.append((method, f"raises `{value.__name__}` on the example", ""))
            continue
        if isinstance(value, tuple):
            found.append((method, "tuple", ", ".join(_shape_of(v, n_rows) for v in value)))
            continue
        kind = "sparse " if sp.issparse(value) else ""
        dtype = getattr(value, "dtype", None)
        name = DTYPES.get(dtype.name, dtype.name) if dtype is not None and dtype.kind != "U" else (
            "string" if dtype is not None else type(value).__name__)
        found.append((method, kind + name, _shape_of(value, n_rows)))
    return found


def _rows(rows: Any) -> str:
    shape = getattr(rows, "shape", None)
    if shape is not None and len(shape) == 2:
        return f", inference on {shape[0]} rows of {shape[1]} features"
    return f", inference on {len(rows)} samples" if hasattr(rows, "__len__") else ""


def _examples() -> dict[type, tuple[str, Any, Any]]:
    """A fitted example per class: (description, estimator, rows)."""
    import sklearn_instances as si
    from zoo import CASES

    found: dict[type, tuple[str, Any, Any]] = {}
    for key in sorted(si.instances(), key=lambda k: (k.split("-")[0], len(k), k)):
        cls = type(si.instances()[key])
        if cls not in found:
            est, rows = si.fitted(key)
            found[cls] = (f"scikit-learn's test instance `{key}`{_rows(rows)}", est, rows)
    for case in CASES:
        est, rows = case.make()
        if type(est) not in found:
            found[type(est)] = (f"tests/support/zoo.py case `{case.id}`{_rows(rows)}", est, rows)
    try:  # the optional libraries' estimators, when their extra is installed
        import catboost_models

        boosters = catboost_models.fitted()
    except ImportError:
        boosters = {}
    for case, est in boosters.items():
        found.setdefault(type(est), (f"tests/support/catboost_models.py case `{case}`{_rows(catboost_models.X)}",
                                     est, catboost_models.X))
    imputer, rows = _iterative_imputer()  # experimental: neither the instance generator nor the zoo builds one
    found.setdefault(type(imputer), (f"`IterativeImputer(random_state=0, max_iter=2)`{_rows(rows)}", imputer, rows))
    return found


def _iterative_imputer() -> tuple[Any, Any]:
    import numpy as np
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer

    rng = np.random.RandomState(0)
    X = rng.rand(20, 3)
    X[rng.rand(20, 3) < 0.2] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return IterativeImputer(random_state=0, max_iter=2).fit(X), X


def sections() -> tuple[dict[str, list[Section]], dict[str, str]]:
    """Module name -> sections for every allow-listed class with a fitted example; refused keys."""
    from aprender.codec import to_state
    from aprender.codec._optional import LIBRARIES
    from aprender.codec._registry import allow_list
    from aprender.codec.schemas._generic import GENERIC
    from aprender.exceptions import UnsupportedTypeError

    examples = _examples()
    pages: dict[str, list[Section]] = defaultdict(list)
    refused: dict[str, str] = {}
    done: set[str] = set()
    entries = sorted(allow_list(generic=True), key=lambda e: (not e.key.startswith("sklearn."), e.key))
    for entry in entries:
        if entry.key in done:
            continue
        # A generated namesake names its parent as a twin, not the other way round.
        family = [entry.cls, *entry.twins, *(e.cls for e in entries if entry.cls in e.twins)]
        keys = sorted({e.key for e in entries if e.cls in family})
        done.update(keys)
        example = next((examples[c] for c in family if c in examples), None)
        if example is None:
            continue
        description, est, rows = example
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                state = to_state(est)
        except UnsupportedTypeError as exc:
            refused["`, `".join(keys)] = str(exc)
            continue
        spec = None if entry.spec is GENERIC else entry.spec
        section = Section(entry.cls.__name__, keys, spec, description)
        model = state.meta["model"]
        section.params = sorted(model["params"])
        _walk(model, "", section, state, set())
        section.outputs = _outputs(est, rows)
        library = entry.key.split(".")[0]
        # An optional library's classes get a page of their own (catboost.md), not one per module.
        pages[library if library in LIBRARIES else entry.key.split(".")[1]].append(section)
    return pages, refused


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def render(module: str, page: list[Section], versions: str) -> str:
    """One module's page."""
    from aprender.codec import ModelType

    lines = [f"# `{module}`: stored state of each estimator", "",
             f"Generated by `tools/gen_schema_docs.py` from {versions}; do not edit by hand.",
             "How to read these tables: [README.md](README.md).", ""]
    for s in sorted(page, key=lambda s: s.title):
        lines += [f"## {s.title}", "", "Keys: " + ", ".join(f"`{k}`" for k in s.keys) + ".  "]
        if s.spec is not None:
            aliases = ", ".join(f"`{a}` → `{t}`" for a, t in sorted(s.spec.aliases.items()))
            lines.append(f"Model type: `0x{int(s.spec.model_type):04X}` ({s.spec.model_type.name}).  ")
            lines.append(f"Stable tensor names: {aliases or 'none'}.  ")
            quantizable = ", ".join(f"`{q}`" for q in s.spec.quantizable) or "nothing"
            lines.append(f"Quantizable attributes: {quantizable}.  ")
        else:
            lines.append("Stored with the generic encoding ([codec.md](../../codec.md)); "
                         f"model type `0x{int(ModelType.CUSTOM):04X}` (CUSTOM).  ")
        lines += [f"Example: {s.example}.", ""]
        if s.tensors:
            lines += _table(("tensor", "attribute", "dtype", "shape (example)", "order"),
                            [(f"`{n}`", f"`{a}`", d, sh, o) for n, a, d, sh, o in s.tensors])
        else:
            lines += ["No tensors.", ""]
        others = [(f"`{a}`", k) for a, k in s.attrs]
        if others:
            lines += _table(("attribute (not a tensor)", "stored as"), others)
        lines += ["Hyperparameters (`params`): " + (", ".join(f"`{p}`" for p in s.params) or "none") + ".", ""]
        if s.outputs:
            lines += _table(("method", "output dtype", "output shape"), s.outputs)
    return "\n".join(lines).rstrip() + "\n"


def index(pages: dict[str, list[Section]], refused: dict[str, str], versions: str) -> str:
    """docs/schema/reference/README.md: how to read the pages, and where each class is."""
    lines = [
        "# Stored state of every estimator (generated)", "",
        f"Generated by `tools/gen_schema_docs.py` from {versions}; do not edit by hand.",
        "`tests/test_schema_docs.py` fails when a page differs from what the script writes.", "",
        "Each section describes what one fitted example stores in the `ModelState` that every",
        "format carries ([codec.md](../../codec.md)):", "",
        "- **Keys**: the class keys a file may name for it (the allow-list); an aprender",
        "  namesake and its scikit-learn parent share one schema.",
        "- **Model type**, stable tensor names and quantizable tensors, for classes with a schema",
        "  of their own (the family pages in [docs/schema/](..) give their prediction rules).",
        "- **Tensors**: name in the file, the attribute it comes from (a dotted path; `*` stands",
        "  for every index of a list), dtype, shape in the example, and memory order. Tensors",
        "  are stored C-contiguous; `F` means the array was Fortran-ordered in memory, is marked",
        "  `\"order\": \"F\"` in its metadata reference, and is restored so on load.",
        "- **Attributes that are not tensors**, and the metadata node each is stored as.",
        "- **Hyperparameters**: the `params` the estimator is rebuilt with (scikit-learn's",
        "  constructor arguments, validated by its `_parameter_constraints` on load).",
        "- **Outputs**: the dtype and shape each inference method returns on the example's rows",
        "  (`n_samples` rows).", "",
        "Shapes are those of the example (scikit-learn's own test instance or a tests/support/zoo.py case,",
        "fitted on a few dozen rows); the dimension names come from the family pages.", "",
        "| module | classes |", "|---|---|",
    ]
    for module in sorted(pages):
        names = ", ".join(sorted(s.title for s in pages[module]))
        lines.append(f"| [{module}]({module}.md) | {names} |")
    lines += ["", "Refused at save time (docs/codec.md says why), with the error their example gives:", ""]
    lines += [f"- `{key}`: {message}" for key, message in sorted(refused.items())]
    return "\n".join(lines) + "\n"


def build() -> dict[str, str]:
    """File name -> text of every page."""
    import sklearn

    import aprender

    np.random.seed(0)
    versions = f"scikit-learn {sklearn.__version__}, aprender {aprender.__version__}"
    pages, refused = sections()
    files = {f"{m}.md": render(m, p, versions) for m, p in pages.items()}
    files["README.md"] = index(pages, refused, versions)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/schema/reference/ is out of date")
    args = parser.parse_args(argv)
    files = build()
    if args.check:
        stale = sorted(n for n, text in files.items() if not (OUT / n).is_file() or (OUT / n).read_text() != text)
        extra = sorted(p.name for p in OUT.glob("*.md") if p.name not in files) if OUT.is_dir() else []
        for name in stale + extra:
            print(f"out of date: docs/schema/reference/{name}", file=sys.stderr)
        return 1 if stale or extra else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.md"):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} pages to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
