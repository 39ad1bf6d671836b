"""Signing and encryption of .apr files, all through the ``cryptography`` package.

- Signatures: Ed25519 over every byte before the signature block.
- Password encryption: Argon2id (m=19456 KiB, t=2, p=1, 16-byte salt) derives an
  AES-256 key.
- Recipient encryption: an ephemeral X25519 key agreement with the recipient's public
  key, then HKDF-SHA256 derives the AES-256 key.
- The data section is sealed with AES-256-GCM in 1 MiB segments (the STREAM
  construction of age and Tink): segment ``i`` uses the nonce ``prefix(7) || i (u32
  big-endian) || last (1 byte)``, so segments cannot be reordered, dropped or
  truncated, and files beyond AES-GCM's 2 GiB single-message limit still work. Every
  segment authenticates the header, metadata and index as associated data.

Keys are accepted as ``cryptography`` key objects or as raw 32-byte strings.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from aprender.codec._nodes import preview
from aprender.exceptions import DecryptionFailed, FormatError, KeyRequired, SignatureInvalid
from aprender.format.apr._keys import coerce_key

__all__ = [
    "ARGON2",
    "SEGMENT_SIZE",
    "TAG_SIZE",
    "DEFAULT_KDF_LIMITS",
    "check_params",
    "decrypt",
    "derive_key",
    "encrypt",
    "kdf_limits",
    "new_encryption",
    "plaintext_size",
    "public_key_bytes",
    "sign",
    "verify",
]

#: Argon2id cost written into new files (OWASP's minimum recommendation).
ARGON2 = {"memory_cost": 19456, "iterations": 2, "lanes": 1}
#: Largest Argon2id cost a well-formed file can state (2 GiB, 16 passes, 16 lanes).
_ARGON2_LIMITS = {"memory_cost": 1 << 21, "iterations": 16, "lanes": 16}
#: Largest Argon2id cost a reader spends unless the caller opts in with :func:`kdf_limits`:
#: a little above what aprender writes (64 MiB, 3 passes, 4 lanes against 19 MiB, 2, 1).
DEFAULT_KDF_LIMITS = {"memory_cost": 1 << 16, "iterations": 3, "lanes": 4}
_KDF_LIMITS: ContextVar[Mapping[str, int]] = ContextVar("aprender_kdf_limits", default=DEFAULT_KDF_LIMITS)


@contextlib.contextmanager
def kdf_limits(*, memory_cost: int, iterations: int, lanes: int) -> Iterator[None]:
    """Allow files whose Argon2id costs reach these limits, within the ``with`` block.

    A password-encrypted file states the Argon2id parameters its reader must spend:
    by default a reader refuses more than 64 MiB (``memory_cost`` in KiB), 3 passes
    and 4 lanes, so a crafted file cannot decide how much memory and time a load
    costs. Raise the limits only to open files you trust that were written with
    higher costs; the hard bounds (2 GiB, 16, 16) still apply. The setting is local
    to the current thread or task (a :class:`contextvars.ContextVar`).

    Examples
    --------
    >>> from aprender.format import apr
    >>> with apr.kdf_limits(memory_cost=1 << 18, iterations=4, lanes=4):
    ...     pass  # load files written with up to 256 MiB, 4 passes, 4 lanes here
    """
    for name, value in (("memory_cost", memory_cost), ("iterations", iterations), ("lanes", lanes)):
        if type(value) is not int or not 1 <= value <= _ARGON2_LIMITS[name]:
            raise ValueError(f"{name} must be an int in [1, {_ARGON2_LIMITS[name]}], got {value!r}")
    token = _KDF_LIMITS.set({"memory_cost": memory_cost, "iterations": iterations, "lanes": lanes})
    try:
        yield
    finally:
        _KDF_LIMITS.reset(token)
SALT_SIZE = 16
NONCE_PREFIX_SIZE = 7
TAG_SIZE = 16
SEGMENT_SIZE = 1 << 20
_HKDF_INFO = b"aprender .apr v2 x25519 recipient key"
_RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def public_key_bytes(key: Ed25519PublicKey | X25519PublicKey) -> bytes:
    """The raw 32 bytes of a public key."""
    return key.public_bytes(*_RAW)


# -- signatures ------------------------------------------------------------------------


def sign(message: bytes | memoryview, signing_key: object) -> bytes:
    """The 96-byte signature block: Ed25519 signature, then the raw public key."""
    key = coerce_key(signing_key, Ed25519PrivateKey, Ed25519PrivateKey.from_private_bytes, "signing key (Ed25519)")
    return key.sign(bytes(message)) + public_key_bytes(key.public_key())


def verify(message: bytes | memoryview, block: bytes, verifying_key: object | None, where: str) -> None:
    """Check a signature block; ``None`` verifies against the embedded public key."""
    signature, embedded = block[:64], block[64:96]
    if verifying_key is None:
        try:
            key = Ed25519PublicKey.from_public_bytes(embedded)
        except ValueError as exc:
            raise SignatureInvalid(f"{where}: the embedded public key is invalid: {exc}") from None
    else:
        key = coerce_key(verifying_key, Ed25519PublicKey, Ed25519PublicKey.from_public_bytes, "verifying key (Ed25519)")
    # The embedded key is not under the signature: a file whose key differs from the
    # caller's is refused even when the signature itself verifies.
    same_key = public_key_bytes(key) == embedded
    try:
        key.verify(signature, message)
        valid = True
    except InvalidSignature:
        valid = False
    if not (valid and same_key):
        other = "" if same_key else " (the file embeds a different public key)"
        raise SignatureInvalid(f"{where}: the Ed25519 signature does not verify{other}; "
                               "the file was modified after signing or signed by another key")


# -- key derivation --------------------------------------------------------------------


def _password_bytes(password: object) -> bytes:
    if isinstance(password, str):
        password = password.encode()
    if not isinstance(password, bytes | bytearray) or not password:
        raise TypeError("password must be a non-empty str or bytes")
    return bytes(password)


def new_encryption(password: object = None, recipient_public_key: object = None) -> tuple[dict[str, Any], bytes]:
    """Fresh encryption parameters for the metadata, and the AES-256 key they yield."""
    params: dict[str, Any] = {"cipher": "aes-256-gcm", "segment_size": SEGMENT_SIZE,
                              "nonce_prefix": os.urandom(NONCE_PREFIX_SIZE).hex()}
    if password is not None:
        params.update({"kdf": "argon2id", "salt": os.urandom(SALT_SIZE).hex(), **ARGON2})
        return params, _argon2(_password_bytes(password), params)
    recipient = coerce_key(recipient_public_key, X25519PublicKey, X25519PublicKey.from_public_bytes,
                        "recipient public key (X25519)")
    ephemeral = X25519PrivateKey.generate()
    params.update({"kdf": "x25519-hkdf-sha256", "ephemeral_public_key": public_key_bytes(ephemeral.public_key()).hex()})
    return params, _hkdf(ephemeral.exchange(recipient), public_key_bytes(ephemeral.public_key()),
                         public_key_bytes(recipient))


def _argon2(password: bytes, params: Mapping[str, Any]) -> bytes:
    kdf = Argon2id(salt=bytes.fromhex(params["salt"]), length=32, iterations=params["iterations"],
                   lanes=params["lanes"], memory_cost=params["memory_cost"])
    return kdf.derive(password)


def _hkdf(shared: bytes, ephemeral: bytes, recipient: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=ephemeral + recipient, info=_HKDF_INFO).derive(shared)


def _hex(params: Mapping[str, Any], key: str, size: int, where: str) -> bytes:
    value = params.get(key)
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != size:
        raise FormatError(f"{where}: encryption '{key}' must be {size} bytes of hex")
    return raw


def check_params(params: object, where: str) -> dict[str, Any]:
    """Validate the ``encryption`` metadata read from a file (bounded KDF costs)."""
    if not isinstance(params, dict) or params.get("cipher") != "aes-256-gcm":
        raise FormatError(f"{where}: 'encryption' metadata must name cipher 'aes-256-gcm'")
    segment = params.get("segment_size")
    if type(segment) is not int or not 1 << 12 <= segment <= 1 << 26 or segment & (segment - 1):
        raise FormatError(f"{where}: encryption segment_size must be a power of two from 4 KiB to 64 MiB")
    _hex(params, "nonce_prefix", NONCE_PREFIX_SIZE, where)
    kdf = params.get("kdf")
    if kdf == "argon2id":
        _hex(params, "salt", SALT_SIZE, where)
        for name, limit in _ARGON2_LIMITS.items():
            value = params.get(name)
            if type(value) is not int or not 1 <= value <= limit:
                raise FormatError(f"{where}: Argon2id {name} must be an int in [1, {limit}], found {preview(value)}")
        if params["memory_cost"] < 8 * params["lanes"]:
            raise FormatError(f"{where}: Argon2id memory_cost must be at least 8 KiB per lane")
    elif kdf == "x25519-hkdf-sha256":
        _hex(params, "ephemeral_public_key", 32, where)
    else:
        raise FormatError(f"{where}: unknown key derivation {preview(kdf, 40)}")
    return params


def derive_key(params: Mapping[str, Any], password: object, secret_key: object, where: str) -> bytes:
    """The AES key of a file from the caller's password or X25519 secret key."""
    if params["kdf"] == "argon2id":
        if password is None:
            raise KeyRequired(f"{where}: file is encrypted; pass password= (it was encrypted with a password)")
        limits = _KDF_LIMITS.get()
        for name, limit in limits.items():
            if params[name] > limit:
                raise FormatError(
                    f"{where}: the file asks for Argon2id {name}={params[name]}, above this reader's limit of "
                    f"{limit}; if you trust the file, load it inside aprender.format.apr.kdf_limits(...)")
        return _argon2(_password_bytes(password), params)
    if secret_key is None:
        raise KeyRequired(f"{where}: file is encrypted; pass secret_key= (it was encrypted for an X25519 "
                          "recipient)")
    secret = coerce_key(secret_key, X25519PrivateKey, X25519PrivateKey.from_private_bytes, "secret key (X25519)")
    ephemeral = _hex(params, "ephemeral_public_key", 32, where)
    try:
        shared = secret.exchange(X25519PublicKey.from_public_bytes(ephemeral))
    except ValueError:  # an all-zero shared secret: a hostile ephemeral key
        raise DecryptionFailed(f"{where}: invalid ephemeral public key") from None
    return _hkdf(shared, ephemeral, public_key_bytes(secret.public_key()))


