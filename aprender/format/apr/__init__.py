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

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too;
# each is imported on first use.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
