"""Signed .apr files: load only what verifies, or verify the signature alone."""

from __future__ import annotations

import os
from typing import Any

from aprender.codec import ModelType
from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO
from aprender.format.apr._load import build, key_set, read
from aprender.format.apr._read import read_file, verify_signature

__all__ = ["load_verified", "verify_file"]

PathLike = str | os.PathLike
Expected = type | ModelType | None


def load_verified(
    path: PathLike,
    verifying_key: Any = None,
    model_type: Expected = None,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
    trusted: Any = None,
) -> Any:
    """Load a signed file, raising :class:`~aprender.exceptions.SignatureInvalid` on any change.

    The signature is checked before anything else is trusted. Without
    ``verifying_key`` the public key embedded in the file is used: that proves the
    file is intact, not who signed it (:func:`inspect_file` reports the embedded
    key as ``ModelInfo.embedded_public_key``). An unsigned file is refused.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.exceptions import SignatureInvalid
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "plain.apr")
    >>> apr.save_file(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> try:
    ...     apr.load_verified(path)
    ... except SignatureInvalid as exc:
    ...     print("refused")
    refused
    """
    state = read(path, key_set(password, secret_key, verifying_key, max_decompressed_ratio), verify=True)
    return build(state, model_type, trusted)


def verify_file(path: PathLike, verifying_key: Any = None) -> bytes:
    """Verify the Ed25519 signature of a signed .apr file, before trusting anything in it.

    The signature covers every byte before the signature block (header, metadata,
    index and data, encrypted or not), so no key to open the data is needed. Nothing
    else is parsed or rebuilt: :func:`validate_file` checks the rest.

    Parameters
    ----------
    path : str or PathLike
        A signed .apr file.
    verifying_key : Ed25519PublicKey or bytes, optional
        The expected signer's public key (object or raw 32 bytes). Without it the
        public key embedded in the file is used, which proves the file is intact,
        not who signed it.

    Returns
    -------
    bytes
        The raw 32-byte public key the signature verified against.

    Raises
    ------
    SignatureInvalid
        If the file is not signed, was modified after signing, or was signed by
        another key than ``verifying_key``.
    FileNotFoundError
        If ``path`` does not exist.

    Examples
    --------
    >>> import tempfile, os
    >>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> key = Ed25519PrivateKey.generate()
    >>> path = os.path.join(tempfile.mkdtemp(), "signed.apr")
    >>> apr.save_signed(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, key)
    >>> apr.verify_file(path, key.public_key()) == apr.inspect_file(path).embedded_public_key
    True
    """
    buffer, _, where = read_file(path)
    return verify_signature(buffer, buffer.shape[0], verifying_key, where)
