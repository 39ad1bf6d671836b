"""Passwords and key files: never a password on the command line.

A password comes from ``--password-file`` (its first line), ``--password-env`` (an
environment variable) or, when stdin is a terminal, an interactive prompt. Keys are
PEM files (PKCS#8 private keys, SubjectPublicKeyInfo public keys) read and written by
``cryptography``; ``keygen`` writes the private key with mode 0600.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from aprender.cli._options import INPUT, check_output
from aprender.format import ModelInfo
from aprender.format._formats import FORMATS

__all__ = [
    "KEY_TYPES",
    "Secrets",
    "encryption_options",
    "load_private_key",
    "load_public_key",
    "public_hex",
    "read_password",
    "secret_options",
    "write_keypair",
]

#: keygen --type values. cryptography is imported by the commands that handle keys, not by
#: every command that offers a key option (``inspect`` of a plain file needs none).
KEY_TYPES = ("ed25519", "x25519")


def _private_key_class(kind: str) -> type:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return {"ed25519": Ed25519PrivateKey, "x25519": X25519PrivateKey}[kind]


def stdin_is_tty() -> bool:
    """Whether a password may be asked for interactively."""
    return sys.stdin is not None and sys.stdin.isatty()


def read_password(file: Path | None, env: str | None, *, prompt: bool, confirm: bool = False) -> bytes | None:
    """The password from ``file`` or ``env``; else a prompt if allowed and stdin is a terminal; else None."""
    if file is not None and env is not None:
        raise click.UsageError("give either --password-file or --password-env, not both")
    if file is not None:
        lines = file.read_bytes().splitlines()
        if not lines or not lines[0]:
            raise click.BadParameter(f"'{file}' is empty; its first line must hold the password",
                                     param_hint="--password-file")
        return lines[0]
    if env is not None:
        value = os.environ.get(env)
        if not value:
            raise click.BadParameter(f"environment variable {env} is not set or empty", param_hint="--password-env")
        return os.fsencode(value)
    if prompt and stdin_is_tty():
        return click.prompt("Password", hide_input=True, confirmation_prompt=confirm, err=True).encode()
    return None


@dataclass(frozen=True)
class Secrets:
    """How the user offered to open an input: keys for an encrypted one, and ``--allow-large``."""

    password_file: Path | None = None
    password_env: str | None = None
    secret_key_file: Path | None = None
    allow_large: bool = False

    def limits(self, info: ModelInfo) -> dict[str, Any]:
        """``max_decompressed_ratio=None`` for a compressed format when ``--allow-large`` was given ({} otherwise)."""
        return {"max_decompressed_ratio": None} if self.allow_large and FORMATS[info.format].can.compresses else {}

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.password_file, self.password_env, self.secret_key_file))

    def keys_for(self, info: ModelInfo, *, required: bool) -> dict[str, Any]:
        """``password=`` / ``secret_key=`` to open the file ``info`` describes ({} if it is not encrypted).

        When ``required`` and nothing was given, a password is asked for on a
        terminal; otherwise a usage error says which option the file needs.
        """
        if not info.encrypted:
            return {}
        kdf = (info.metadata.get("encryption") or {}).get("kdf")
        if kdf == "x25519-hkdf-sha256":
            if self.secret_key_file is not None:
                return {"secret_key": load_private_key(self.secret_key_file, _private_key_class("x25519"),
                                                       "--secret-key")}
            if required:
                raise click.UsageError(f"'{info.path}' is encrypted for an X25519 recipient; "
                                       "pass --secret-key with the recipient's private key")
            return {}
        password = read_password(self.password_file, self.password_env, prompt=required)
        if password is None and required:
            raise click.UsageError(f"'{info.path}' is encrypted with a password; pass --password-file or "
                                   "--password-env (or run in a terminal to be asked)")
        return {} if password is None else {"password": password}


_PASSWORD_FILE = click.option("--password-file", type=INPUT, help="Read the password from the first line of FILE.")
_PASSWORD_ENV = click.option("--password-env", metavar="VAR", help="Read the password from environment variable VAR.")


def secret_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add --password-file/--password-env/--secret-key (to open an encrypted input) and --allow-large as
    ``secrets=``."""

    @functools.wraps(f)
    def wrapper(*args: Any, password_file: Path | None, password_env: str | None, secret_key: Path | None,
                allow_large: bool, **kwargs: Any) -> Any:
        return f(*args, secrets=Secrets(password_file, password_env, secret_key, allow_large), **kwargs)

    for option in (
        click.option("--allow-large", is_flag=True,
                     help="Expand a compressed .apr however far its index says (by default at most 256x "
                          "its compressed bytes + 32 MiB); only for a file you trust."),
        click.option("--secret-key", type=INPUT, metavar="PRIV",
                     help="X25519 private key (PEM) of a file encrypted for a recipient."),
        _PASSWORD_ENV,
        _PASSWORD_FILE,
    ):
        wrapper = option(wrapper)
    return wrapper


