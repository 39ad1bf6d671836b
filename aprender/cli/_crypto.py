"""``keygen``, ``sign``, ``verify``, ``encrypt`` and ``decrypt`` of .apr files.

The .apr container and the readers of every format (numpy with them) are imported by
the commands that open a model file: ``keygen`` needs only cryptography.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from rich.markup import escape

from aprender.cli._options import (
    INPUT,
    CommandError,
    check_output,
    debug_option,
    force_option,
    json_option,
    output_option,
    run_check,
)
from aprender.cli._render import emit_json, say, warn
from aprender.cli._secrets import (
    KEY_TYPES,
    Secrets,
    encryption_options,
    load_private_key,
    load_public_key,
    public_hex,
    secret_options,
    write_keypair,
)
from aprender.exceptions import SignatureInvalid
from aprender.format._formats import FORMATS, titles

if TYPE_CHECKING:
    from aprender.cli._files import Loaded
    from aprender.format import ModelInfo

__all__ = ["decrypt", "encrypt", "keygen", "sign", "verify"]


def _compression(info: ModelInfo) -> str | None:
    """The --compress value that reproduces an .apr file's compression."""
    from aprender.format.apr import Compression

    record = info.metadata.get("compression") if FORMATS[info.format].can.compresses else None
    if not isinstance(record, dict):
        return None
    if record.get("algorithm") == "zstd":
        return Compression.ZSTD_MAX.value if record.get("level") == Compression.ZSTD_MAX.level else "zstd"
    return record.get("algorithm")


def _rewrite(loaded: Loaded, output: Path, **apr_keys: Any) -> dict[str, Any]:
    from aprender.cli._files import write

    write(loaded.state, output, "apr", options={"compression": _compression(loaded.info), **apr_keys})
    return {"input": loaded.info.path, "output": str(output), "output_size": output.stat().st_size,
            "compression": _compression(loaded.info)}


def _drop_signature(info: ModelInfo) -> None:
    if info.signed:
        warn(f"the signature of '{info.path}' is not carried over; sign the new file with 'sign'")


@click.command(short_help="Generate an Ed25519 or X25519 key pair.")
@click.option("--type", "kind", type=click.Choice(sorted(KEY_TYPES)), required=True,
              help="ed25519 signs (sign/verify); x25519 receives encrypted files (encrypt --recipient).")
@output_option("Private key file NAME; the public key goes to NAME.pub.")
@force_option
@json_option
@debug_option
def keygen(kind: str, output: Path, force: bool, as_json: bool) -> int:
    """Generate a key pair: OUTPUT (private, PEM, mode 0600) and OUTPUT.pub (public, PEM)."""
    private, public, key = write_keypair(kind, output, force)
    result = {"type": kind, "private_key": str(private), "public_key": str(public), "public_key_hex": public_hex(key)}
    if as_json:
        emit_json(result)
    else:
        say(f"wrote {escape(str(private))} (private, mode 0600) and {escape(str(public))}\n"
                        f"{kind} public key: {result['public_key_hex']}", lines=True)
    return 0


@click.command(short_help="Sign an .apr file with an Ed25519 key.")
@click.argument("file", type=INPUT)
@click.option("--key", type=INPUT, required=True, metavar="PRIV", help="Ed25519 private key (PEM) to sign with.")
@output_option("Signed .apr file to write.")
@secret_options
@force_option
@json_option
@debug_option
def sign(file: Path, key: Path, output: Path, secrets: Secrets, force: bool, as_json: bool) -> int:
    """Write a signed .apr copy of FILE (Ed25519 over every byte; the public key is embedded).

    Compression is kept; an encrypted input stays encrypted for the same password or
    recipient (open it with --password-file, --password-env or --secret-key).
    """
    from aprender.cli._files import output_format, read

    signing_key = load_private_key(key, Ed25519PrivateKey, "--key")
    output_format(output, "apr")
    check_output(output, force)
    loaded = read(file, secrets)
    reseal = {}
    if "password" in loaded.keys:
        reseal["password"] = loaded.keys["password"]
    if "secret_key" in loaded.keys:
        reseal["recipient_public_key"] = loaded.keys["secret_key"].public_key()
    result = _rewrite(loaded, output, signing_key=signing_key, **reseal)
    result["public_key_hex"] = public_hex(signing_key.public_key())
    if as_json:
        emit_json(result)
    else:
        say(f"signed {escape(str(file))} -> {escape(str(output))} (Ed25519 public key "
                        f"{result['public_key_hex']})")
    return 0


