"""Format-agnostic ``save`` / ``load``: pick the backend by suffix or by magic bytes."""

from __future__ import annotations

import os
from typing import Any

from aprender.codec import ModelType
from aprender.exceptions import FormatError, SignatureInvalid
from aprender.format._formats import FORMATS, Backend, Format, by_suffix, sniff_head, titles
from aprender.format._info import ModelInfo, ValidationReport
from aprender.format._io import existing_file

__all__ = ["backend_for_path", "file_format", "inspect", "load", "save", "sniff", "validate"]

def backend_for_path(path: str | os.PathLike) -> Backend:
    """The backend module that writes files with ``path``'s suffix (see :data:`~aprender.extend.FORMATS`)."""
    fmt = by_suffix(path)
    if fmt is None:
        known = ", ".join(sorted(f.suffix for f in FORMATS.values()))
        raise ValueError(f"cannot tell the format of '{path}' from its suffix; use one of {known}")
    return fmt.backend


#: Suffixes of pickle files (joblib's included): never opened, whatever their bytes.
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")


def pickle_refusal(path: str | os.PathLike) -> str:
    """Why a pickle file is refused, and the exact lines that convert it where it is trusted.

    Examples
    --------
    >>> print(pickle_refusal("model.pkl"))  # doctest: +NORMALIZE_WHITESPACE
    'model.pkl' is a pickle, which runs code when it is loaded, so aprender never loads it. Where you
    trust the file (it runs its code), convert it once: python -c "import joblib, aprender;
    aprender.save(joblib.load('model.pkl'), 'model.apr')" (joblib.load reads pickle and joblib files)
    """
    target = os.path.splitext(os.fspath(path))[0] + ".apr"
    return (f"'{os.fspath(path)}' is a pickle, which runs code when it is loaded, so aprender never loads it. "
            f"Where you trust the file (it runs its code), convert it once: python -c \"import joblib, aprender; "
            f"aprender.save(joblib.load({os.fspath(path)!r}), {target!r})\" (joblib.load reads pickle and joblib "
            "files)")


def file_format(path: str | os.PathLike) -> Format:
    """The :class:`~aprender.extend.Format` of an existing file, from its first bytes.

    Raises :class:`~aprender.exceptions.FormatError` for an empty file, a pickle (which is
    never opened) and any file no format of the table recognises.
    """
    p = existing_file(path)
    with open(p, "rb") as f:
        head = f.read(16)
    if not head:
        raise FormatError(f"'{p}': the file is empty (0 bytes); it holds no model")
    fmt = sniff_head(head, p.suffix)
    if fmt is not None:
        return fmt
    if head[:1] == b"\x80" or p.suffix.lower() in PICKLE_SUFFIXES:  # pickle protocol 2+ starts with PROTO
        raise FormatError(pickle_refusal(p))
    # The file's bytes are never quoted: this message reaches HTTP clients of the server, and the
    # file may be anything a path resolves to.
    titles = [f.title for f in FORMATS.values()]
    raise FormatError(f"'{p}': unrecognised file format: not {', '.join(titles[:-1])} or {titles[-1]}")


def sniff(path: str | os.PathLike) -> str:
    """The suffix of the format of an existing file, from its first bytes (``".apr"`` ...)."""
    return file_format(path).suffix


def save(model: Any, path: str | os.PathLike, **options: Any) -> None:
    """Save a fitted model; the format follows the suffix of ``path``.

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator or a supported scikit-learn one.
    path : str or PathLike
        Destination; ``.safetensors`` selects SafeTensors.
    **options
        Passed to the backend (``dtype=``, ``metadata=``, ...).

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.safetensors")
    >>> aprender.save(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> aprender.load(path).coef_
    array([2.])
    """
    backend_for_path(path).save_file(model, path, **options)


