"""``convert`` (alias ``export``), ``quantize`` and ``import``: one file in, another out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from aprender.cli._files import DTYPES, cast, info_of, is_foreign, output_format, read, write
from aprender.cli._foreign import is_raw
from aprender.cli._options import (
    INPUT,
    CommandError,
    FormatChoice,
    TableOption,
    check_output,
    debug_option,
    force_option,
    json_option,
    output_option,
    progress_option,
    trust_option,
)
from aprender.cli._progress import phases
from aprender.cli._render import console, emit_json, say, size, table, warn
from aprender.cli._secrets import Secrets, secret_options
from aprender.cli._table import OptionsCommand, TableCommand, own_options
from aprender.codec import ModelState
from aprender.format import Compression
from aprender.format._formats import FORMATS, Format, having
from aprender.format.quantize import QTYPES, is_quantized, quantizable_tensors, quantize

__all__ = ["convert", "import_", "quantize_cmd", "transcode"]

_COMPRESSIONS = [c.value for c in Compression]


def _suffixes(capability: str) -> str:
    """``.apr or .gguf``: the suffixes of the formats with ``capability``, for messages."""
    return " or ".join(f.suffix for f in having(capability))


def _fields(fmt: Format) -> set[str]:
    """The names of the options ``fmt``'s backend takes."""
    return {f.name for f in fmt.can.option_fields()}


def _check_compression(compress: str | None, target: Format) -> None:
    if compress is not None and not target.can.compresses:
        raise click.BadParameter(f"compression applies to {_suffixes('compresses')} output only",
                                 param_hint="--compress")


def _quantize(state: ModelState, qtype: str) -> ModelState:
    if is_raw(state):
        raise CommandError("raw tensors (model type Custom) do not say which tensors are weights; only models "
                           "can be quantized")
    if is_quantized(state):
        raise CommandError(f"the model is already quantized ({state.meta['quantization'].get('type')}); "
                           "quantize the original model instead")
    if not quantizable_tensors(state):
        name = state.class_key.rsplit(".", 1)[-1]
        raise CommandError(f"{name} has no tensor that can be quantized (only weights are; thresholds, indices "
                           "and counts never are)")
    return quantize(state, qtype)


def transcode(src: Path, out: Path, fmt: str, secrets: Secrets, *, qtype: str | None = None,
              compress: str | None = None, dtype: str | None = None, progress: bool | None = None,
              foreign_only: bool = False, sample: Path | None = None, trusted: Any = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], ModelState, ModelState]:
    """Read ``src``, cast / quantize on request, write ``out`` as ``fmt``.

    ``options`` are the target backend's own (``--<format>-<option>``). Returns the
    summary printed by the commands, and the states before and after quantization.
    """
    target = FORMATS[fmt].can
    info = info_of(src)
    if foreign_only and not is_foreign(info):
        what = info.class_key or info.format
        raise click.UsageError(f"'{src}' was written by aprender ({what}); use 'convert' to change its format")
    with phases(2 + (dtype is not None) + (qtype is not None), info.file_size, progress) as start:
        start(f"reading {src.name}")
        state = read(src, secrets, info).state
        if dtype is not None and target.loads:  # an export takes --dtype as its own float type
            start(f"casting float tensors to {dtype}")
            state = cast(state, dtype, trusted)
        before = state
        if qtype is not None:
            start(f"quantizing to {qtype}")
            state = _quantize(state, qtype)
        if target.loads and not target.quantizes and is_quantized(state):
            warn(f"{FORMATS[fmt].title} holds no GGML blocks: the {state.meta['quantization']['type']} tensors are "
                 "written dequantized")
        start(f"writing {out.name}")
        write(state, out, fmt, dtype=dtype, sample=sample, trusted=trusted,
              options={"compression": compress, **(options or {})})
    if info.encrypted:
        warn(f"'{out}' is not encrypted (its source was); seal it with 'encrypt'")
    if info.signed:
        warn(f"'{out}' is not signed (its source's signature verified against the key embedded in it); "
             "sign the output with 'sign'")
    summary = {
        "input": str(src),
        "input_format": info.format,
        "input_size": info.file_size,
        "output": str(out),
        "format": fmt,
        "output_size": out.stat().st_size,
        "n_tensors": len(state.tensors),
        "model_type": "CUSTOM" if is_raw(state) else state.model_type.name,
        "quantization": state.meta["quantization"]["type"] if is_quantized(state) else None,
        "dtype": dtype,
        "compression": compress,
    }
    return summary, before, state