@click.command(short_help="Verify the signature of an .apr file.")
@click.argument("file", type=INPUT)
@click.option("--key", type=INPUT, metavar="PUB",
              help="Ed25519 public key (PEM) of the expected signer; without it, the embedded key is used.")
@json_option
@debug_option
def verify(file: Path, key: Path | None, as_json: bool) -> int:
    """Verify the Ed25519 signature of a signed .apr FILE. Exit status 0 when valid, 1 when not.

    Without --key the signature is checked against the public key stored in the file:
    that proves the file is intact, not who signed it.
    """
    verifying_key = load_public_key(key, Ed25519PublicKey, "--key") if key is not None else None
    result: dict[str, Any] = {"file": str(file), "valid": False, "key": "given" if key is not None else "embedded",
                              "public_key_hex": None, "error": None}

    def check() -> None:
        from aprender.format import apr
        from aprender.format._api import file_format

        fmt = file_format(file)
        if not fmt.can.signs:
            raise SignatureInvalid(f"'{file}': {fmt.name} files carry no signature; only {titles('signs')} files are "
                                   "signed")
        # the signature is checked before any header field or metadata is trusted
        result["public_key_hex"] = apr.verify_file(file, verifying_key).hex()

    def show_valid() -> None:
        whose = ("the key given" if key is not None else
                 "the key embedded in the file; this proves it is intact, not who signed it (pass --key for that)")
        say(f"[green]signature valid[/green]: {escape(str(file))} signed by {result['public_key_hex']}"
            f"\nverified against {whose}")

    return run_check(result, check, as_json, show_valid)


@click.command(short_help="Encrypt an .apr file (password or recipient).")
@click.argument("file", type=INPUT)
@output_option("Encrypted .apr file to write.")
@encryption_options
@force_option
@json_option
@debug_option
def encrypt(file: Path, output: Path, password: bytes | None, recipient: Any, force: bool, as_json: bool) -> int:
    """Write an .apr copy of FILE whose data is encrypted (AES-256-GCM).

    The key comes from a password (Argon2id) or is agreed with a recipient's X25519
    public key (--recipient). A password is never taken on the command line: use
    --password-file, --password-env, or type it at the prompt. Metadata and the tensor
    table stay readable by 'inspect'.
    """
    from aprender.cli._files import info_of, output_format, read

    output_format(output, "apr")
    check_output(output, force)
    info = info_of(file)
    if info.encrypted:
        raise CommandError(f"'{file}' is already encrypted; decrypt it first")
    loaded = read(file, Secrets(), info)
    _drop_signature(info)
    result = _rewrite(loaded, output, password=password, recipient_public_key=recipient)
    result["encryption"] = "argon2id" if password is not None else "x25519-hkdf-sha256"  # as inspect names it
    if as_json:
        emit_json(result)
    else:
        whom = "a password (Argon2id)" if password is not None else "an X25519 recipient"
        say(f"encrypted {escape(str(file))} -> {escape(str(output))} for {whom}")
    return 0


@click.command(short_help="Decrypt an .apr file.")
@click.argument("file", type=INPUT)
@output_option("Decrypted .apr file to write.")
@secret_options
@force_option
@json_option
@debug_option
def decrypt(file: Path, output: Path, secrets: Secrets, force: bool, as_json: bool) -> int:
    """Write a decrypted .apr copy of FILE.

    Open it with --password-file, --password-env (or the prompt on a terminal), or
    with --secret-key for a file encrypted for an X25519 recipient. A wrong password
    or key exits with status 1.
    """
    from aprender.cli._files import info_of, output_format, read

    output_format(output, "apr")
    check_output(output, force)
    info = info_of(file)
    if not info.encrypted:
        raise CommandError(f"'{file}' is not encrypted")
    loaded = read(file, secrets, info)
    _drop_signature(info)
    result = _rewrite(loaded, output)
    if as_json:
        emit_json(result)
    else:
        say(f"decrypted {escape(str(file))} -> {escape(str(output))}")
    return 0
