"""ModelState <-> .apr, aprender's own container (APR v2, docs/apr-format.md).

An .apr file holds exactly the codec's :class:`~aprender.format.ModelState` and adds
what SafeTensors cannot carry: a model-type code, CRC32 checksums of the header and
of the whole file, zstd or LZ4 compression, an Ed25519 signature, AES-256-GCM
encryption for a password (Argon2id) or for an X25519 recipient, user records
(name, description, license, metrics, provenance...) and zero-copy memory-mapped
loading.

Two load paths, explicitly:

- ``load(path)`` verifies everything, including the CRC over the whole file, and
  returns writable arrays in one buffer read from disk.
- ``load(path, mmap=True)`` maps an uncompressed, unencrypted file and verifies the
  header CRC, metadata, index and every offset against the file length, but never
  reads the tensor data: tensors are read-only views into the map and load time does
  not grow with the model. :func:`validate_file` checks the full CRC when wanted. A
  signed file is read into private memory instead and verified there, so that no later
  write to the file changes what the signature vouched for.

Examples
--------
>>> import tempfile, os
>>> from aprender.linear_model import LinearRegression
>>> from aprender.format import apr
>>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
>>> apr.save(model, path, compression="zstd", name="line")
>>> apr.load(path, LinearRegression).predict([[2.0]])
array([5.])
>>> apr.inspect_file(path).metadata["name"]
'line'
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

import numpy as np

from aprender.codec import ModelState, ModelType, from_state, to_state
from aprender.exceptions import FormatError, ModelTypeMismatch
from aprender.format._crc import crc32
from aprender.format._info import ModelInfo, TensorInfo, ValidationReport
from aprender.format._io import write_atomic
from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO, check_ratio_option
from aprender.format.apr._layout import FLAG_SIGNED, Flags, IndexEntry
from aprender.format.apr._options import Compression, SaveOptions
from aprender.format.apr._read import Keys, Parsed, check, map_file, read_file, read_prefix, state_of, verify_signature
from aprender.format.apr._write import encode

__all__ = [
    "MAX_DECOMPRESSED_RATIO",
    "MMAP_MIN_BYTES",
    "Compression",
    "SaveOptions",
    "inspect_file",
    "kdf_limits",
    "load",
    "load_as_recipient",
    "load_encrypted",
    "load_file",
    "load_from_bytes",
    "load_verified",
    "read_state",
    "save",
    "save_encrypted",
    "save_file",
    "save_for_recipient",
    "save_signed",
    "save_to_bytes",
    "state_from_bytes",
    "state_to_bytes",
    "validate_file",
    "verify_file",
    "write_state",
]

PathLike = str | os.PathLike
Expected = type | ModelType | None


# -- writing ---------------------------------------------------------------------------


#: The options of a save that names none: frozen, so every such save shares them (building
#: SaveOptions checks that its records are JSON, which a small model's save notices).
_DEFAULT_OPTIONS = SaveOptions()


def __getattr__(name: str) -> Any:
    # kdf_limits lives with the cryptography it configures, imported with the first encrypted file
    if name == "kdf_limits":
        from aprender.format.apr._crypto import kdf_limits

        return kdf_limits
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    """Serialize a :class:`~aprender.format.ModelState` to .apr bytes.

    Parameters are those of :func:`save` that concern the container.

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import apr, to_state
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
    """Write a :class:`~aprender.format.ModelState` to an .apr file (atomically).

    Tensors are written straight from their arrays: a plain save makes no copy.
    """
    chunks = encode(state, _options(options, compression, fields), signing_key=signing_key, password=password,
                    recipient_public_key=recipient_public_key)
    write_atomic(path, chunks)


