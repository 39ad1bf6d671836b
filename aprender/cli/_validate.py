"""``validate``: integrity, structure and (optionally) signature of a model file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from rich.markup import escape

from aprender.cli._files import info_of
from aprender.cli._options import INPUT, debug_option, json_option, progress_option, run_check, trust_option
from aprender.cli._progress import phases
from aprender.cli._render import say
from aprender.cli._secrets import Secrets, load_public_key, secret_options
from aprender.format import ModelInfo
from aprender.format import validate as validate_any
from aprender.format._formats import FORMATS

__all__ = ["check_file", "validate"]


def check_file(path: Path, info: ModelInfo, secrets: Secrets, key: Any = None, trusted: Any = None) -> list[str]:
    """Run every check the format allows (:func:`aprender.validate`); return their names or raise."""
    keys = secrets.keys_for(info, required=False) if FORMATS[info.format].can.encrypts else {}
    report = validate_any(path, verifying_key=key, trusted=trusted, **keys, **secrets.limits(info))
    return [*report.checks, *([report.not_checked] if report.not_checked else [])]


@click.command(short_help="Check checksums, structure and signature.")
@click.argument("file", type=INPUT)
@click.option("--key", type=INPUT, metavar="PUB",
              help="Require a valid signature by this Ed25519 public key (PEM).")
@trust_option
@secret_options
@progress_option
@json_option
@debug_option
def validate(file: Path, key: Path | None, trusted: list[Any] | None, secrets: Secrets, progress: bool | None,
             as_json: bool) -> int:
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
            result["checks"] = check_file(file, info, secrets, verifying_key, trusted)

    def show_valid() -> None:
        say(f"[green]valid[/green]: {escape(str(file))} ({result['format']})")
        for name in result["checks"]:
            say(f"  - {escape(name)}")

    return run_check(result, check, as_json, show_valid)
