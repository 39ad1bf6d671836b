"""Keys as callers hold them: key objects, 32 raw bytes, PEM text or bytes, or a PEM key file.

``apr keygen`` writes PKCS#8 private keys and SubjectPublicKeyInfo public keys as PEM;
every function that takes a key accepts those files directly, and where a public key is
wanted a private key of the same kind stands for its public half.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

__all__ = ["KIND", "KeyKindError", "coerce_key", "key_from_pem"]

#: How errors name each kind of key.
KIND: dict[type, str] = {Ed25519PrivateKey: "Ed25519 private", X25519PrivateKey: "X25519 private",
        Ed25519PublicKey: "Ed25519 public", X25519PublicKey: "X25519 public"}
_PUBLIC_OF: dict[type, type[Any]] = {Ed25519PublicKey: Ed25519PrivateKey, X25519PublicKey: X25519PrivateKey}
_PEM = b"-----BEGIN "


class KeyKindError(TypeError):
    """A key of another kind than the one wanted (an X25519 key to sign, ...)."""


def _is_private_of(key: Any, cls: type) -> bool:
    """Whether ``key`` is the private key whose public half ``cls`` is (it gives that half)."""
    return isinstance(key, _PUBLIC_OF.get(cls, ()))


def _kind(key: object) -> str:
    return next((name for cls, name in KIND.items() if isinstance(key, cls)), type(key).__name__)


def key_from_pem(data: bytes, cls: type, where: str) -> Any:
    """Parse PEM ``data`` into a key of class ``cls`` (a private key gives its public half).

    Raises ``ValueError`` when ``data`` is no unencrypted PEM key and
    :class:`KeyKindError` when it holds another kind of key.
    """
    try:
        key: Any = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise ValueError(f"{where} is not an unencrypted PEM {KIND[cls].split()[-1]} key ({exc})") from None
        if _is_private_of(key, cls):
            key = key.public_key()
    if not isinstance(key, cls):
        raise KeyKindError(f"{where} holds an {_kind(key)} key; this needs an {KIND[cls]} key")
    return key


def coerce_key(key: Any, cls: type, from_raw: Callable[[bytes], Any], what: str) -> Any:
    """``key`` as a ``cls`` object: accepts the object, 32 raw bytes, PEM text or bytes, or a PEM file path."""
    if isinstance(key, cls):
        return key
    if _is_private_of(key, cls):
        return key.public_key()
    if isinstance(key, str) and key.lstrip().startswith(_PEM.decode()):
        return key_from_pem(key.encode(), cls, what)
    if isinstance(key, str | os.PathLike):
        path = Path(key)
        if not path.is_file():
            raise FileNotFoundError(f"no such key file: '{path}'")
        return key_from_pem(path.read_bytes(), cls, f"{what} file '{path}'")
    if isinstance(key, bytes | bytearray | memoryview):
        data = bytes(key)
        if data.lstrip().startswith(_PEM):
            return key_from_pem(data, cls, what)
        if len(data) != 32:
            raise ValueError(f"a raw {what} must be 32 bytes, got {len(data)}")
        return from_raw(data)
    raise TypeError(f"{what} must be a {cls.__name__}, 32 raw bytes, PEM text or bytes, or the path of a PEM key "
                    f"file (as 'apr keygen' writes), got {type(key).__name__}")