def load(
    path: str | os.PathLike, model_type: type | ModelType | None = None, *, trusted: Any = None, **options: Any,
) -> Any:
    """Load a model from any aprender file; the format is read from its bytes.

    Parameters
    ----------
    path : str or PathLike
        A file written by :func:`save`.
    model_type : class or ModelType, optional
        Raise :class:`~aprender.exceptions.ModelTypeMismatch` if the file holds
        another kind of model.
    trusted : iterable, optional
        What this load trusts beyond the defaults: function objects the file may
        name (``trusted=[mymodule.myfunc]``; objects, never their names, so nothing
        is imported or looked up by a name a file chose), and names of hyperparameters
        the file may set to any value (``"memory"``, ``"n_jobs"``, ``"pre_dispatch"``,
        ``"cache_size"``, ``"input"``). See :mod:`aprender.codec.trust` and
        docs/threat-model.md.
    **options
        Passed to the backend (keys, ``mmap=``, ...).

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.preprocessing import StandardScaler
    >>> path = os.path.join(tempfile.mkdtemp(), "scaler.safetensors")
    >>> aprender.save(StandardScaler().fit([[0.0], [4.0]]), path)
    >>> aprender.load(path, StandardScaler).mean_
    array([2.])
    """
    named = by_suffix(path)
    if named is not None and named.can.loads and named.can.takes_load_options(options):
        # The usual case: the suffix names the format. Open the file once, in that backend, which checks
        # its magic; only a file whose bytes are another format (or options that backend does not take)
        # is sniffed and handed on.
        try:
            return named.backend.load_file(path, model_type, trusted=trusted, **options)
        except FormatError:
            if file_format(path) is named:
                raise
    return file_format(path).backend.load_file(path, model_type, trusted=trusted, **options)


def inspect(path: str | os.PathLike) -> ModelInfo:
    """Describe a model file from its header, metadata and tensor table.

    No tensor data is read and no key is needed (an encrypted .apr file reports its
    metadata and tensor table). Each backend's ``inspect_file`` does the work.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.apr")
    >>> aprender.save(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> info = aprender.inspect(path)
    >>> info.format, info.model_type.name
    ('apr', 'LINEAR_REGRESSION')
    """
    return file_format(path).backend.inspect_file(path)


def validate(path: str | os.PathLike, *, trusted: Any = None, **keys: Any) -> ValidationReport:
    """Verify a model file completely (checksums, structure, signature, rebuild).

    Raises the specific :class:`~aprender.exceptions.AprenderError` of the first
    problem found; for a sound file returns a :class:`~aprender.format.ValidationReport`
    of what was checked (``apr validate`` prints the same). ``keys`` (``password=``,
    ``secret_key=``, ``verifying_key=``) open encrypted or signed .apr files; an
    encrypted file given none is checked up to its ciphertext and the report says so
    (``report.complete`` is False). A SafeTensors or GGUF file another tool wrote is
    valid when its layout passes and every tensor reads (``report.model`` is False).
    ``trusted`` is :func:`load`'s: functions the model may name beyond the default table
    (an ONNX file rebuilds no model and needs none).

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.preprocessing import StandardScaler
    >>> path = os.path.join(tempfile.mkdtemp(), "scaler.apr")
    >>> aprender.save(StandardScaler().fit([[0.0], [4.0]]), path)
    >>> aprender.validate(path).complete
    True
    """
    fmt = file_format(path)
    can = fmt.can
    if not can.signs and keys.get("verifying_key") is not None:
        raise SignatureInvalid(f"'{path}': {fmt.name} files carry no signature; only {titles('signs')} files are "
                               "signed")
    if not can.encrypts and any(v is not None for v in keys.values()):
        raise ValueError(f"'{path}': {fmt.name} files are never encrypted; keys open {titles('encrypts')} files only")
    trust = {"trusted": trusted} if can.loads and trusted is not None else {}
    if can.encrypts or can.signs:
        return fmt.backend.validate_file(path, **keys, **trust)
    return fmt.backend.validate_file(path, **trust)

