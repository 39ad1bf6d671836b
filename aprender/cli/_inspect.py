"""``inspect``: what a model file holds, from its header, metadata and tensor table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aprender.cli._boosters import booster_summaries
from aprender.cli._files import ITEMSIZES, Loaded, info_of, plain, read
from aprender.cli._foreign import block_bits
from aprender.cli._options import INPUT, debug_option, json_option
from aprender.cli._render import console, echo, emit_json, kv_table, number, short, size, table, tree
from aprender.cli._secrets import Secrets, secret_options
from aprender.cli._table import TableCommand
from aprender.cli._tree import branches, input_columns, inputs_line, model_tree, untag
from aprender.format import ModelInfo
from aprender.format._formats import FORMATS

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console

__all__ = ["inspect", "inspect_report"]

#: Codec and container keys shown in their own sections rather than as metadata.
_STRUCTURE = frozenset({"schema", "model_type", "model", "versions", "quantization", "compression", "encryption",
                        "class", "params"})


def _model_node(info: ModelInfo) -> dict[str, Any] | None:
    """The file's estimator node; an export (ONNX) records only the root's class and hyperparameters."""
    meta = info.metadata
    if not FORMATS[info.format].can.loads:
        params = meta.get("params")
        if not isinstance(params, dict) or not isinstance(meta.get("class"), str):
            return None
        return {"__t__": "estimator", "class": meta["class"], "params": params, "attrs": {}}
    model = meta.get("model")
    return model if isinstance(model, dict) and model.get("__t__") == "estimator" else None


def _hyperparameters(info: ModelInfo) -> dict[str, Any]:
    model = _model_node(info)
    params = model.get("params") if model is not None else None
    return {k: untag(v) for k, v in params.items()} if isinstance(params, dict) else {}


def _user_metadata(info: ModelInfo) -> dict[str, Any]:
    if FORMATS[info.format].can.raw_tensors and not info.metadata:  # tensors another tool wrote
        return dict(info.extra.get("other_metadata") or {})
    if info.extra.get("foreign"):
        return dict(info.metadata)
    meta = {k: v for k, v in info.metadata.items() if k not in _STRUCTURE}
    if not meta.get("user"):
        meta.pop("user", None)
    return meta


def _leaves(prefix: str, value: Any) -> list[tuple[str, Any]]:
    """``(dotted.path, leaf)`` of a JSON record; lists of numbers or strings stay one leaf."""
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(f"{prefix}{k}.", v)]
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(f"{prefix}{i}.", v)]
    return [(prefix[:-1], value)]


def _original_dtypes(info: ModelInfo) -> dict[str, Any]:
    """Per quantized tensor, its dtype before quantization (the file's record; foreign files have none)."""
    record = info.metadata.get("quantization") if FORMATS[info.format].can.quantizes else None
    originals = record.get("tensors") if isinstance(record, dict) else None
    if not isinstance(originals, dict):
        return {}
    return {name: o.get("dtype") for name, o in originals.items() if isinstance(o, dict)}


def _quantization(info: ModelInfo) -> dict[str, Any]:
    originals = _original_dtypes(info)
    rows = []
    for t in info.tensors:
        if not t.quantization:
            continue
        dtype = originals.get(t.name)
        nbytes = math.prod(t.shape) * ITEMSIZES[dtype] if dtype in ITEMSIZES else None
        rows.append({"name": t.name, "type": t.quantization, "shape": list(t.shape), "original_dtype": dtype,
                     "nbytes": t.nbytes, "original_nbytes": nbytes,
                     "ratio": nbytes / t.nbytes if nbytes and t.nbytes else None})
    kinds = sorted({r["type"] for r in rows})
    return {
        "type": info.quantization or (kinds[0] if len(kinds) == 1 else None),
        "types": kinds,
        "block_size": 32 if rows else None,
        "bits_per_weight": {k: block_bits(k) for k in kinds},
        "tensors": rows,
        "nbytes": sum(r["nbytes"] for r in rows),
        "original_nbytes": sum(r["original_nbytes"] or 0 for r in rows),
    }


def _stats(array: np.ndarray) -> dict[str, Any]:
    import numpy as np

    values = np.asarray(array, dtype=np.float64).ravel()
    nan = np.isnan(values)
    n_nan = int(nan.sum())
    values = values[~nan] if n_nan else values
    if values.size == 0:
        return {"min": None, "max": None, "mean": None, "nan": n_nan}
    with np.errstate(invalid="ignore", over="ignore"):
        return {"min": float(values.min()), "max": float(values.max()), "mean": float(values.mean()),
                "nan": n_nan}


def _tensor_data(path: Path, info: ModelInfo, secrets: Secrets) -> tuple[dict[str, np.ndarray], str | None]:
    """The file's tensors (dequantized), or none and why."""
    fmt = FORMATS[info.format]
    if not fmt.can.loads:  # an export: its tensors (ONNX's initializers) where the backend reads them
        reader = getattr(fmt.backend, "load_tensors", None)  # the optional verb of formats that hold tensors
        if reader is None:
            return {}, f"a {fmt.title} file holds no tensors aprender reads"
        return dict(reader(path)), None
    if info.encrypted and not secrets.keys_for(info, required=False):
        return {}, ("the data is encrypted: statistics need --password-file, --password-env or --secret-key "
                    "(the table above needs no key)")
    loaded: Loaded = read(path, secrets, info)
    return dict(plain(loaded.state).tensors), None


def inspect_report(path: Path, info: ModelInfo, *, stats: dict[str, Any] | None = None,
                   quantization: bool = False, notes: tuple[str, ...] = (),
                   arrays: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Everything ``inspect`` prints, as one JSON-able dict (the ``--json`` output).

    ``arrays``, the tensor data when it was read, completes the booster summaries (tree depths).
    """
    tensors = []
    for t in info.tensors:
        row = {"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "nbytes": t.nbytes, "offset": t.offset,
               "quantization": t.quantization}
        if stats is not None:
            row["stats"] = stats.get(t.name)
        tensors.append(row)
    report = {
        "file": str(path),
        "format": info.format,
        "format_version": info.format_version,
        "file_size": info.file_size,
        "class": info.class_key,
        "model_type": None if info.model_type is None else {"name": info.model_type.name,
                                                             "code": int(info.model_type)},
        "versions": info.metadata.get("versions") or {},
        "hyperparameters": _hyperparameters(info),
        "model": model_tree(_model_node(info)),
        "inputs": input_columns(_model_node(info)),
        "boosters": booster_summaries(_model_node(info), {t.name: t.shape for t in info.tensors}, arrays),
        "metadata": _user_metadata(info),
        "flags": {"compressed": info.compressed, "encrypted": info.encrypted, "signed": info.signed,
                  "quantization": info.quantization},
        "encryption": (info.metadata.get("encryption") or {}).get("kdf") if info.encrypted else None,
        "embedded_public_key": info.embedded_public_key,
        "created_at": info.created_at,
        "n_tensors": len(info.tensors),
        "n_parameters": info.n_parameters,
        "tensors": tensors,
        "extra": info.extra,
        "notes": list(notes),
    }
    if quantization:
        report["quantization"] = _quantization(info)
    return report


def _flag(value: Any, yes: str = "yes") -> str:
    return yes if value else "no"


def _summary_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The file's table: format, model, versions, flags and sizes."""
    model_type = report["model_type"]
    flags = report["flags"]
    key = report["embedded_public_key"]
    rows = [
        ("Format", f"{report['format']} {report['format_version'] or ''}".strip()),
        ("File size", size(report["file_size"], exact=True)),
        ("Model", report["class"] or "-"),
        ("Type", f"{model_type['name']} (0x{model_type['code']:04X})" if model_type else "-"),
        ("Versions", ", ".join(f"{k} {v}" for k, v in sorted(report["versions"].items())) or "-"),
        ("Compressed", flags["compressed"] or "no"),
        ("Encrypted", _flag(flags["encrypted"], f"yes ({report['encryption']})")),
        ("Signed", _flag(flags["signed"], f"yes (embedded key {key.hex() if key else '?'})")),
        ("Quantization", flags["quantization"] or "none"),
        ("Parameters", f"{report['n_parameters']:,} in {report['n_tensors']} tensors"),
    ]
    if report["created_at"]:
        rows.append(("Created", report["created_at"]))
    return rows


def _render_model(out: Console, report: dict[str, Any]) -> None:
    """The model's tree (or, without one, its hyperparameters) and each booster's summary."""
    if report["model"]:
        out.print(tree("Model", branches(report["model"]), inputs_line(report["inputs"])))
    elif report["hyperparameters"]:
        out.print(kv_table("Hyperparameters", [(k, short(v)) for k, v in sorted(report["hyperparameters"].items())]))
    for booster in report["boosters"]:
        out.print(kv_table(f"Booster {booster['path'] or ''}".strip(), _booster_rows(booster)))


def _metadata_rows(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """Records such as user / source / license read better one field per row; provenance has its own table."""
    rows = []
    for key, value in sorted(metadata.items()):
        items = sorted(value.items()) if isinstance(value, dict) and value else [(None, value)]
        rows += [(key if sub is None else f"{key}.{sub}", short(v)) for sub, v in items
                 if not (key == "user" and sub == "provenance" and isinstance(v, dict))]
    return rows


def _render_metadata(out: Console, metadata: dict[str, Any]) -> None:
    if metadata:
        out.print(kv_table("Metadata", _metadata_rows(metadata)))
    provenance = metadata.get("user", {}).get("provenance") if isinstance(metadata.get("user"), dict) else None
    if isinstance(provenance, dict):  # aprender.distill's record: one leaf per row, hashes in full
        out.print(kv_table("Provenance", [(k, short(v, width=80)) for k, v in _leaves("", provenance)]))


def _tensor_row(t: dict[str, Any], with_stats: bool) -> list[str]:
    row = [t["name"], t["dtype"], "x".join(map(str, t["shape"])) or "scalar", f"{t['nbytes']:,}"]
    if with_stats:
        s = t.get("stats") or {}
        row += [number(s.get("min")), number(s.get("max")), number(s.get("mean")), number(s.get("nan"))]
    return row


def _render_tensors(out: Console, tensors: list[dict[str, Any]]) -> None:
    columns = ["Tensor", "DType", "Shape", "Bytes"]
    with_stats = any("stats" in t for t in tensors)
    if with_stats:
        columns += ["Min", "Max", "Mean", "NaN"]
    rows = [_tensor_row(t, with_stats) for t in tensors]
    out.print(table("Tensors", columns, rows, right=("Bytes", "Min", "Max", "Mean", "NaN")))


def _render(report: dict[str, Any]) -> None:
    out = console()
    out.print(kv_table(report["file"], _summary_rows(report)))
    _render_model(out, report)
    _render_metadata(out, report["metadata"])
    _render_tensors(out, report["tensors"])
    if "quantization" in report:
        _render_quantization(report["quantization"])
    for note in report["notes"]:
        echo(f"note: {note}")


#: Summary field -> its row label; a field the file does not tell is left out.
_BOOSTER_ROWS = {"library": "Library", "library_version": "Library version", "format_version": "Model format",
                 "estimator": "Estimator",
                 "objective": "Objective", "n_trees": "Trees", "n_iterations": "Iterations",
                 "trees_per_iteration": "Trees per iteration", "best_iteration": "Best iteration",
                 "n_features": "Features", "n_classes": "Classes", "n_nodes": "Nodes", "n_leaves": "Leaves",
                 "max_depth": "Max depth"}


def _booster_rows(booster: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [(label, short(booster[key])) for key, label in _BOOSTER_ROWS.items() if booster.get(key) is not None]
    if booster.get("classes") is not None:
        rows.append(("Class labels", short(booster["classes"])))
    if booster.get("max_depth") is None:
        rows.append(("Max depth", "needs the tensor data (--tensors)"))
    return rows


def _render_quantization(q: dict[str, Any]) -> None:
    out = console()
    if not q["tensors"]:
        out.print("Quantization: none (every tensor is stored at full precision)")
        return
    bits = ", ".join(f"{k} {v:g} bits/weight" for k, v in q["bits_per_weight"].items() if v)
    rows = [[r["name"], r["type"], "x".join(map(str, r["shape"])), r["original_dtype"] or "-",
             f"{r['original_nbytes']:,}" if r["original_nbytes"] else "-", f"{r['nbytes']:,}",
             f"{r['ratio']:.2f}x" if r["ratio"] else "-"] for r in q["tensors"]]
    out.print(table(f"Quantization: {', '.join(q['types'])} (blocks of {q['block_size']}; {bits})",
                    ["Tensor", "Type", "Shape", "Original dtype", "Original bytes", "Stored bytes", "Ratio"], rows,
                    right=("Original bytes", "Stored bytes", "Ratio")))


@click.command(cls=TableCommand, short_help="Show a file's model, metadata, flags and tensors.")
@click.argument("file", type=INPUT)
@click.option("--tensors", "with_stats", is_flag=True,
              help="Add per-tensor statistics (min, max, mean, NaN count); reads the tensor data.")
@click.option("--quantization", "with_quantization", is_flag=True,
              help="Show the quantization details: block type, bits per weight, bytes per tensor.")
@secret_options
@json_option
@debug_option
def inspect(file: Path, with_stats: bool, with_quantization: bool, secrets: Secrets, as_json: bool) -> int:
    """Show what FILE holds: format, model, versions, hyperparameters, metadata, flags and tensors.

    Works on {suffixes} files, including SafeTensors and GGUF
    files other tools wrote. Only the header, metadata and tensor table are
    read: no key is needed and the model is never built. --tensors reads the data
    (an encrypted .apr then needs its password or key).
    """
    info = info_of(file)
    arrays, note = _tensor_data(file, info, secrets) if with_stats else (None, None)
    stats = None if arrays is None else {name: _stats(a) for name, a in arrays.items()}
    report = inspect_report(file, info, stats=stats, quantization=with_quantization,
                            notes=(note,) if note else (), arrays=arrays)
    if as_json:
        emit_json(report)
    else:
        _render(report)
    return 0
