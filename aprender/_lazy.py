"""Package attributes imported on first use (PEP 562).

A package's generated scikit-learn namesakes cost about 0.2 ms each to define, most of
it scikit-learn's metadata-routing hook on every subclass: 5-15 ms for a package such as
``aprender.linear_model``. Loading a LogisticRegression file imports that package for
one hand-written class, so the namesakes come in only when one of them is asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, module: str, names: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``names`` that live in its submodule ``module``.

    The first access to any of them imports ``package.module``; each name is then set on
    the package, so later accesses are plain attribute reads.

    Examples
    --------
    >>> import aprender.cluster
    >>> aprender.cluster.DBSCAN.__module__
    'aprender.cluster._generated'
    >>> "DBSCAN" in dir(aprender.cluster)
    True
    """
    wanted = frozenset(names)

    def __getattr__(name: str) -> Any:
        if name not in wanted:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | wanted)

    return __getattr__, __dir__
