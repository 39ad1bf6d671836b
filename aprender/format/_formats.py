"""The one table of file formats, and the verbs every format backend has.

Everything that must know which formats exist reads :data:`FORMATS`: ``aprender.save``
/ ``load`` / ``inspect`` / ``validate``, the CLI's ``--format`` choices, help and
detection of a file's format, the MLflow flavor's model files, Dask's shipped files,
the server's repository and model cards. A row says where a format is (name, suffix,
magic bytes, backend module); what the format can do is declared by its backend
(:class:`Capabilities`, with the type of the options it writes), so no caller compares
format names. Adding a format is a backend module (the verbs of :class:`Backend`) plus
one :class:`Format` row, through the public :mod:`aprender.extend`; docs/formats.md
lists the rest.

Examples
--------
>>> from aprender.format._formats import FORMATS, by_suffix
>>> [f.name for f in FORMATS.values()]
['safetensors', 'apr', 'gguf', 'onnx']
>>> by_suffix("model.APR").name, FORMATS["gguf"].can.quantizes
('apr', True)
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from aprender._warn import model_type_keyword

if TYPE_CHECKING:
    from aprender.codec import ModelState
    from aprender.format._info import ModelInfo, ValidationReport

__all__ = ["FORMATS", "Backend", "Capabilities", "Format", "by_suffix", "describe", "having", "model_type_keyword",
           "names", "register", "sniff_head", "titles"]

PathLike = str | os.PathLike


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared by the backend itself as its ``CAPABILITIES``.

    Callers ask this, never a format's name: the CLI picks what to pass and what to
    refuse, the server what it serves, ``validate`` which keys apply.

    Parameters
    ----------
    loads : bool, default=True
        Files read back into a model. An export-only backend (ONNX) writes a model
        for another runtime: its load verbs raise, ``apr convert`` rebuilds the model
        and hands it to ``save_file``, and the server refuses its files.
    signs, encrypts, compresses, mmaps : bool, default=False
        Ed25519 signatures, AES-256-GCM encryption, zstd/LZ4 compression, zero-copy
        memory-mapped loads (``load_file(..., mmap=True)``).
    quantizes : bool, default=False
        Holds GGML quantized blocks as they are.
    raw_tensors : bool, default=False
        Holds tensors without a model (model type Custom), and reads such files that
        other tools wrote.
    options : dataclass type, optional
        The keywords the backend's ``save_file`` / ``write_state`` take beyond the
        codec's (``dtype=``, ``metadata=``), as the fields of a dataclass. A field
        whose metadata has ``"help"`` is also an ``apr convert`` option,
        ``--<format>-<field>``.
    load_options : frozenset of str, default=frozenset()
        The keywords its ``load_file`` / ``read_state`` take beyond ``model_type`` and
        ``trusted`` (``mmap``, keys ...).

    Examples
    --------
    >>> from dataclasses import dataclass, field
    >>> from aprender.extend import Capabilities
    >>> @dataclass(frozen=True)
    ... class Options:
    ...     level: int = field(default=1, metadata={"help": "How hard to try."})
    >>> can = Capabilities(loads=False, options=Options)
    >>> can.write_options({"level": 3, "dtype": None})
    {'level': 3}
    """

    loads: bool = True
    signs: bool = False
    encrypts: bool = False
    compresses: bool = False
    mmaps: bool = False
    quantizes: bool = False
    raw_tensors: bool = False
    options: type | None = None
    load_options: frozenset[str] = frozenset()

    #: The boolean capabilities, by name (what :func:`having` takes).
    FLAGS: ClassVar[tuple[str, ...]] = ("loads", "signs", "encrypts", "compresses", "mmaps", "quantizes",
                                        "raw_tensors")

    def option_fields(self) -> tuple[dataclasses.Field[Any], ...]:
        """The fields of :attr:`options` (none without an options type)."""
        return dataclasses.fields(self.options) if self.options is not None else ()

    def write_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The options of ``given`` that were set (not None), checked against :attr:`options`.

        Raises ``TypeError`` naming the option and the ones the backend takes when a
        set option is not among them.
        """
        known = {f.name for f in self.option_fields()}
        chosen = {k: v for k, v in given.items() if v is not None}
        unknown = sorted(set(chosen) - known)
        if unknown:
            raise TypeError(f"the format takes no option {', '.join(unknown)}; its options are "
                            f"{', '.join(sorted(known)) or 'none'}")
        return chosen

    def takes_load_options(self, keys: Iterable[str]) -> bool:
        """Whether ``load_file`` takes every one of ``keys``."""
        return set(keys) <= self.load_options


class Backend(Protocol):
    """The verbs of a format backend module (``aprender.format.safetensors`` ...).

    Models: ``dumps`` / ``loads`` take and give bytes, ``save_file`` / ``load_file``
    a path; every load names the expected class ``model_type``. States (the codec's
    :class:`~aprender.codec.ModelState`, for conversions that need no estimator):
    ``state_to_bytes`` / ``state_from_bytes`` and ``write_state`` / ``read_state``.
    Files: ``inspect_file`` reads the header only, ``validate_file`` checks
    everything. ``CAPABILITIES`` says what the backend can do and which options it
    takes (:class:`Capabilities`); an export-only backend (ONNX) has the load verbs
    raise.

    The modules keep older names beside these for saved code (``save`` / ``load``,
    .apr's ``save_to_bytes`` / ``load_from_bytes``); they warn with a
    ``DeprecationWarning``, and docs/formats.md lists what to use instead.
    """

    CAPABILITIES: Capabilities

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
    """One row of :data:`FORMATS`: a file format and where its backend is.

    Parameters
    ----------
    name : str
        The format's name: ``--format`` value, ``ModelInfo.format``, MLflow's
        ``serialization_format``.
    suffix : str
        The file suffix, lower case with its dot.
    module : str
        The backend module (see :class:`Backend`), imported on first use.
    title : str
        The name messages print.
    magic : bytes
        Bytes a file of the format has at ``magic_offset``.
    magic_offset : int, default=0
    magic_needs_suffix : bool, default=False
        The magic is too weak alone (ONNX's first protobuf tag): the file must also
        have the suffix.
    """

    name: str
    suffix: str
    module: str
    title: str
    magic: bytes
    magic_offset: int = 0
    magic_needs_suffix: bool = False

    @property
    def backend(self) -> Backend:
        """The backend module, imported on first use."""
        return _import(self.module)

    @property
    def can(self) -> Capabilities:
        """What the backend declares it can do (imports the backend)."""
        can = getattr(self.backend, "CAPABILITIES", None)
        if not isinstance(can, Capabilities):
            raise TypeError(f"backend {self.module} of format {self.name!r} declares no CAPABILITIES "
                            "(an aprender.extend.Capabilities)")
        return can

    def matches(self, head: bytes, suffix: str) -> bool:
        """Whether a file starting with ``head`` and named with ``suffix`` is of this format."""
        end = self.magic_offset + len(self.magic)
        return head[self.magic_offset:end] == self.magic and (not self.magic_needs_suffix or suffix == self.suffix)


@functools.cache
def _import(module: str) -> Any:
    return importlib.import_module(module)


#: Format name -> its row, in the order the CLI lists them.
FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    """Add a row to :data:`FORMATS` (a name or suffix already there is an error)."""
    if fmt.name in FORMATS or any(f.suffix == fmt.suffix for f in FORMATS.values()):
        raise ValueError(f"format {fmt.name!r} ({fmt.suffix}) is registered already")
    FORMATS[fmt.name] = fmt
    return fmt


# A SafeTensors file starts with an 8-byte header length, then the JSON header's "{".
register(Format("safetensors", ".safetensors", "aprender.format.safetensors", "SafeTensors", b"{", magic_offset=8))
register(Format("apr", ".apr", "aprender.format.apr", ".apr", b"APR\x00"))
register(Format("gguf", ".gguf", "aprender.format.gguf", "GGUF", b"GGUF"))
# An ONNX ModelProto starts with field 1 (ir_version, a varint): tag byte 0x08.
register(Format("onnx", ".onnx", "aprender.format.onnx", "ONNX", b"\x08", magic_needs_suffix=True))


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
    """The formats whose backend declares ``capability`` (a flag of :class:`Capabilities`: ``"loads"`` ...)."""
    if capability not in Capabilities.FLAGS:
        raise ValueError(f"no capability {capability!r}; one of {', '.join(Capabilities.FLAGS)}")
    return [f for f in FORMATS.values() if getattr(f.can, capability)]


def titles(capability: str, joiner: str = " or ") -> str:
    """The titles of the formats with ``capability``, for messages (``".apr or GGUF"``)."""
    return joiner.join(f.title for f in having(capability))


def names(formats: Iterable[Format] | None = None, attribute: str = "name") -> str:
    """``"safetensors, apr, gguf or onnx"``: the formats (by default the whole table) for help and messages."""
    words = [getattr(f, attribute) for f in (FORMATS.values() if formats is None else formats)]
    return " or ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} or {words[-1]}"


def describe(text: str) -> str:
    """``text`` with the table filled in: ``{formats}`` / ``{suffixes}`` name every format, ``{<flag>}``
    the formats with a :class:`Capabilities` flag (``{quantizes}`` -> ``"apr or gguf"``), ``{exports}``
    the export-only ones and ``{with_<option>}`` the export-only ones whose options type has that field
    (``{with_X}`` -> ``"onnx"``). Only placeholders ``text`` names are computed: a capability imports
    every backend, names alone import none (``apr --help`` stays fast).
    """
    fields: dict[str, str] = {}
    if "{formats}" in text:
        fields["formats"] = names()
    if "{suffixes}" in text:
        fields["suffixes"] = names(attribute="suffix")
    if "{exports}" in text:
        fields["exports"] = names(f for f in FORMATS.values() if not f.can.loads)
    fields.update({flag: names(having(flag)) for flag in Capabilities.FLAGS if "{" + flag + "}" in text})
    for option in re.findall(r"\{with_(\w+)\}", text):
        fields[f"with_{option}"] = names(f for f in FORMATS.values() if not f.can.loads
                                         and any(o.name == option for o in f.can.option_fields()))
    return text.format(**fields) if fields else text
