"""``validate_file``: every check of a load, and the rest, reported."""

from __future__ import annotations

import functools
import os
from typing import Any

from aprender.format._info import ValidationReport, rebuilt
from aprender.format.apr._compress import MAX_DECOMPRESSED_RATIO
from aprender.format.apr._layout import FLAG_SIGNED
from aprender.format.apr._load import build, key_set
from aprender.format.apr._read import check, read_file, state_of

__all__ = ["validate_file"]

PathLike = str | os.PathLike


def validate_file(
    path: PathLike,
    *,
    password: str | bytes | None = None,
    secret_key: Any = None,
    verifying_key: Any = None,
    max_decompressed_ratio: float | None = MAX_DECOMPRESSED_RATIO,
    trusted: Any = None,
) -> ValidationReport:
    """Verify an .apr file completely: every check of :func:`load_file`, and more.

    Checks the header and footer CRCs over every byte, the metadata and index, the
    signature of a signed file (against ``verifying_key`` or else the embedded key),
    and, when the file can be opened, decrypts and decompresses the data and rebuilds
    the model through the allow-list. An encrypted file given no key is checked up
    to its ciphertext, which the CRC covers. A file of raw tensors with no estimator
    (model type Custom, from ``apr import`` or :func:`write_state`) is checked the
    same way up to its tensors; there is no model to rebuild. Raises the error
    :func:`load_file` (or :func:`read_state`, for raw tensors) would, and otherwise returns
    a :class:`~aprender.format.ValidationReport` of what was checked. ``trusted`` is
    :func:`load_file`'s: functions the model may name beyond the default table.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import apr
    >>> path = os.path.join(tempfile.mkdtemp(), "model.apr")
    >>> apr.save_file(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
    >>> apr.validate_file(path).checks[:2]
    ('header CRC32, layout, metadata and tensor index', 'footer CRC32 over the whole file')
    """
    keys = key_set(password, secret_key, verifying_key, max_decompressed_ratio)
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
    if not model:  # raw tensors (no estimator node) are checked by now
        return report((*checks, "tensors read (raw tensors, model type Custom)"), model)
    unchecked = rebuilt(lambda: build(state, None, trusted))
    return report((*checks, "tensors read" if unchecked else "model rebuilt through the allow-list"), model,
                  unchecked)
