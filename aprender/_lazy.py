"""Package attributes imported on first use (PEP 562).

A package's generated scikit-learn namesakes cost about 0.2 ms each to define, most of
it scikit-learn's metadata-routing hook on every subclass: 5-15 ms for a package such as
``aprender.linear_model``. Loading a LogisticRegression file imports that package for
one hand-written class, so the namesakes come in only when one of them is asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, modules: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names that live in its submodules.

    ``modules`` maps a submodule's name (``"_generated"``) to the names it provides. The
    first access to a name imports its submodule; the name is then set on the package,
    so later accesses are plain attribute reads.

    Examples
    --------
    >>> import aprender.cluster
    >>> aprender.cluster.DBSCAN.__module__
    'aprender.cluster._generated'
    >>> "DBSCAN" in dir(aprender.cluster)
    True
    """
    homes = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))

    return __getattr__, __dir__
