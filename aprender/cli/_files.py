"""Any model file in, any format out: everything goes through a ModelState.

Conversions read a file's state with its backend's ``read_state`` and write it with
the target backend's ``write_state``, so a file converts even when its model cannot
be rebuilt here; the estimator is rebuilt only where the target needs one (an
export-only format such as ONNX, a dtype change). Each backend's ``CAPABILITIES``
says what it takes; no format is named here. Files no aprender wrote are read as raw
tensors (``_foreign``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import aprender
from aprender import codec
from aprender._lazy import bfloat16
from aprender.cli._foreign import custom_state, foreign_source, is_raw
from aprender.cli._options import CommandError
from aprender.cli._secrets import Secrets
from aprender.exceptions import UnsupportedExportError
from aprender.format import ModelInfo
from aprender.format._formats import FORMATS, Format, by_suffix, having

if TYPE_CHECKING:
    from aprender.codec import ModelState

__all__ = [
    "DTYPES",
    "ITEMSIZES",
    "Loaded",
    "cast",
    "info_of",
    "is_foreign",
    "output_format",
    "plain",
    "read",
    "rebuild",
    "write",
]

#: --dtype choices -> numpy dtype name (bfloat16 is ml_dtypes', imported by the command that casts to it).
DTYPES = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16"}
#: Bytes per value of each of them.
ITEMSIZES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def output_format(path: Path, requested: str | None) -> str:
    """The format to write ``path`` in: ``--format`` if given, else the suffix; they must agree."""
    named = by_suffix(path)
    implied = None if named is None else named.name
    if requested is None:
        if implied is None:
            raise click.BadParameter(f"cannot tell the format from '{path.name}'; pass --format",
                                     param_hint="--output")
        return implied
    if implied is not None and implied != requested:
        raise click.BadParameter(f"'{path.name}' has the suffix of {implied}, not {requested}",
                                 param_hint="--output")
    return requested


def info_of(path: Path) -> ModelInfo:
    """Header, metadata and tensor table of any model file (no data read, no key needed)."""
    return aprender.inspect(path)


def is_foreign(info: ModelInfo) -> bool:
    """No aprender metadata at all: another tool wrote the file."""
    return bool(info.extra.get("foreign")) or (FORMATS[info.format].can.raw_tensors and not info.metadata)


@dataclass(frozen=True)
class Loaded:
    """A file's state and its description."""

    state: ModelState
    info: ModelInfo
    #: The ``password=`` / ``secret_key=`` that opened an encrypted .apr.
    keys: dict[str, Any] = field(default_factory=dict)


def read(path: Path, secrets: Secrets, info: ModelInfo | None = None) -> Loaded:
    """The ModelState of any model file (quantized tensors stay quantized).

    An encrypted .apr is opened with ``secrets`` (asking for a password on a terminal).
    """
    info = info if info is not None else info_of(path)
    fmt = FORMATS[info.format]
    if not fmt.can.loads:
        readable = ", ".join(f.suffix for f in having("loads"))
        raise CommandError(f"'{path}' is {fmt.title}, which aprender exports but cannot read back into a model; "
                           f"convert from the {readable} file instead")
    keys = secrets.keys_for(info, required=True) if fmt.can.encrypts else {}
    if is_foreign(info):
        state = custom_state(fmt.backend.load_tensors(path), foreign_source(info))
    else:
        state = fmt.backend.read_state(path, **keys, **secrets.limits(info))
    return Loaded(state, info, keys)


def plain(state: ModelState) -> ModelState:
    """The state with GGML blocks dequantized (unchanged if not quantized)."""
    from aprender.format.quantize import dequantize, is_quantized

    return dequantize(state) if is_quantized(state) else state


def rebuild(state: ModelState, trusted: Any = None) -> Any:
    """The estimator a (possibly quantized) model state holds; ``trusted`` as for ``aprender.load``."""
    if is_raw(state):
        raise UnsupportedExportError("the file holds raw tensors (model type Custom), not a model aprender can "
                                     "rebuild")
    return codec.from_state(plain(state), trusted=trusted)


