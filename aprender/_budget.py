"""One memory budget per load: what a file's values may widen into, relative to the file.

Most of a load is proportional to the bytes it reads: a tensor is copied once, a JSON
value becomes a Python object of a few dozen bytes per node. A few materializations are
not, because one value decides the cost of many others: a numpy string array has one
itemsize for all its elements, so one string of 100,000 characters among 10,000 short ones
makes 4 GB of ``<U100000`` from a 130 KB file. Each such place charges what it is about
to allocate to the load's :class:`LoadBudget` *before* allocating it, and the load fails
with :class:`~aprender.exceptions.LoadBudgetExceeded` once the charges pass

    ``EXPANSION * source_bytes + ALLOWANCE``

where ``source_bytes`` is what the file gave the load: its tensor bytes (decompressed, for a
compressed .apr, whose expansion :data:`aprender.format.apr.MAX_DECOMPRESSED_RATIO` already
bounds) plus its metadata JSON. To load a trusted file past the budget, raise the one knob
first: ``aprender._budget.MAX_EXPANSION = None`` (no budget) or a larger factor.

The budget covers widening; parse costs per element are capped where the elements are
counted (``parse_json``'s node cap, the GGUF reader's array-item cap).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

from aprender.exceptions import LoadBudgetExceeded

__all__ = ["ALLOWANCE", "EXPANSION", "MAX_EXPANSION", "LoadBudget", "charge", "scope"]

#: Default bytes a load may widen into per byte of its source.
EXPANSION = 16
#: Bytes every load may widen into whatever its size (64 MiB): small files with real
#: vocabularies never come near it.
ALLOWANCE = 64 * 2**20
#: The one knob: the factor in force (read at each load); ``None`` turns the budget off.
MAX_EXPANSION: float | None = EXPANSION


class LoadBudget:
    """The bytes one load may still widen into.

    ``source_bytes`` is a function, called only once the charges pass :data:`ALLOWANCE`:
    measuring a large metadata tree is work most loads never need.
    """

    def __init__(self, source_bytes: Callable[[], int]) -> None:
        self._source_bytes = source_bytes
        self._factor = MAX_EXPANSION
        self._source: int | None = None
        self.used = 0

    def charge(self, nbytes: int, what: str, where: str) -> None:
        """Count ``nbytes`` about to be allocated for ``what`` at ``where``; raise past the budget."""
        self.used += nbytes
        if self._factor is None or self.used <= ALLOWANCE:
            return
        if self._source is None:
            self._source = self._source_bytes()
        limit = int(self._factor * self._source) + ALLOWANCE
        if self.used > limit:
            raise LoadBudgetExceeded(
                f"at '{where or '<model>'}': {what} would take {nbytes:,} bytes, bringing this load to "
                f"{self.used:,} bytes, past its budget of {limit:,} ({self._factor:g} x the file's "
                f"{self._source:,} bytes + {ALLOWANCE:,}); if you trust the file, set "
                "aprender._budget.MAX_EXPANSION = None (or a larger factor) before loading it")


_ACTIVE: contextvars.ContextVar[LoadBudget | None] = contextvars.ContextVar("aprender_load_budget", default=None)


@contextlib.contextmanager
def scope(source_bytes: Callable[[], int]) -> Iterator[LoadBudget]:
    """Run a load under one budget; a load nested in another (a sub-model) shares the outer one."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    budget = LoadBudget(source_bytes)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def charge(nbytes: int, what: str, where: str) -> None:
    """Charge the active load's budget (outside a load, e.g. decoding an in-memory state, nothing)."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.charge(nbytes, what, where)
