"""Exceptions raised by aprender.

Every error that aprender raises on purpose derives from :class:`AprenderError`, so
``except AprenderError`` catches all of them. Each subclass says *what* went wrong and,
where a file is involved, *where*.

Examples
--------
>>> from aprender.exceptions import AprenderError, FormatError
>>> issubclass(FormatError, AprenderError)
True
"""

from __future__ import annotations

from typing import Any

from aprender._display import message

__all__ = [
    "AprenderError",
    "ChecksumMismatch",
    "DecryptionFailed",
    "DistillationError",
    "ExportParityError",
    "FormatError",
    "IncompatibleVersion",
    "InferenceOnlyError",
    "KeyRequired",
    "LoadBudgetExceeded",
    "MissingDependencyError",
    "ModelTypeMismatch",
    "ReadOnlyModelError",
    "SignatureInvalid",
    "UnsupportedExportError",
    "UnsupportedTypeError",
    "UnsupportedVersion",
    "UntrustedFunctionError",
    "UntrustedParameterError",
    "UntrustedTypeError",
]


class AprenderError(Exception):
    """Base class of every error aprender raises on purpose.

    A message quotes what a file holds (names, keys, values), so its text arguments are
    stored through :func:`aprender._display.message`: a control character, ESC sequence
    or bidi override a file put in a name reaches ``str(exc)``, a log or a terminal only
    escaped (``\\x1b``), and a name of megabytes only cut to
    :data:`~aprender._display.MAX_MESSAGE_CHARS`. Line breaks are escaped too (``\\x0a``): every
    message is one line, so a name cannot forge a line of output.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(message(a) if isinstance(a, str) else a for a in args))


class FormatError(AprenderError, ValueError):
    """The bytes of a model file are malformed: what was wrong and where."""


class ChecksumMismatch(FormatError):
    """A stored CRC32 does not match the bytes it covers."""

    def __init__(self, expected: int, actual: int, where: str = "file") -> None:
        self.expected = expected
        self.actual = actual
        self.where = where
        super().__init__(
            f"checksum mismatch in {where}: stored CRC32 0x{expected:08x}, "
            f"computed 0x{actual:08x}; the file is corrupted or was modified"
        )


class LoadBudgetExceeded(FormatError):
    """A load would allocate more than its file justifies (see ``aprender._budget``).

    The file is well-formed but one of its values widens into far more memory or parse
    work than its bytes: a trusted file loads once ``aprender._budget.MAX_EXPANSION`` is
    raised (or ``None``).
    """


class UnsupportedVersion(FormatError):
    """The file declares a format version this aprender cannot read."""

    def __init__(self, found: str, supported: str, where: str = "") -> None:
        self.found = found
        self.supported = supported
        self.where = where
        super().__init__(
            f"{where + ': ' if where else ''}unsupported format version {found}; this aprender reads {supported}. "
            "Upgrade aprender to read this file."
        )


class IncompatibleVersion(UnsupportedVersion):
    """A stored model cannot cross from the scikit-learn version that saved it to the running one.

    Raised when a value has no faithful equivalent on the other side (a removed
    parameter set to a non-default value, a newer parameter the running version lacks)
    or when a newer version's hyperparameters are rejected by the running one. The
    message names both versions and the parameter; ``saved`` and ``running`` hold the
    versions.
    """

    def __init__(self, saved: str, running: str, what: str) -> None:
        self.saved = saved
        self.running = running
        self.found = f"scikit-learn {saved}"
        self.supported = f"scikit-learn {running}"
        self.where = ""
        FormatError.__init__(
            self,
            f"{what}. The model was saved under scikit-learn {saved} and cannot be loaded faithfully under "
            f"scikit-learn {running}; load it under scikit-learn {saved}, or refit it under {running}.",
        )


class MissingDependencyError(AprenderError, ImportError):
    """A file holds a model of an optional library (XGBoost, LightGBM, CatBoost) that is not installed.

    The message names the library and the extra that installs it,
    ``pip install 'aprender[xgboost]'``. ``apr inspect`` and ``apr validate`` still read
    such a file: its trees are plain arrays.

    Examples
    --------
    >>> from aprender.exceptions import MissingDependencyError, AprenderError
    >>> issubclass(MissingDependencyError, AprenderError) and issubclass(MissingDependencyError, ImportError)
    True
    """

    def __init__(self, library: str, extra: str, path: str = "") -> None:
        self.library = library
        self.extra = extra
        where = f" at '{path}'" if path else ""
        super().__init__(f"the model{where} needs {library}, which is not installed; "
                         f"install it with: pip install 'aprender[{extra}]'")


class ModelTypeMismatch(AprenderError, TypeError):
    """The file holds another kind of model than the caller asked for."""

    def __init__(self, expected: str, found: str) -> None:
        self.expected = expected
        self.found = found
        super().__init__(f"file contains {found}, expected {expected}")


class SignatureInvalid(AprenderError):
    """A signature is missing, malformed, or does not verify."""


class DecryptionFailed(AprenderError):
    """Decryption failed: a wrong password or key, or tampered ciphertext."""


class KeyRequired(DecryptionFailed):
    """The file is encrypted and no key or password was given."""


class UnsupportedTypeError(AprenderError, TypeError):
    """An attribute has a type the codec cannot store without pickle."""

    def __init__(self, path: str, type_name: str, hint: str = "") -> None:
        self.path = path
        self.type_name = type_name
        message = f"cannot serialize attribute '{path}' of type {type_name}"
        super().__init__(message + (f": {hint}" if hint else ""))


class UntrustedTypeError(AprenderError):
    """A file names a class that is not on aprender's allow-list."""

    def __init__(self, key: str, path: str = "") -> None:
        self.key = key
        self.path = path
        where = f" at '{path}'" if path else ""
        super().__init__(
            f"class '{key}'{where} is not on the allow-list; refusing to build it. "
            "Register trusted classes with aprender.register_estimator()."
        )