# -- segmented AES-256-GCM -------------------------------------------------------------


def _nonce(prefix: bytes, index: int, last: bool) -> bytes:
    return prefix + index.to_bytes(4, "big") + (b"\x01" if last else b"\x00")


def encrypt(key: bytes, params: Mapping[str, Any], plaintext: bytes | memoryview, aad: bytes) -> list[bytes]:
    """Seal ``plaintext`` segment by segment; returns the ciphertext segments."""
    aes, prefix, size = AESGCM(key), bytes.fromhex(params["nonce_prefix"]), params["segment_size"]
    view = memoryview(plaintext)
    count = max(1, -(-len(view) // size))
    return [aes.encrypt(_nonce(prefix, i, i == count - 1), view[i * size : (i + 1) * size], aad)
            for i in range(count)]


def plaintext_size(params: Mapping[str, Any], stored: int, where: str) -> int:
    """Plaintext length of a ``stored``-byte ciphertext; FormatError if impossible."""
    sealed = params["segment_size"] + TAG_SIZE
    count = max(1, -(-stored // sealed))
    last = stored - (count - 1) * sealed
    if last < TAG_SIZE:
        raise FormatError(f"{where}: the encrypted data section of {stored} bytes is truncated")
    return stored - count * TAG_SIZE


def decrypt(key: bytes, params: Mapping[str, Any], ciphertext: memoryview, aad: bytes, out: memoryview,
            where: str) -> None:
    """Open every segment into ``out`` (of :func:`plaintext_size` bytes)."""
    aes, prefix, size = AESGCM(key), bytes.fromhex(params["nonce_prefix"]), params["segment_size"]
    sealed = size + TAG_SIZE
    count = max(1, -(-len(ciphertext) // sealed))
    for i in range(count):
        try:
            plain = aes.decrypt(_nonce(prefix, i, i == count - 1), ciphertext[i * sealed : (i + 1) * sealed], aad)
        except InvalidTag:
            raise DecryptionFailed(
                f"{where}: decryption failed: wrong password or key, or the header, metadata, index or data "
                "were modified"
            ) from None
        out[i * size : i * size + len(plain)] = plain