def cast(state: ModelState, dtype: str, trusted: Any = None) -> ModelState:
    """Float tensors stored as ``dtype`` (``"f32"`` ...).

    A model is rebuilt and encoded again, so the codec records each tensor's own
    dtype and loading restores it; raw tensors are simply cast. User metadata and
    .apr records (name, license, ...) are kept.
    """
    import numpy as np

    target = bfloat16() if dtype == "bf16" else np.dtype(DTYPES[dtype])
    if is_raw(state):
        tensors = {k: v.astype(target) if v.dtype.name in ITEMSIZES else v for k, v in state.tensors.items()}
        return codec.ModelState(tensors, state.meta)
    fresh = codec.to_state(rebuild(state, trusted), dtype=None if target == np.float64 else target.name,
                     metadata=state.user_metadata)
    kept = {k: v for k, v in state.meta.items() if k not in fresh.meta and k != "quantization"}
    return codec.ModelState(fresh.tensors, {**fresh.meta, **kept})


def read_sample(path: Path, model: Any) -> Any:
    """The first rows of a CSV or Parquet file, in the model's column order: an ONNX export's sample."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise click.BadParameter(f"'{path}': give the rows as .csv or .parquet", param_hint="--sample")
    try:
        rows = pd.read_csv(path, nrows=20) if suffix == ".csv" else pd.read_parquet(path).head(20)
    except (OSError, ValueError, ImportError) as exc:
        raise click.BadParameter(f"'{path}' cannot be read: {exc}", param_hint="--sample") from None
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        return rows
    missing = [str(c) for c in names if c not in rows.columns]
    if missing:
        raise click.BadParameter(f"'{path}' lacks the model's column(s) {', '.join(missing[:5])}",
                                 param_hint="--sample")
    return rows[list(names)]


def _export(state: ModelState, path: Path, target: Format, dtype: str | None, sample: Path | None, trusted: Any,
            options: Mapping[str, Any]) -> None:
    """Rebuild the model and hand it to an export-only backend's ``save_file``.

    The export's float type (``dtype``), a sample of input rows (``X``) and the user
    metadata go to a backend whose options declare them; one that does not take a
    given ``dtype`` or ``sample`` is an error.
    """
    import numpy as np

    declared = {f.name for f in target.can.option_fields()}
    model = rebuild(state, trusted)
    X = None if sample is None else read_sample(sample, model)
    given = {"X": X, "dtype": {"f64": np.float64, "f32": np.float32}.get(dtype or ""), **options}
    if "metadata" in declared:
        given["metadata"] = state.user_metadata or None
    try:
        target.backend.save_file(model, path, **target.can.write_options(given))
    except (UnsupportedExportError, ValueError) as exc:
        names = getattr(model, "feature_names_in_", None)
        if X is not None or names is None or "X" not in declared:
            raise
        shown = ", ".join(map(str, names[:6])) + (", ..." if len(names) > 6 else "")
        raise UnsupportedExportError(
            f"{str(exc).rstrip('.')}. The model was fitted on a DataFrame (columns {shown}), and its "
            f"{target.title} inputs are typed from a few rows of it: add --sample ROWS.csv (or .parquet)") from exc


def write(state: ModelState, path: Path, fmt: str, *, dtype: str | None = None, sample: Path | None = None,
          trusted: Any = None, options: Mapping[str, Any] | None = None) -> None:
    """Write ``state`` to ``path`` in ``fmt`` (atomically, by the format's backend).

    ``options`` are the target backend's own (the fields of its
    ``CAPABILITIES.options``: compression and keys for .apr, ``--<format>-<option>``
    flags); unset ones (None) are left out, and a set one the backend does not take is
    an error. An export-only target rebuilds the model (``trusted`` as for
    ``aprender.load``); ``dtype`` (``"f32"`` or ``"f64"``) is its float type and
    ``sample`` (a CSV or Parquet file of input rows) types its inputs.
    """
    target = FORMATS[fmt]
    can = target.can
    if not can.loads:
        _export(state, path, target, dtype, sample, trusted, options or {})
        return
    if is_raw(state) and not can.raw_tensors:
        holders = " or ".join(f.suffix for f in having("raw_tensors"))
        raise UnsupportedExportError(f"{target.title} output holds aprender models; raw tensors (model type Custom) "
                                     f"can go to {holders}")
    target.backend.write_state(state if can.quantizes else plain(state), path, **can.write_options(options or {}))
