"""Optional model libraries: which ones aprender can store, and the extra that installs each.

A schema module for a foreign library's estimators imports the library through
:func:`require`, so a missing library surfaces as a
:class:`~aprender.exceptions.MissingDependencyError` naming the extra to install rather
than a bare ``ImportError``. The table is the only place library names are imported from:
nothing is imported by a name read from a file.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from aprender.exceptions import MissingDependencyError

__all__ = ["LIBRARIES", "available", "require"]

#: library module -> the aprender extra that installs it
LIBRARIES: dict[str, str] = {
    "catboost": "catboost",
    "lightgbm": "lightgbm",
    "xgboost": "xgboost",
}


def require(library: str, path: str = "") -> ModuleType:
    """Import ``library`` (a key of :data:`LIBRARIES`), or raise an error naming its extra.

    Examples
    --------
    >>> from aprender.codec._optional import require
    >>> require("lightgbm").__name__
    'lightgbm'
    """
    extra = LIBRARIES[library]  # a KeyError here is a programming error, never a file's name
    try:
        return importlib.import_module(library)
    except ImportError as exc:
        raise MissingDependencyError(library, extra, path) from exc


def available(library: str) -> bool:
    """True when ``library`` (a key of :data:`LIBRARIES`) imports."""
    try:
        require(library)
    except MissingDependencyError:
        return False
    return True