class UntrustedFunctionError(UntrustedTypeError, FormatError):
    """A file names a function that is neither trusted by default nor by the caller.

    ``name`` is the name the file gives, ``path`` where it stands. The message says how
    to trust it: ``aprender.load(path, trusted=[module.func])`` for one load, or
    ``aprender.register_function(module.func)`` for the process.
    """

    def __init__(self, name: str, path: str = "") -> None:
        self.key = self.name = name
        self.path = path
        where = f" at '{path}'" if path else ""
        AprenderError.__init__(
            self,
            f"function '{name}'{where} is not trusted by default (only pure numeric functions are: "
            "docs/threat-model.md lists them); refusing to rebuild it. If you trust this file to call it, "
            f"pass the function object: aprender.load(path, trusted=[{name}]) (import it yourself), "
            "or call aprender.register_function on it before loading",
        )


class UntrustedParameterError(UntrustedTypeError, FormatError):
    """A file sets a hyperparameter that names a path, a process count or a resource beyond what is allowed.

    ``name`` is the hyperparameter, ``path`` the estimator's place in the model.
    """

    def __init__(self, name: str, path: str, allowed: str, value: object) -> None:
        self.key = self.name = name
        self.path = path
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        AprenderError.__init__(
            self,
            f"hyperparameter '{name}' at '{path or '<model>'}' is {shown}; a file may set it only to {allowed}. "
            f"If you trust this file's value, load it with aprender.load(path, trusted=['{name}'])",
        )


class UnsupportedExportError(AprenderError):
    """A model cannot be exported to the requested format."""


class ExportParityError(UnsupportedExportError):
    """An exported ONNX graph computes other outputs than the estimator on probe rows.

    The message gives the output, the measured difference, on how many rows, and the
    choices: ``dtype=numpy.float64``, an explicit ``tolerance=``, or ``verify=False``.
    ``outputs`` holds what was measured per output (``max_abs``, ``differing_rows``), as
    in the ``aprender.parity`` record of a graph that passes.

    Examples
    --------
    >>> from aprender.exceptions import ExportParityError, UnsupportedExportError
    >>> issubclass(ExportParityError, UnsupportedExportError)
    True
    """

    def __init__(self, message: str, outputs: dict[str, Any] | None = None) -> None:
        self.outputs = dict(outputs or {})
        super().__init__(message)


class InferenceOnlyError(AprenderError, AttributeError):
    """The model was loaded from an inference-only file: what further training needs was not saved.

    Examples
    --------
    >>> from aprender.exceptions import InferenceOnlyError, AprenderError
    >>> issubclass(InferenceOnlyError, AprenderError)
    True
    """


class ReadOnlyModelError(AprenderError, ValueError):
    """Training would write into fitted arrays that are read-only views of a memory-mapped file.

    A model loaded with ``mmap=True`` serves predictions from the file's pages; a
    ``partial_fit`` that updates its arrays in place cannot. Load the file without
    ``mmap=True`` to continue training.

    Examples
    --------
    >>> from aprender.exceptions import ReadOnlyModelError, AprenderError
    >>> issubclass(ReadOnlyModelError, AprenderError) and issubclass(ReadOnlyModelError, ValueError)
    True
    """


class WarmStartMismatchError(AprenderError, ValueError):
    """A ``warm_start`` refit of a loaded model on data whose shape disagrees with its fitted state."""


class DistillationError(AprenderError, ValueError):
    """A distillation cannot run as asked: incompatible teachers and student, a bad layer map, ..."""


class VersionSkewWarning(UserWarning):
    """The file was saved under another scikit-learn version than the one loading it.

    aprender rebuilds the estimator from its stored state (nothing is unpickled), and
    the state has passed this version's checks; the warning says so, and that outputs
    are worth checking once when they matter.
    """


class ExportPrecisionWarning(UserWarning):
    """An ONNX export whose float32 arithmetic can change some predictions, and how to avoid it.

    Raised as a warning (not an error): the graph is valid and agrees with the estimator on
    almost every row. The message names the steps, the risk and the exact alternative.
    """
