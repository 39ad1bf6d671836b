"""What ``inspect`` reports about a model file, whatever its format.

Every backend's ``inspect_file(path)`` returns a :class:`ModelInfo` built from the
file's header, metadata and tensor table only: no tensor data is read and no key
is needed, so an encrypted or huge file can be inspected cheaply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aprender.codec import ModelType
from aprender.exceptions import MissingDependencyError

__all__ = ["ModelInfo", "TensorInfo", "ValidationReport", "rebuilt"]


@dataclass(frozen=True)
class TensorInfo:
    """One row of a file's tensor table.

    Parameters
    ----------
    name : str
        Tensor name (dotted, as in :class:`~aprender.codec.ModelState`).
    dtype : str
        Stored dtype: a numpy dtype name (``"float64"``) or a block format
        (``"q8_0"``, ``"q4_0"``, ``"q4_1"``).
    shape : tuple of int
        Logical shape of the tensor.
    nbytes : int
        Bytes the tensor occupies in the file (before compression, if any).
    offset : int, optional
        Byte offset of the tensor's data, where the format defines one.
    quantization : str, optional
        Block quantization type when the tensor is quantized.

    Examples
    --------
    >>> from aprender.format import TensorInfo
    >>> TensorInfo("coefficients", "float64", (10,), 80).nbytes
    80
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    offset: int | None = None
    quantization: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """A model file's header, metadata and tensor table.

    Parameters
    ----------
    format : str
        ``"apr"``, ``"safetensors"``, ``"gguf"`` or ``"onnx"``.
    path : str
        The inspected file.
    file_size : int
        Size of the file in bytes.
    model_type : ModelType or None
        Family code, when the file records one.
    class_key : str or None
        Allow-list key of the top-level estimator class
        (``"aprender.linear_model.LinearRegression"``).
    format_version : str or None
        Container version (``"2.0"`` for .apr).
    metadata : dict
        The stored metadata: the codec's meta (``model``, ``versions``, ``user`` ...)
        and, for .apr, name, description, license and the other user records.
    tensors : tuple of TensorInfo
        The tensor table, in file order.
    compressed : str or None
        ``"zstd"`` or ``"lz4"`` when the data section is compressed.
    encrypted : bool
        The data section is encrypted; loading needs a password or key.
    signed : bool
        The file carries a signature.
    created_at : str or None
        ISO-8601 UTC time, only when the file was saved with provenance.
    quantization : str or None
        Block quantization type of the model (``"q8_0"`` ...), if any.
    embedded_public_key : bytes or None
        Raw public key stored with a signature; :func:`~aprender.format.apr.load_verified`
        without a key verifies against this key, which proves integrity, not origin.
    extra : dict
        Format-specific details (encryption parameters, offsets, GGUF fields ...).

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.safetensors")
    >>> aprender.save(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> info = aprender.inspect(path)
    >>> info.model_type.name, [t.name for t in info.tensors]
    ('LINEAR_REGRESSION', ['coefficients', 'intercept', 'singular_'])
    """

    format: str
    path: str
    file_size: int
    model_type: ModelType | None = None
    class_key: str | None = None
    format_version: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tensors: tuple[TensorInfo, ...] = ()
    compressed: str | None = None
    encrypted: bool = False
    signed: bool = False
    created_at: str | None = None
    quantization: str | None = None
    embedded_public_key: bytes | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_parameters(self) -> int:
        """Total number of tensor elements."""
        from math import prod

        return sum(prod(t.shape) for t in self.tensors)


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`aprender.validate` checked in a file (``apr validate`` prints the same).

    Parameters
    ----------
    path : str
        The file.
    format : str
        ``"apr"``, ``"safetensors"``, ``"gguf"`` or ``"onnx"``.
    checks : tuple of str
        Every check that passed, in the order they ran.
    model : bool
        True when an estimator was rebuilt through the allow-list; False for a file of
        raw tensors (another tool's SafeTensors or GGUF, an ``apr import``) or ONNX.
    not_checked : str, optional
        What could not be checked and why: an encrypted .apr given no key is checked up
        to its ciphertext (which the CRC covers). None when the file was checked whole.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.apr")
    >>> aprender.save(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> report = aprender.validate(path)
    >>> report.complete, report.model, report.checks[-1]
    (True, True, 'model rebuilt through the allow-list')
    """

    path: str
    format: str
    checks: tuple[str, ...]
    model: bool
    not_checked: str | None = None

    @property
    def complete(self) -> bool:
        """True when nothing was left unchecked."""
        return self.not_checked is None


def rebuilt(build: Callable[[], Any]) -> str | None:
    """Rebuild a model for :func:`aprender.validate`: None when it rebuilt, else what was left unchecked.

    A model of an optional library (XGBoost, LightGBM, CatBoost) that is not installed
    cannot be rebuilt; the file's layout, checksums and tensors were read by then, and the
    report says what was not checked and which extra checks it, rather than failing.
    """
    try:
        build()
    except MissingDependencyError as exc:
        return (f"model not rebuilt: it holds {exc.library} estimators and {exc.library} is not installed, so "
                f"their trees and settings were not checked (pip install 'aprender[{exc.extra}]')")
    return None