def _print_conversion(verb: str, s: dict[str, Any]) -> None:
    say(f"{verb} {escape(s['input'])} ({s['input_format']}, {size(s['input_size'])}) -> "
                    f"{escape(s['output'])} ({s['format']}, {size(s['output_size'])})")


@click.command(cls=OptionsCommand, short_help="Convert to {formats}.")
@click.argument("input_path", metavar="INPUT", type=INPUT)
@click.option("--format", "fmt", type=FormatChoice(), help="Output format (default: from the OUTPUT suffix).")
@output_option("File to write.")
@click.option("--quantize", "qtype", type=click.Choice(QTYPES), cls=TableOption,
              help="GGML block-quantize the weights ({quantizes}).")
@click.option("--compress", type=click.Choice(_COMPRESSIONS), cls=TableOption,
              help="Compress the data section ({compresses} only).")
@click.option("--dtype", type=click.Choice(list(DTYPES)), cls=TableOption,
              help="Store float tensors as this type ({with_dtype}: f32 or f64 export).")
@click.option("--sample", type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="ROWS",
              cls=TableOption, help="{with_X}: a .csv or .parquet file of input rows, which types the inputs of a "
              "DataFrame model.")
@trust_option
@secret_options
@force_option
@progress_option
@json_option
@debug_option
def convert(input_path: Path, fmt: str | None, output: Path, qtype: str | None, compress: str | None,
            dtype: str | None, sample: Path | None, trusted: list[Any] | None, secrets: Secrets, force: bool,
            progress: bool | None, as_json: bool, format_options: dict[str, dict[str, Any]]) -> int:
    """Convert INPUT to another format: {formats}.

    The model's state is carried over as it is, so files convert even when their
    model cannot be rebuilt here; an export ({exports}) and --dtype rebuild the model.
    Quantized tensors stay quantized in {quantizes}, and are dequantized for the others.
    Options named --<format>-<option> are that output format's own.
    """
    fmt = output_format(output, fmt)
    target = FORMATS[fmt]
    own = own_options(format_options, fmt)
    _check_compression(compress, target)
    if qtype is not None and not target.can.quantizes:
        raise click.BadParameter(f"{fmt} cannot hold GGML blocks; quantize to {_suffixes('quantizes')}",
                                 param_hint="--quantize")
    # --dtype and --sample of an export type its inputs and outputs, where the backend takes them
    takes = _fields(target)
    if dtype is not None and not target.can.loads and ("dtype" not in takes or dtype in ("f16", "bf16")):
        raise click.BadParameter(f"{target.title} export takes " + ("f32 or f64" if "dtype" in takes else "no dtype"),
                                 param_hint="--dtype")
    if sample is not None and (target.can.loads or "X" not in takes):
        exporters = [f.title for f in FORMATS.values() if not f.can.loads and "X" in _fields(f)]
        raise click.BadParameter(f"a sample types {' or '.join(exporters)} inputs only", param_hint="--sample")
    check_output(output, force)
    summary, _, _ = transcode(input_path, output, fmt, secrets, qtype=qtype, compress=compress, dtype=dtype,
                              progress=progress, sample=sample, trusted=trusted, options=own)
    if as_json:
        emit_json(summary)
    else:
        _print_conversion("converted", summary)
    return 0


def _quantized_bytes(before: ModelState, after: ModelState) -> tuple[list[str], int, int]:
    names = sorted(after.meta["quantization"]["tensors"])
    return names, sum(before.tensors[n].nbytes for n in names), sum(after.tensors[n].nbytes for n in names)


