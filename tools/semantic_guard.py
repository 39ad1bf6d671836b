"""Memory watches for tools/semantic_fuzz.py's workers: canary arrays and guard pages.

``Canaries`` notice a stray write that lands in memory the worker allocated around a
load; ``Guard`` turns a read or write past the end of a model's arrays into a SIGSEGV.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

__all__ = ["Canaries", "Guard"]

_CANARY_SIZES = (8, 64, 512, 8192, 131072)  # float64 elements: 64 B (pymalloc) to 1 MiB (mmap)


def _pattern(n: int, salt: int) -> np.ndarray:
    return np.arange(n, dtype=np.float64) * 0.5 + salt


class Canaries:
    """Arrays of known contents allocated around a load; ``changed()`` names the first one that moved."""

    def __init__(self, salt: int) -> None:
        self.arrays = [(_pattern(n, salt + i), salt + i) for i, n in enumerate(_CANARY_SIZES * 2)]

    def changed(self) -> str | None:
        for array, salt in self.arrays:
            if not np.array_equal(array, _pattern(array.size, salt)):
                bad = int(np.flatnonzero(array != _pattern(array.size, salt))[0])
                return f"canary of {array.nbytes} B changed at element {bad}: {array[bad]!r}"
        return None


class Guard:
    """Move a model's arrays to the end of private pages, each followed by a page nothing may touch.

    A canary notices a stray write only where it happens to land; a guard page turns the
    first read or write past the end of any of the model's arrays into a SIGSEGV, which
    the campaign sees as a crash (electric-fence style). Arrays held by compiled objects
    (a Tree's nodes, a KDTree's data) are out of reach; a copy of every other numeric
    array the model holds (attributes, lists, dicts, nested estimators) is guarded, the
    same array object guarded once.
    """

    LIMIT = 4000  # arrays guarded per model: each costs two pages and three system calls

    def __init__(self) -> None:
        import ctypes

        self._mprotect = ctypes.CDLL(None, use_errno=True).mprotect
        self._mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        self._done: dict[int, np.ndarray] = {}

    def guarded(self, a: np.ndarray) -> np.ndarray:
        import ctypes
        import mmap

        page = mmap.PAGESIZE
        body = -(-a.nbytes // page) * page
        mm = mmap.mmap(-1, body + page)
        address = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        if self._mprotect(address + body, page, 0) != 0:  # PROT_NONE
            raise OSError(ctypes.get_errno(), "mprotect")
        order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
        out = np.ndarray(a.shape, a.dtype, buffer=mm, offset=body - a.nbytes, order=order)
        out[...] = a
        out.flags.writeable = a.flags.writeable
        return out  # the array holds the mapping; it is unmapped with the last array that uses it

    def _swap(self, value: Any) -> Any:
        if id(value) in self._done:
            return self._done[id(value)]
        if (value.dtype.kind not in "biufc" or value.size == 0 or len(self._done) >= self.LIMIT
                or not (value.flags.c_contiguous or value.flags.f_contiguous)):
            return value
        self._done[id(value)] = self.guarded(value)
        return self._done[id(value)]

    def walk(self, obj: Any, depth: int = 0) -> Any:
        """``obj`` with its arrays guarded, in place where it is mutable."""
        if depth > 12:
            return obj
        if isinstance(obj, np.ndarray):
            return self._swap(obj)
        if isinstance(obj, list):
            obj[:] = [self.walk(v, depth + 1) for v in obj]
        elif isinstance(obj, tuple) and type(obj) is tuple:
            return tuple(self.walk(v, depth + 1) for v in obj)
        elif isinstance(obj, dict):
            for key in list(obj):
                obj[key] = self.walk(obj[key], depth + 1)
        elif type(obj).__module__.split(".")[0] in ("sklearn", "aprender") and hasattr(obj, "__dict__"):
            for key, value in list(vars(obj).items()):
                new = self.walk(value, depth + 1)
                if new is not value:
                    with contextlib.suppress(AttributeError, TypeError):
                        setattr(obj, key, new)
        return obj
