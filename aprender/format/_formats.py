"""The one table of file formats, and the verbs every format backend has.

Everything that must know which formats exist reads :data:`FORMATS`: ``aprender.save``
/ ``load`` / ``inspect`` / ``validate``, the CLI's ``--format`` choices and its
detection of a file's format, the MLflow flavor's model files, Dask's shipped files
and the server's repository. Adding a format is a backend module (the verbs of
:class:`Backend`) plus one :class:`Format` row here; docs/formats.md lists the rest.

Examples
--------
>>> from aprender.format._formats import FORMATS, by_suffix
>>> [f.name for f in FORMATS.values()]
['safetensors', 'apr', 'gguf', 'onnx']
>>> by_suffix("model.APR").name, FORMATS["gguf"].quantizes
('apr', True)
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aprender import format as package  # lazy (SPEC 1): each backend module comes on first use
from aprender._warn import model_type_keyword

if TYPE_CHECKING:
    from aprender.codec import ModelState
    from aprender.format._info import ModelInfo, ValidationReport

__all__ = ["FORMATS", "Backend", "Format", "by_suffix", "having", "model_type_keyword", "register", "sniff_head",
           "titles"]

PathLike = str | os.PathLike


class Backend(Protocol):
    """The verbs of a format backend module (``aprender.format.safetensors`` ...).

    Models: ``dumps`` / ``loads`` take and give bytes, ``save_file`` / ``load_file``
    a path; every load names the expected class ``model_type``. States (the codec's
    :class:`~aprender.codec.ModelState`, for conversions that need no estimator):
    ``state_to_bytes`` / ``state_from_bytes`` and ``write_state`` / ``read_state``.
    Files: ``inspect_file`` reads the header only, ``validate_file`` checks
    everything. A backend whose format cannot be read back into a model (ONNX) has
    the load verbs raise, and its row says ``loads=False``.

    The modules keep older names beside these for saved code (``save`` / ``load``,
    .apr's ``save_to_bytes`` / ``load_from_bytes``); they warn with a
    ``DeprecationWarning``, and docs/formats.md lists what to use instead.
    """

    def dumps(self, model: Any, **options: Any) -> bytes: ...

    def loads(self, data: bytes | bytearray | memoryview, model_type: Any = None, *, trusted: Any = None,
              **options: Any) -> Any: ...

    def save_file(self, model: Any, path: PathLike, **options: Any) -> None: ...

    def load_file(self, path: PathLike, model_type: Any = None, *, trusted: Any = None, **options: Any) -> Any: ...

    def state_to_bytes(self, state: ModelState, **options: Any) -> bytes: ...

    def state_from_bytes(self, data: bytes | bytearray | memoryview, **options: Any) -> ModelState: ...

    def write_state(self, state: ModelState, path: PathLike, **options: Any) -> None: ...

    def read_state(self, path: PathLike, **options: Any) -> ModelState: ...

    def inspect_file(self, path: PathLike) -> ModelInfo: ...

    def validate_file(self, path: PathLike, **keys: Any) -> ValidationReport: ...


@dataclass(frozen=True)
class Format:
    """One row of :data:`FORMATS`: a file format, where its backend is, and what it can do.

    Parameters
    ----------
    name : str
        The format's name: ``--format`` value, ``ModelInfo.format``, MLflow's
        ``serialization_format``.
    suffix : str
        The file suffix, lower case with its dot.
    module : str
        The backend module's name (see :class:`Backend`).
    title : str
        The name messages print.
    magic : bytes
        Bytes a file of the format has at ``magic_offset``.
    magic_offset : int, default=0
    magic_needs_suffix : bool, default=False
        The magic is too weak alone (ONNX's first protobuf tag): the file must also
        have the suffix.
    loads : bool, default=True
        Files read back into a model (ONNX is export only).
    signs, encrypts, compresses, mmaps : bool, default=False
        Ed25519 signatures, AES-256-GCM encryption, zstd/LZ4 compression, zero-copy
        memory-mapped loads.
    quantizes : bool, default=False
        Holds GGML quantized blocks as they are.
    raw_tensors : bool, default=False
        Holds tensors without a model (model type Custom), and reads such files that
        other tools wrote.
    importer : callable, optional
        Returns the backend module, imported on first use. aprender's own rows name their
        module as an attribute of the lazy :mod:`aprender.format` package, which readers
        and type checkers follow; a row without one is imported by its ``module`` name.
    """

    name: str
    suffix: str
    module: str
    title: str
    magic: bytes
    magic_offset: int = 0
    magic_needs_suffix: bool = False
    loads: bool = True
    signs: bool = False
    encrypts: bool = False
    compresses: bool = False
    mmaps: bool = False
    quantizes: bool = False
    raw_tensors: bool = False
    importer: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

    @property
    def backend(self) -> Backend:
        """The backend module, imported on first use."""
        if self.importer is not None:
            return self.importer()
        return _import(self.module)  # a format registered by a module's name

    def matches(self, head: bytes, suffix: str) -> bool:
        """Whether a file starting with ``head`` and named with ``suffix`` is of this format."""
        end = self.magic_offset + len(self.magic)
        return head[self.magic_offset:end] == self.magic and (not self.magic_needs_suffix or suffix == self.suffix)


@functools.cache
def _import(module: str) -> Any:
    return importlib.import_module(module)  # a name given at run time to register()


#: Format name -> its row, in the order the CLI lists them.
FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a row to :data:`FORMATS` (a name or suffix already there is an error)."""
    if fmt.name in FORMATS or any(f.suffix == fmt.suffix for f in FORMATS.values()):
        raise ValueError(f"format {fmt.name!r} ({fmt.suffix}) is registered already")
    FORMATS[fmt.name] = fmt
    return fmt


# A SafeTensors file starts with an 8-byte header length, then the JSON header's "{".
register(Format("safetensors", ".safetensors", "aprender.format.safetensors", "SafeTensors", b"{", magic_offset=8,
                raw_tensors=True, importer=lambda: package.safetensors))
register(Format("apr", ".apr", "aprender.format.apr", ".apr", b"APR\x00", signs=True, encrypts=True,
                compresses=True, mmaps=True, quantizes=True, raw_tensors=True, importer=lambda: package.apr))
register(Format("gguf", ".gguf", "aprender.format.gguf", "GGUF", b"GGUF", quantizes=True,
                importer=lambda: package.gguf))
# An ONNX ModelProto starts with field 1 (ir_version, a varint): tag byte 0x08.
register(Format("onnx", ".onnx", "aprender.format.onnx", "ONNX", b"\x08", magic_needs_suffix=True, loads=False,
                importer=lambda: package.onnx))


def by_suffix(path: PathLike) -> Format | None:
    """The format whose suffix ``path`` has (any case), or None."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return next((f for f in FORMATS.values() if f.suffix == suffix), None)


def sniff_head(head: bytes, suffix: str) -> Format | None:
    """The format of a file starting with ``head``, or None.

    The most specific test wins: magic bytes alone before magic that needs the suffix
    too, longer magic before shorter (an .apr header could hold ``{`` at byte 8).
    """
    order = sorted(FORMATS.values(), key=lambda f: (f.magic_needs_suffix, -len(f.magic)))
    return next((f for f in order if f.matches(head, suffix.lower())), None)


def having(capability: str) -> list[Format]:
    """The formats with ``capability`` (a boolean field of :class:`Format`: ``"loads"``, ``"signs"`` ...)."""
    return [f for f in FORMATS.values() if getattr(f, capability)]


def titles(capability: str, joiner: str = " or ") -> str:
    """The titles of the formats with ``capability``, for messages (``".apr or GGUF"``)."""
    return joiner.join(f.title for f in having(capability))