def save(
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
        Downcast float tensors (see :func:`~aprender.format.to_state`).
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
    >>> from aprender.format import ModelType, SaveOptions, apr
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.1], [5.0], [5.1]])
    >>> opts = SaveOptions().with_name("km").with_license("MIT")
    >>> apr.save(km, os.path.join(tempfile.mkdtemp(), "km.apr"), ModelType.KMEANS, opts)
    """
    write_state(_state(model, model_type, quantize, dtype, metadata, inference_only), path, options,
                compression=compression,
                signing_key=signing_key, password=password, recipient_public_key=recipient_public_key, **fields)


def save_to_bytes(
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
    """Serialize a fitted model to .apr bytes; parameters as for :func:`save`.

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> data = apr.save_to_bytes(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> apr.load_from_bytes(data).predict([[2.0]])
    array([5.])
    """
    return state_to_bytes(_state(model, model_type, quantize, dtype, metadata, inference_only), options,
                          **container)


#: The backend verb :func:`aprender.save` calls.
save_file = save


def save_signed(model: Any, path: PathLike, signing_key: Any, model_type: ModelType | int | None = None,
                options: SaveOptions | None = None, **kwargs: Any) -> None:
    """Save and sign with Ed25519; the public key is embedded beside the signature.

    Parameters
    ----------
    signing_key : cryptography Ed25519PrivateKey or 32 raw bytes
        The signer's private key.
    model_type, options, **kwargs
        As for :func:`save`.

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
    save(model, path, model_type, options, signing_key=signing_key, **kwargs)


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
    save(model, path, model_type, options, password=password, **kwargs)


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
    save(model, path, model_type, options, recipient_public_key=recipient_public_key, **kwargs)


# -- reading ---------------------------------------------------------------------------


#: Below this size ``mmap=True`` reads the file instead: setting up a map costs more than
#: reading (and checksumming) a small file. The tensors are read-only views either way.
MMAP_MIN_BYTES = 1 << 20


def _key_set(password: Any, secret_key: Any, verifying_key: Any, max_decompressed_ratio: float | None) -> Keys:
    check_ratio_option(max_decompressed_ratio)
    return Keys(password, secret_key, verifying_key, max_decompressed_ratio)


def _read(path: PathLike, keys: Keys, *, mmap: bool = False, verify: bool = False) -> ModelState:
    # A signature checked over a map would vouch for bytes that a later write to the file
    # changes under the returned arrays: a signed file is read, verified and used in
    # private memory whatever ``mmap`` says (the signature reads every byte anyway).
    if mmap and not verify and os.path.getsize(path) >= MMAP_MIN_BYTES:
        buffer, where = map_file(path)
        if not _signed(buffer):
            parsed = check(buffer, buffer.shape[0], where, crc=None, mapped=True)
            if not parsed.header.flags & FLAG_SIGNED:  # the header check() parsed, not the peek, decides
                return state_of(parsed, buffer, keys)
    buffer, crc, where = read_file(path)
    parsed = check(buffer, buffer.shape[0], where, crc=crc, verify=verify, verifying_key=keys.verifying_key,
                   mapped=mmap)
    if mmap:
        buffer.flags.writeable = False
    return state_of(parsed, buffer, keys)


def _signed(buffer: np.ndarray) -> bool:
    """Whether the flags field of a (not yet checked) header says SIGNED."""
    return buffer.shape[0] >= 8 and bool(int.from_bytes(bytes(buffer[6:8]), "little") & FLAG_SIGNED)


def _from_bytes(data: bytes | bytearray | memoryview, keys: Keys, verify: bool) -> tuple[Parsed, np.ndarray]:
    buffer = np.frombuffer(data, dtype=np.uint8)
    total = buffer.shape[0]
    parsed = check(buffer, total, ".apr bytes", crc=crc32(buffer[: max(total - 4, 0)]), verify=verify,
                   verifying_key=keys.verifying_key)
    return parsed, buffer


def read_state(
    path: PathLike,
    *,
    mmap: bool = False,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
) -> ModelState:
    """Read and verify the :class:`~aprender.format.ModelState` stored in an .apr file.

    Quantized tensors stay GGML blocks (see :mod:`aprender.format.quantize`). Keys and
    ``max_decompressed_ratio`` as for :func:`load`.
    """
    keys = _key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    return _read(path, keys, mmap=mmap, verify=verifying_key is not None)


def state_from_bytes(
    data: bytes | bytearray | memoryview,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
) -> ModelState:
    """Parse and verify .apr bytes into a :class:`~aprender.format.ModelState` (arrays are copies)."""
    keys = _key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    parsed, buffer = _from_bytes(data, keys, verifying_key is not None)
    state = state_of(parsed, buffer, keys)
    if parsed.compression is None and not parsed.encrypted:
        # views into the caller's (possibly immutable) bytes: give the model its own memory
        state = ModelState({k: v.copy() for k, v in state.tensors.items()}, state.meta)
    return state


def _build(state: ModelState, expected: Expected, trusted: Any = None) -> Any:
    if "quantization" not in state.meta:  # the gguf package (about 0.1 s to import) is not needed
        return from_state(state, expected, trusted=trusted)
    from aprender.format.quantize import dequantize

    return from_state(dequantize(state), expected, trusted=trusted)


def load(
    path: PathLike,
    model_type: Expected = None,
    *,
    mmap: bool = False,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
    trusted: Any = None,
) -> Any:
    """Load a model from an .apr file.

    Parameters
    ----------
    path : str or PathLike
        An .apr file.
    model_type : class or ModelType, optional
        Raise :class:`~aprender.exceptions.ModelTypeMismatch` if the file holds
        another kind of model.
    mmap : bool, default=False
        Memory-map an uncompressed, unencrypted file: O(1) in the model size,
        tensors are read-only views, and the data is neither read nor checksummed
        (see the module docstring). The tensors then reflect any later write to
        the file (replace model files atomically, never in place). A signed file
        is never mapped: its signature covers every byte, so it is read into
        private memory, verified there and fully checksummed, and later writes to
        the file cannot change the verified tensors. Files under 1 MiB
        (``MMAP_MIN_BYTES``) are read and fully checksummed too, which is faster
        than mapping them. The tensors are read-only either way. By default the
        whole file is read and verified.
    password : str or bytes, optional
        For a file saved with :func:`save_encrypted`.
    secret_key : X25519PrivateKey or bytes, optional
        For a file saved with :func:`save_for_recipient`.
    verifying_key : Ed25519PublicKey or bytes, optional
        Require a valid signature by this key (see :func:`load_verified`). Without
        it, a signed file is still verified against the public key it embeds.
    max_decompressed_ratio : float or None, default=MAX_DECOMPRESSED_RATIO (256)
        How far a compressed data section may expand: a file whose index declares
        more than this many times its compressed bytes, plus 32 MiB, is refused with
        a :class:`~aprender.exceptions.FormatError` before anything is allocated.
        Real models compress far less; raise it, or pass None (only what the
        compression format can produce), for a file you trust.
    trusted : iterable, optional
        Function objects the file may name beyond those trusted by default, and
        hyperparameter names it may set freely (see :mod:`aprender.codec.trust`).

    Raises
    ------
    ChecksumMismatch, FormatError, UnsupportedVersion
        The file is corrupted, truncated or not an .apr file.
    KeyRequired
        The file is encrypted and no key was given.
    DecryptionFailed, SignatureInvalid, ModelTypeMismatch

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
    >>> apr.save(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> model = apr.load(path, mmap=True)
    >>> model.coef_.flags.writeable
    False
    """
    keys = _key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    state = _read(path, keys, mmap=mmap, verify=verifying_key is not None)
    return _build(state, model_type, trusted)


#: The backend verb :func:`aprender.load` calls.
load_file = load


def load_from_bytes(
    data: bytes | bytearray | memoryview,
    model_type: Expected = None,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
    trusted: Any = None,
) -> Any:
    """Load a model from .apr bytes, verifying them fully; keys, options and ``trusted`` as for :func:`load`.

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import apr
    >>> data = apr.save_to_bytes(StandardScaler().fit([[1.0], [3.0]]))
    >>> apr.load_from_bytes(data, StandardScaler).mean_
    array([2.])
    """
    state = state_from_bytes(data, password=password, secret_key=secret_key, verifying_key=verifying_key,
                             max_decompressed_ratio=max_decompressed_ratio)
    return _build(state, model_type, trusted)


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
    >>> apr.save(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> try:
    ...     apr.load_verified(path)
    ... except SignatureInvalid as exc:
    ...     print("refused")
    refused
    """
    state = _read(path, _key_set(password, secret_key, verifying_key, max_decompressed_ratio), verify=True)
    return _build(state, model_type, trusted)


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


def load_encrypted(path: PathLike, password: str | bytes, model_type: Expected = None, **keys: Any) -> Any:
    """Load a file saved with :func:`save_encrypted`; ``DecryptionFailed`` on a wrong password."""
    return load(path, model_type, password=password, **keys)


def load_as_recipient(path: PathLike, secret_key: Any, model_type: Expected = None, **keys: Any) -> Any:
    """Load a file saved with :func:`save_for_recipient`; ``DecryptionFailed`` on a wrong key."""
    return load(path, model_type, secret_key=secret_key, **keys)


# -- inspect / validate ----------------------------------------------------------------


def _model_type(meta: dict[str, Any]) -> ModelType | None:
    try:
        return ModelType(meta.get("model_type"))
    except ValueError:
        return None


def _true_shape(entry: IndexEntry, quantization: Any, where: str) -> tuple[int, ...]:
    """A tensor's shape; for GGML blocks (indexed by their padded value shape) the quantization record's."""
    if not entry.dtype.block:
        return entry.shape
    from aprender.format.quantize import block_shape, true_shape

    try:  # read_prefix checked that the record and the index name the same block tensors
        shape, _ = true_shape(quantization["tensors"][entry.name], entry.name)
    except FormatError as exc:
        raise FormatError(f"{where}: {exc}") from None
    if block_shape(shape, entry.dtype.name) != entry.array_shape():
        raise FormatError(f"{where}: quantized tensor '{entry.name}' of shape {list(shape)} does not fit its "
                          f"{entry.size} bytes of {entry.dtype.name} blocks")
    return shape


def inspect_file(path: PathLike) -> ModelInfo:
    """Header, metadata and tensor table of an .apr file, without a key or reading the data.

    The header CRC, metadata and index are verified; the data section is not read
    (use :func:`validate_file` for that).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "secret.apr")
    >>> apr.save_encrypted(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path, "pw")
    >>> info = apr.inspect_file(path)
    >>> info.model_type.name, info.encrypted, [t.name for t in info.tensors]
    ('LINEAR_REGRESSION', True, ['coefficients', 'intercept', 'singular_'])
    """
    parsed, public_key = read_prefix(path)
    plain = parsed.compression is None and not parsed.encrypted
    base = parsed.header.data_offset
    meta, flags = parsed.meta, parsed.header.flags
    quantization = meta.get("quantization")
    tensors = tuple(
        TensorInfo(e.name, e.dtype.name, _true_shape(e, quantization, parsed.where), e.size,
                   base + e.offset if plain else None, e.dtype.name if e.dtype.block else None)
        for e in parsed.entries
    )
    model = meta.get("model")
    return ModelInfo(
        format="apr",
        path=str(path),
        file_size=parsed.total,
        model_type=_model_type(meta),
        class_key=model.get("class") if isinstance(model, dict) else None,
        format_version="2.0",
        metadata=meta,
        tensors=tensors,
        compressed=parsed.compression,
        encrypted=parsed.encrypted,
        signed=bool(flags & FLAG_SIGNED),
        created_at=meta.get("created_at"),
        quantization=quantization["type"] if quantization else None,
        embedded_public_key=public_key,
        extra={
            "flags": [f.name for f in Flags if flags & f.value],
            "tensor_index_offset": parsed.header.tensor_index_offset,
            "data_offset": base,
            "data_size": parsed.data_size,
            "stored_data_size": parsed.stored.stop - parsed.stored.start,
        },
    )


def validate_file(
    path: PathLike,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
) -> ValidationReport:
    """Verify an .apr file completely: every check of :func:`load`, and more.

    Checks the header and footer CRCs over every byte, the metadata and index, the
    signature of a signed file (against ``verifying_key`` or else the embedded key),
    and, when the file can be opened, decrypts and decompresses the data and rebuilds
    the model through the allow-list. An encrypted file given no key is checked up
    to its ciphertext, which the CRC covers. A file of raw tensors with no estimator
    (model type Custom, from ``apr import`` or :func:`write_state`) is checked the
    same way up to its tensors; there is no model to rebuild. Raises the error
    :func:`load` (or :func:`read_state`, for raw tensors) would, and otherwise returns
    a :class:`~aprender.format.ValidationReport` of what was checked.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
    >>> apr.save(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> apr.validate_file(path).checks[:2]
    ('header CRC32, layout, metadata and tensor index', 'footer CRC32 over the whole file')
    """
    keys = _key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    buffer, crc, where = read_file(path)
    parsed = check(buffer, buffer.shape[0], where, crc=crc, verifying_key=verifying_key)
    checks = ["header CRC32, layout, metadata and tensor index", "footer CRC32 over the whole file"]
    if parsed.header.flags & FLAG_SIGNED:
        checks.append("Ed25519 signature (" + ("key given" if verifying_key is not None else "embedded key") + ")")
    model = "model" in parsed.meta
    report = functools.partial(ValidationReport, str(path), "apr")
    if parsed.encrypted and password is None and secret_key is None:
        return report(tuple(checks), model, "encrypted data not opened: pass password= or secret_key= (the CLI's "
                                            "--password-file, --password-env or --secret-key)")
    state = state_of(parsed, buffer, keys)
    if parsed.encrypted:
        checks.append("AES-256-GCM decryption")
    if parsed.compression is not None:
        checks.append(f"{parsed.compression} decompression")
    if model:
        _build(state, None)
        checks.append("model rebuilt through the allow-list")
    else:  # raw tensors (no estimator node) are checked by now
        checks.append("tensors read (raw tensors, model type Custom)")
    return report(tuple(checks), model)

