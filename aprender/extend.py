"""The public extension API: new file formats, estimators and trusted functions.

``aprender.extend`` is where code outside aprender adds to it, and where the types it
needs for that live:

- :func:`register_format` adds a row to the format table (:data:`FORMATS`): a name,
  a suffix, magic bytes and a backend module. The backend has the verbs of
  :class:`Backend` and declares what it can do in ``CAPABILITIES``
  (:class:`Capabilities`: loads back or export only, signs, encrypts, compresses,
  maps, quantizes, and the type of its own write options). ``aprender.save`` /
  ``load`` / ``inspect`` / ``validate``, the mixin's ``save(path)``, ``apr convert`` /
  ``inspect`` / ``validate``, ``aprender serve`` and model cards then handle it.
- :func:`register_estimator` allows a class to be rebuilt from files.
- :func:`register_function` trusts a function that models may name.

The helpers a backend module needs to behave like aprender's own are here too:
:func:`model_type_keyword`, :func:`write_atomic`, :func:`existing_file` and the records
:class:`ModelInfo`, :class:`TensorInfo` and :class:`ValidationReport`.

The module is named for what it is for: a name such as ``aprender.formats`` would sit
one letter from the package ``aprender.format`` and would not hold estimators or
functions. docs/formats.md shows a whole backend.

Examples
--------
>>> from aprender.extend import FORMATS
>>> [f.name for f in FORMATS.values() if not f.can.loads]
['onnx']
"""

from __future__ import annotations

from aprender.codec._registry import register_estimator
from aprender.codec.handlers.functions import register_function
from aprender.format._formats import FORMATS, Backend, Capabilities, Format, model_type_keyword, register
from aprender.format._info import ModelInfo, TensorInfo, ValidationReport
from aprender.format._io import existing_file, write_atomic

__all__ = [
    "FORMATS",
    "Backend",
    "Capabilities",
    "Format",
    "ModelInfo",
    "TensorInfo",
    "VERBS",
    "ValidationReport",
    "existing_file",
    "model_type_keyword",
    "register_estimator",
    "register_format",
    "register_function",
    "write_atomic",
]

#: The verbs every backend module has (the callable members of :class:`Backend`).
VERBS = tuple(name for name, member in vars(Backend).items() if callable(member) and not name.startswith("_"))


def register_format(fmt: Format) -> Format:
    """Add ``fmt`` to the format table, after checking that its backend is one.

    The backend module is imported now: it must have every verb of :class:`Backend`
    and declare its ``CAPABILITIES``. A name or suffix already in the table is an
    error. Returns ``fmt``.

    Raises
    ------
    TypeError
        The backend lacks a verb or its capabilities.
    ValueError
        The name or suffix is registered already.
    """
    missing = [verb for verb in VERBS if not callable(getattr(fmt.backend, verb, None))]
    if missing:
        raise TypeError(f"backend {fmt.module} of format {fmt.name!r} lacks {', '.join(missing)}")
    if not isinstance(getattr(fmt.backend, "CAPABILITIES", None), Capabilities):
        raise TypeError(f"backend {fmt.module} of format {fmt.name!r} declares no CAPABILITIES (a Capabilities)")
    return register(fmt)
