"""Writing .apr files and bytes: from a model, or from a ModelState."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from aprender._warn import deprecated_alias
from aprender.codec import ModelState, ModelType, to_state
from aprender.exceptions import ModelTypeMismatch
from aprender.format._io import write_atomic
from aprender.format.apr._options import Compression, SaveOptions
from aprender.format.apr._write import encode

__all__ = ["dumps", "save_encrypted", "save_file", "save_for_recipient", "save_signed", "state_to_bytes",
           "write_state"]

PathLike = str | os.PathLike


#: The options of a save that names none: frozen, so every such save shares them (building
#: SaveOptions checks that its records are JSON, which a small model's save notices).
_DEFAULT_OPTIONS = SaveOptions()


def _options(options: SaveOptions | None, compression: Compression | str | None, fields: dict[str, Any]) -> SaveOptions:
    options = options if options is not None else _DEFAULT_OPTIONS
    if compression is not None:
        fields["compression"] = compression
    return dataclasses.replace(options, **fields) if fields else options


def _state(model: Any, model_type: ModelType | int | None, quantize: str | None, dtype: str | None,
           metadata: Any, inference_only: bool) -> ModelState:
    state = to_state(model, dtype=dtype, metadata=metadata, inference_only=inference_only)
    if model_type is not None and state.model_type != ModelType(model_type):
        raise ModelTypeMismatch(ModelType(model_type).name, f"{type(model).__name__} ({state.model_type.name})")
    if quantize is not None:
        from aprender.format.quantize import quantize as block_quantize

        state = block_quantize(state, quantize)
    return state


def state_to_bytes(
    state: ModelState,
    options: SaveOptions | None = None,
    *,
    compression: Compression | str | None = None,
    signing_key: Any = None,
    password: str | bytes | None = None,
    recipient_public_key: Any = None,
    **fields: Any,
) -> bytes:
    """Serialize a :class:`~aprender.codec.ModelState` to .apr bytes.

    Parameters are those of :func:`save_file` that concern the container.

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.codec import to_state
    >>> from aprender.format import apr
    >>> apr.state_to_bytes(to_state(StandardScaler().fit([[1.0], [3.0]])))[:4]
    b'APR\\x00'
    """
    chunks = encode(state, _options(options, compression, fields), signing_key=signing_key, password=password,
                    recipient_public_key=recipient_public_key)
    return b"".join(chunks)


def write_state(
    state: ModelState,
    path: PathLike,
    options: SaveOptions | None = None,
    *,
    compression: Compression | str | None = None,
    signing_key: Any = None,
    password: str | bytes | None = None,
    recipient_public_key: Any = None,
    **fields: Any,
) -> None:
    """Write a :class:`~aprender.codec.ModelState` to an .apr file (atomically).

    Tensors are written straight from their arrays: a plain save makes no copy.
    """
    chunks = encode(state, _options(options, compression, fields), signing_key=signing_key, password=password,
                    recipient_public_key=recipient_public_key)
    write_atomic(path, chunks)


def save_file(
    model: Any,
    path: PathLike,
    model_type: ModelType | int | None = None,
    options: SaveOptions | None = None,
    *,
    compression: Compression | str | None = None,
    quantize: str | None = None,
    dtype: str | None = None,
    metadata: Any = None,
    inference_only: bool = False,
    signing_key: Any = None,
    password: str | bytes | None = None,
    recipient_public_key: Any = None,
    **fields: Any,
) -> None:
    """Save a fitted model to an .apr file (atomically).

    Parameters
    ----------
    model : estimator
        A fitted, registered estimator.
    path : str or PathLike
        Destination; an existing file is replaced only once the new one is complete.
    model_type : ModelType, optional
        Assert the model's family: :class:`~aprender.exceptions.ModelTypeMismatch`
        if it is another.
    options : SaveOptions, optional
        Name, description, compression, license and other records.
    compression : Compression or {"none", "zstd", "zstd-max", "lz4"}, optional
        Shortcut for ``options.compression``.
    quantize : {"q8_0", "q4_0", "q4_1"}, optional
        GGML block-quantize the tensors the estimator marks as quantizable.
    dtype : {"float32", "float16", "bfloat16"}, optional
        Downcast float tensors (see :func:`~aprender.codec.to_state`).
    metadata : dict, optional
        JSON-able user metadata kept in the codec's ``meta["user"]``.
    inference_only : bool, default=False
        Leave out what only further training reads (docs/codec.md lists it per
        family); the loaded model predicts identically and refuses ``partial_fit``.
    signing_key : Ed25519PrivateKey or bytes, optional
        Sign the file (see :func:`save_signed`).
    password : str or bytes, optional
        Encrypt for a password (see :func:`save_encrypted`).
    recipient_public_key : X25519PublicKey or bytes, optional
        Encrypt for a recipient (see :func:`save_for_recipient`).
    **fields
        Any :class:`SaveOptions` field (``name=``, ``license=``, ``provenance=`` ...).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import ModelType
    >>> from aprender.format import SaveOptions, apr
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.1], [5.0], [5.1]])
    >>> opts = SaveOptions().with_name("km").with_license("MIT")
    >>> apr.save_file(km, os.path.join(tempfile.mkdtemp(), "km.apr"), ModelType.KMEANS, opts)
    """
    write_state(_state(model, model_type, quantize, dtype, metadata, inference_only), path, options,
                compression=compression,
                signing_key=signing_key, password=password, recipient_public_key=recipient_public_key, **fields)


def dumps(
    model: Any,
    model_type: ModelType | int | None = None,
    options: SaveOptions | None = None,
    *,
    quantize: str | None = None,
    dtype: str | None = None,
    metadata: Any = None,
    inference_only: bool = False,
    **container: Any,
) -> bytes:
    """Serialize a fitted model to .apr bytes; parameters as for :func:`save_file`.

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> data = apr.dumps(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> apr.loads(data).predict([[2.0]])
    array([5.])
    """
    return state_to_bytes(_state(model, model_type, quantize, dtype, metadata, inference_only), options,
                          **container)


#: The older names: ``save`` takes a path in .apr alone among the backends, ``save_to_bytes`` gives bytes.
save = deprecated_alias(save_file, "aprender.format.apr.save", "save_file (a path) or dumps (bytes)")
save_to_bytes = deprecated_alias(dumps, "aprender.format.apr.save_to_bytes", "dumps")


def save_signed(model: Any, path: PathLike, signing_key: Any, model_type: ModelType | int | None = None,
                options: SaveOptions | None = None, **kwargs: Any) -> None:
    """Save and sign with Ed25519; the public key is embedded beside the signature.

    Parameters
    ----------
    signing_key : cryptography Ed25519PrivateKey or 32 raw bytes
        The signer's private key.
    model_type, options, **kwargs
        As for :func:`save_file`.

    Examples
    --------
    >>> import tempfile, os
    >>> from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> key = Ed25519PrivateKey.generate()
    >>> path = os.path.join(tempfile.mkdtemp(), "signed.apr")
    >>> apr.save_signed(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, key)
    >>> apr.load_verified(path, key.public_key()).predict([[2.0]])
    array([5.])
    """
    save_file(model, path, model_type, options, signing_key=signing_key, **kwargs)


def save_encrypted(model: Any, path: PathLike, password: str | bytes, model_type: ModelType | int | None = None,
                   options: SaveOptions | None = None, **kwargs: Any) -> None:
    """Save with the data section encrypted for a password.

    The key is derived with Argon2id (m=19456 KiB, t=2, p=1, random 16-byte salt)
    and the data sealed with AES-256-GCM; header, metadata and index are
    authenticated as associated data. Metadata stays readable by :func:`inspect_file`.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "secret.apr")
    >>> apr.save_encrypted(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, "correct horse")
    >>> apr.load_encrypted(path, "correct horse").predict([[2.0]])
    array([5.])
    """
    save_file(model, path, model_type, options, password=password, **kwargs)


def save_for_recipient(model: Any, path: PathLike, recipient_public_key: Any,
                       model_type: ModelType | int | None = None, options: SaveOptions | None = None,
                       **kwargs: Any) -> None:
    """Save encrypted for the holder of an X25519 secret key.

    An ephemeral X25519 key agrees a secret with ``recipient_public_key``;
    HKDF-SHA256 turns it into the AES-256-GCM key. Only the ephemeral public key is
    stored.

    Examples
    --------
    >>> import tempfile, os
    >>> from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> secret = X25519PrivateKey.generate()
    >>> path = os.path.join(tempfile.mkdtemp(), "for-bob.apr")
    >>> apr.save_for_recipient(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, secret.public_key())
    >>> apr.load_as_recipient(path, secret).predict([[2.0]])
    array([5.])
    """
    save_file(model, path, model_type, options, recipient_public_key=recipient_public_key, **kwargs)