@click.command("quantize", cls=TableCommand, short_help="Quantize weights to Q8_0, Q4_0 or Q4_1.")
@click.argument("file", type=INPUT)
@click.option("--type", "qtype", type=click.Choice(QTYPES), required=True, help="GGML block format.")
@output_option("Quantized file to write ({quantizes}).")
@click.option("--compress", type=click.Choice(_COMPRESSIONS), cls=TableOption,
              help="Also compress the data section ({compresses} only).")
@secret_options
@force_option
@progress_option
@json_option
@debug_option
def quantize_cmd(file: Path, qtype: str, output: Path, compress: str | None, secrets: Secrets, force: bool,
                 progress: bool | None, as_json: bool) -> int:
    """Block-quantize the weights of FILE (Q8_0, Q4_0 or Q4_1) and print the sizes before and after.

    Only tensors the estimator marks as weights are quantized; tree thresholds,
    indices and counts are kept exactly. The output format follows the OUTPUT suffix.
    """
    fmt = output_format(output, None)
    if not FORMATS[fmt].can.quantizes:
        raise click.BadParameter(f"{fmt} cannot hold GGML blocks; write {_suffixes('quantizes')}",
                                 param_hint="--output")
    _check_compression(compress, FORMATS[fmt])
    check_output(output, force)
    summary, before, after = transcode(file, output, fmt, secrets, qtype=qtype, compress=compress,
                                       progress=progress)
    names, raw_bytes, block_bytes = _quantized_bytes(before, after)
    summary.update({"tensors": names, "tensor_bytes_before": raw_bytes, "tensor_bytes_after": block_bytes})
    if as_json:
        emit_json(summary)
        return 0
    ratio = summary["input_size"] / summary["output_size"]
    rows = [
        ["File", f"{summary['input_size']:,}", f"{summary['output_size']:,}", f"{ratio:.2f}x"],
        [f"Quantized tensors ({len(names)})", f"{raw_bytes:,}", f"{block_bytes:,}", f"{raw_bytes / block_bytes:.2f}x"],
    ]
    say(f"quantized {escape(str(file))} -> {escape(str(output))} ({qtype}: {', '.join(names)})")
    console().print(table(None, ["", "Bytes before", "Bytes after", "Smaller by"], rows,
                          right=("Bytes before", "Bytes after", "Smaller by")))
    return 0


@click.command("import", short_help="Import a foreign .safetensors/.gguf as raw tensors.")
@click.argument("input_path", metavar="INPUT", type=INPUT)
@output_option(".apr file to write.")
@click.option("--dtype", type=click.Choice(list(DTYPES)), help="Store float tensors as this type.")
@click.option("--compress", type=click.Choice(_COMPRESSIONS), help="Compress the data section.")
@force_option
@progress_option
@json_option
@debug_option
def import_(input_path: Path, output: Path, dtype: str | None, compress: str | None, force: bool,
            progress: bool | None, as_json: bool) -> int:
    """Bring a .safetensors or .gguf file another tool wrote into an .apr of raw tensors.

    The .apr has model type Custom: the tensors under their own names and a 'source'
    record (the source format and its metadata). GGUF block-quantized tensors (Q4_K, ...)
    are dequantized to float32. Read them back with aprender.format.apr.read_state().
    """
    fmt = output_format(output, "apr")
    check_output(output, force)
    summary, _, state = transcode(input_path, output, fmt, Secrets(), compress=compress, dtype=dtype,
                                  progress=progress, foreign_only=True)
    dequantized = state.meta["source"].get("dequantized", {})
    summary.update({"n_parameters": sum(a.size for a in state.tensors.values()), "dequantized": dequantized})
    if as_json:
        emit_json(summary)
        return 0
    _print_conversion("imported", summary)
    say(f"{summary['n_tensors']} tensors, {summary['n_parameters']:,} values, model type Custom")
    if dequantized:
        warn(f"{len(dequantized)} GGML block tensors were dequantized to float32")
    return 0
