"""Values built on first use: an optional library's dtype, a table's costly entries.

The packages' own names are imported on first use by ``lazy_loader`` from each package's
``__init__.pyi`` (SPEC 1); what is here is lazy inside a module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["LazyValues", "bfloat16"]


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
