"""``validate``: integrity, structure and (optionally) signature of a model file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from rich.markup import escape

from aprender.cli._files import info_of, read
from aprender.cli._options import INPUT, debug_option, json_option, progress_option, run_check
from aprender.cli._progress import phases
from aprender.cli._render import say
from aprender.cli._secrets import Secrets, load_public_key, secret_options
from aprender.exceptions import AprenderError, SignatureInvalid
from aprender.format import ModelInfo, apr, gguf, safetensors

__all__ = ["check_file", "validate"]


def _check_apr(path: Path, info: ModelInfo, secrets: Secrets, key: Any) -> list[str]:
    checks = ["header CRC32, layout, metadata and tensor index", "footer CRC32 over the whole file"]
    keys = secrets.keys_for(info, required=False)
    if info.signed or key is not None:
        checks.append("Ed25519 signature (" + ("key given" if key is not None else "embedded key") + ")")
    opened = not info.encrypted or bool(keys)
    raw = "model" not in info.metadata
    # stops at the ciphertext without a key; rebuilds the model unless the file holds raw tensors
    apr.validate_file(path, verifying_key=key, **keys)
    if info.encrypted:
        checks.append("AES-256-GCM decryption" if opened else
                      "encrypted data not opened (pass --password-file, --password-env or --secret-key)")
    if opened:
        if info.compressed:
            checks.append(f"{info.compressed} decompression")
        checks.append("tensors read (raw tensors, model type Custom)" if raw else
                      "model rebuilt through the allow-list")
    return checks


def _check_onnx(path: Path) -> list[str]:
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except onnx.checker.ValidationError as exc:
        raise AprenderError(f"'{path}': the ONNX checker rejects the model: {str(exc).splitlines()[0]}") from None
    return ["ONNX protobuf parsed", "onnx.checker (full check, shape inference)"]


def check_file(path: Path, info: ModelInfo, secrets: Secrets, key: Any = None) -> list[str]:
    """Run every check the format allows; return their names or raise the first failure."""
    if key is not None and info.format != "apr":
        raise SignatureInvalid(f"'{path}': {info.format} files carry no signature; only .apr files are signed")
    if info.format == "apr":
        return _check_apr(path, info, secrets, key)
    if info.format == "onnx":
        return _check_onnx(path)
    if info.class_key is not None:
        (safetensors if info.format == "safetensors" else gguf).validate_file(path)
        return ["header, metadata and tensor layout", "model rebuilt through the allow-list"]
    if info.format == "gguf" and info.extra.get("foreign"):
        gguf.load_tensors(path)
    else:
        read(path, secrets, info)
    return ["header and tensor layout", "tensors read (no aprender model: raw tensors)"]


@click.command(short_help="Check checksums, structure and signature.")
@click.argument("file", type=INPUT)
@click.option("--key", type=INPUT, metavar="PUB",
              help="Require a valid signature by this Ed25519 public key (PEM).")
@secret_options
@progress_option
@json_option
@debug_option
def validate(file: Path, key: Path | None, secrets: Secrets, progress: bool | None, as_json: bool) -> int:
    """Check FILE completely: checksums, structure, signature, and a rebuild of the model.

    Everything the loader checks is checked; a signed .apr is verified against the key
    it embeds, or against --key. An encrypted .apr is checked up to its ciphertext
    unless a password or key is given. Exit status 0 when valid, 1 when not.
    """
    verifying_key = load_public_key(key, Ed25519PublicKey, "--key") if key is not None else None
    result: dict[str, Any] = {"file": str(file), "format": None, "valid": False, "checks": [], "error": None}

    def check() -> None:
        with phases(2, file.stat().st_size, progress) as start:
            start(f"reading {file.name}")
            info = info_of(file)
            result["format"] = info.format
            start(f"verifying {file.name}")
            result["checks"] = check_file(file, info, secrets, verifying_key)

    def show_valid() -> None:
        say(f"[green]valid[/green]: {escape(str(file))} ({result['format']})")
        for name in result["checks"]:
            say(f"  - {escape(name)}")

    return run_check(result, check, as_json, show_valid)