def encryption_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add --password-file/--password-env/--recipient (to encrypt) as ``password=``/``recipient=``.

    With none of them, the password is asked for twice on a terminal.
    """

    @functools.wraps(f)
    def wrapper(*args: Any, password_file: Path | None, password_env: str | None, recipient: Path | None,
                **kwargs: Any) -> Any:
        if recipient is not None:
            if password_file is not None or password_env is not None:
                raise click.UsageError("give either a password option or --recipient, not both")
            from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

            return f(*args, password=None, recipient=load_public_key(recipient, X25519PublicKey, "--recipient"),
                     **kwargs)
        password = read_password(password_file, password_env, prompt=True, confirm=True)
        if password is None:
            raise click.UsageError("no password: pass --password-file, --password-env or --recipient "
                                   "(or run in a terminal to be asked)")
        return f(*args, password=password, recipient=None, **kwargs)

    for option in (
        click.option("--recipient", type=INPUT, metavar="PUB",
                     help="Encrypt for the holder of this X25519 public key (PEM) instead of a password."),
        _PASSWORD_ENV,
        _PASSWORD_FILE,
    ):
        wrapper = option(wrapper)
    return wrapper


# -- key files ---------------------------------------------------------------------------


def _key_file(path: Path, cls: type, hint: str) -> Any:
    from aprender.format.apr._keys import key_from_pem

    try:
        return key_from_pem(path.read_bytes(), cls, f"'{path}'")
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def load_private_key(path: Path, cls: type, hint: str) -> Any:
    """A PEM private key of class ``cls`` (Ed25519PrivateKey or X25519PrivateKey)."""
    return _key_file(path, cls, hint)


def load_public_key(path: Path, cls: type, hint: str) -> Any:
    """A PEM public key of class ``cls``; a private key file of the matching kind gives its public key."""
    return _key_file(path, cls, hint)


def public_hex(key: Any) -> str:
    """The raw 32 bytes of a public key, as hex (how ``inspect`` shows an embedded key)."""
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def _write_new(path: Path, data: bytes, mode: int, force: bool) -> None:
    # O_EXCL unless forced: the file is created with ``mode`` and never follows a planted file.
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    fd = os.open(path, flags, mode)
    with os.fdopen(fd, "wb") as f:
        os.chmod(path, mode)  # an existing (forced) file keeps no looser mode
        f.write(data)


def write_keypair(kind: str, name: Path, force: bool) -> tuple[Path, Path, Any]:
    """Generate a key pair; write NAME (private, 0600) and NAME.pub. Returns both paths and the public key."""
    from cryptography.hazmat.primitives import serialization

    public_path = name.with_name(name.name + ".pub")
    check_output(name, force)
    check_output(public_path, force)
    key = _private_key_class(kind).generate()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    _write_new(name, private_pem, 0o600, force)
    _write_new(public_path, public_pem, 0o644, force)
    return name, public_path, key.public_key()
