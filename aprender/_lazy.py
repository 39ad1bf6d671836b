"""Package attributes imported on first use (PEP 562).

Defining a scikit-learn subclass is not free (scikit-learn's metadata-routing hook runs
for each), and a package such as ``aprender.linear_model`` has dozens of generated
namesakes. Loading a LogisticRegression file imports that package for one hand-written
class, so the namesakes come in only when one of them is asked for.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["LazyValues", "bfloat16", "lazy_attributes"]


def lazy_attributes(
    package: str, modules: Mapping[str, Iterable[str]], submodules: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names that live in its submodules.

    ``modules`` maps a submodule's name (``"_generated"``, or a full name from
    ``aprender.``) to the names it provides. The
    first access to a name imports its submodule; the name is then set on the package,
    so later accesses are plain attribute reads. ``submodules`` are public submodules
    that ``package.name`` imports on first access, as when the package imported them.

    Examples
    --------
    >>> import aprender.cluster
    >>> aprender.cluster.DBSCAN.__module__
    'aprender.cluster._generated'
    >>> "DBSCAN" in dir(aprender.cluster)
    True
    """
    homes = {name: module for module, names in modules.items() for name in names}
    children = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in children:
            return importlib.import_module(f"{package}.{name}")  # the import binds it on the package
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home = module if module.startswith("aprender.") else f"{package}.{module}"
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes) | children)

    return __getattr__, __dir__


def bfloat16() -> Any:
    """ml_dtypes' ``bfloat16`` numpy dtype, imported on first use.

    Only a file or array that holds bfloat16 values needs ml_dtypes, so other loads do
    not pay for its import.
    """
    import ml_dtypes
    import numpy as np

    return np.dtype(ml_dtypes.bfloat16)


class LazyValues(dict):
    """A dict whose ``lazy`` keys get their value on first lookup with ``[]``.

    ``table[key]`` builds a lazy key's value once (``lazy[key]()``) and stores it;
    ``get``, ``in`` and iteration see only the values built so far.
    """

    def __init__(self, values: Mapping[Any, Any], lazy: Mapping[Any, Callable[[], Any]]) -> None:
        super().__init__(values)
        self._lazy = dict(lazy)

    def __missing__(self, key: Any) -> Any:
        build = self._lazy.get(key)
        if build is None:
            raise KeyError(key)
        value = self[key] = build()
        return value
