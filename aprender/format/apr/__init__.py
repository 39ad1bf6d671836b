"""ModelState <-> .apr, aprender's own container (APR v2, docs/apr-format.md).

An .apr file holds exactly the codec's :class:`~aprender.codec.ModelState` and adds
what SafeTensors cannot carry: a model-type code, CRC32 checksums of the header and
of the whole file, zstd or LZ4 compression, an Ed25519 signature, AES-256-GCM
encryption for a password (Argon2id) or for an X25519 recipient, user records
(name, description, license, metrics, provenance...) and zero-copy memory-mapped
loading.

Two load paths, explicitly:

- ``load_file(path)`` verifies everything, including the CRC over the whole file, and
  returns writable arrays in one buffer read from disk.
- ``load_file(path, mmap=True)`` maps an uncompressed, unencrypted file and verifies the
  header CRC, metadata, index and every offset against the file length, but never
  reads the tensor data: tensors are views into a private (copy-on-write) map, so the
  model can keep training without changing the file, and load time does not grow with
  the model. :func:`validate_file` checks the full CRC when wanted. A
  signed file is read into private memory instead and verified there, so that no later
  write to the file changes what the signature vouched for.

Examples
--------
>>> import tempfile, os
>>> from aprender.linear_model import LinearRegression
>>> from aprender.format import apr
>>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
>>> apr.save_file(model, path, compression="zstd", name="line")
>>> apr.load_file(path, LinearRegression).predict([[2.0]])
array([5.])
>>> apr.inspect_file(path).metadata["name"]
'line'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aprender._lazy import lazy_attributes

if TYPE_CHECKING:
    from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO
    from aprender.format.apr._crypto import kdf_limits
    from aprender.format.apr._inspect import inspect_file
    from aprender.format.apr._load import (
        MMAP_MIN_BYTES,
        load_as_recipient,
        load_encrypted,
        load_file,
        loads,
        read_state,
        state_from_bytes,
    )
    from aprender.format.apr._options import CAPABILITIES, Compression, SaveOptions, WriteOptions
    from aprender.format.apr._save import (
        dumps,
        save_encrypted,
        save_file,
        save_for_recipient,
        save_signed,
        state_to_bytes,
        write_state,
    )
    from aprender.format.apr._validate import validate_file
    from aprender.format.apr._verify import load_verified, verify_file

__all__ = [
    "CAPABILITIES",
    "MAX_DECOMPRESSED_RATIO",
    "MMAP_MIN_BYTES",
    "Compression",
    "SaveOptions",
    "WriteOptions",
    "dumps",
    "inspect_file",
    "kdf_limits",
    "load_as_recipient",
    "load_encrypted",
    "load_file",
    "load_verified",
    "loads",
    "read_state",
    "save_encrypted",
    "save_file",
    "save_for_recipient",
    "save_signed",
    "state_from_bytes",
    "state_to_bytes",
    "validate_file",
    "verify_file",
    "write_state",
]


# Imported on first use: a load reads with _load and _read alone, without the writer, the
# verifier or the cryptography (kdf_limits comes with the first encrypted file).
# load, save, load_from_bytes and save_to_bytes are the deprecated older names (docs/formats.md).
__getattr__, __dir__ = lazy_attributes("aprender.format.apr", {
    "_compress": ["MAX_DECOMPRESSED_RATIO"],
    "_inspect": ["inspect_file"],
    "_load": ["MMAP_MIN_BYTES", "load", "load_as_recipient", "load_encrypted", "load_file", "load_from_bytes",
              "loads", "read_state", "state_from_bytes"],
    "_options": ["CAPABILITIES", "Compression", "SaveOptions", "WriteOptions"],
    "_save": ["dumps", "save", "save_encrypted", "save_file", "save_for_recipient", "save_signed", "save_to_bytes",
              "state_to_bytes", "write_state"],
    "_validate": ["validate_file"],
    "_verify": ["load_verified", "verify_file"],
    "_crypto": ["kdf_limits"],
})
