"""Reading .apr files and bytes: into a ModelState, or a model through the allow-list."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from aprender._warn import deprecated_alias
from aprender.codec import ModelState, ModelType, from_state
from aprender.format._crc import crc32
from aprender.format._formats import model_type_keyword
from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO, check_ratio_option
from aprender.format.apr._layout import FLAG_SIGNED
from aprender.format.apr._read import Keys, Parsed, check, map_file, read_file, state_of

__all__ = ["MMAP_MIN_BYTES", "load_as_recipient", "load_encrypted", "load_file", "loads", "read_state",
           "state_from_bytes"]

PathLike = str | os.PathLike
Expected = type | ModelType | None


#: Below this size ``mmap=True`` reads the file instead: setting up a map costs more than
#: reading (and checksumming) a small file. The tensors are read-only views either way.
MMAP_MIN_BYTES = 1 << 20


def key_set(password: Any, secret_key: Any, verifying_key: Any, max_decompressed_ratio: float | None) -> Keys:
    check_ratio_option(max_decompressed_ratio)
    return Keys(password, secret_key, verifying_key, max_decompressed_ratio)


def read(path: PathLike, keys: Keys, *, mmap: bool = False, verify: bool = False) -> ModelState:
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
    """Read and verify the :class:`~aprender.codec.ModelState` stored in an .apr file.

    Quantized tensors stay GGML blocks (see :mod:`aprender.format.quantize`). Keys and
    ``max_decompressed_ratio`` as for :func:`load_file`.
    """
    keys = key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    return read(path, keys, mmap=mmap, verify=verifying_key is not None)


def state_from_bytes(
    data: bytes | bytearray | memoryview,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
) -> ModelState:
    """Parse and verify .apr bytes into a :class:`~aprender.codec.ModelState` (arrays are copies)."""
    keys = key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    parsed, buffer = _from_bytes(data, keys, verifying_key is not None)
    state = state_of(parsed, buffer, keys)
    if parsed.compression is None and not parsed.encrypted:
        # views into the caller's (possibly immutable) bytes: give the model its own memory
        state = ModelState({k: v.copy() for k, v in state.tensors.items()}, state.meta)
    return state


def build(state: ModelState, expected: Expected, trusted: Any = None) -> Any:
    if "quantization" not in state.meta:  # the gguf package (about 0.1 s to import) is not needed
        return from_state(state, expected, trusted=trusted)
    from aprender.format.quantize import dequantize

    return from_state(dequantize(state), expected, trusted=trusted)


@model_type_keyword
def load_file(
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
        Memory-map an uncompressed, unencrypted file: O(1) in the model size, and
        the data is neither read nor checksummed (see the module docstring). The map
        is private (copy-on-write): ``partial_fit``, ``fit`` and ``set_params`` work
        on the loaded model, a page it writes becomes this process's own copy, and
        the file never changes. Pages the model has not written reflect any later
        write to the file (replace model files atomically, never in place). A signed
        file is never mapped: its signature covers every byte, so it is read into
        private memory, verified there and fully checksummed, and later writes to
        the file cannot change the verified tensors. Files under 1 MiB
        (``MMAP_MIN_BYTES``) are read and fully checksummed too, which is faster
        than mapping them. By default the whole file is read and verified.
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
    >>> apr.save_file(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> model = apr.load_file(path, mmap=True)  # a private map: the model can keep training, the file never changes
    >>> model.coef_.flags.writeable
    True
    """
    keys = key_set(password, secret_key, verifying_key, max_decompressed_ratio)
    state = read(path, keys, mmap=mmap, verify=verifying_key is not None)
    return build(state, model_type, trusted)




@model_type_keyword
def loads(
    data: bytes | bytearray | memoryview,
    model_type: Expected = None,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
    trusted: Any = None,
) -> Any:
    """Load a model from .apr bytes, verifying them fully.

    Keys, options and ``trusted`` as for :func:`load_file`.

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import apr
    >>> data = apr.dumps(StandardScaler().fit([[1.0], [3.0]]))
    >>> apr.loads(data, StandardScaler).mean_
    array([2.])
    """
    state = state_from_bytes(data, password=password, secret_key=secret_key, verifying_key=verifying_key,
                             max_decompressed_ratio=max_decompressed_ratio)
    return build(state, model_type, trusted)


def load_encrypted(path: PathLike, password: str | bytes, model_type: Expected = None, **keys: Any) -> Any:
    """Load a file saved with :func:`save_encrypted`; ``DecryptionFailed`` on a wrong password."""
    return load_file(path, model_type, password=password, **keys)


def load_as_recipient(path: PathLike, secret_key: Any, model_type: Expected = None, **keys: Any) -> Any:
    """Load a file saved with :func:`save_for_recipient`; ``DecryptionFailed`` on a wrong key."""
    return load_file(path, model_type, secret_key=secret_key, **keys)


#: The older names: ``load`` takes a path in .apr alone among the backends, ``load_from_bytes`` reads bytes.
load = deprecated_alias(load_file, "aprender.format.apr.load", "load_file (a path) or loads (bytes)")
load_from_bytes = deprecated_alias(loads, "aprender.format.apr.load_from_bytes", "loads")
