"""Adaptive batching: rows of concurrent requests merged into one call of the model.

A :class:`Batcher` serves one (model, version, output set). A request finding it idle is
dispatched at once, so a lone client never waits for a window; requests arriving while a call
runs queue up and go together in the next call, up to ``max_batch_size`` rows (a request with
more rows goes alone), optionally waiting up to ``max_batch_time`` seconds from the first queued
request for more rows. Results are split back per request. If a merged call fails, its requests
are rerun one by one so that a bad input fails only itself.

The queue is bounded, in requests: a request is refused (:class:`Overloaded`, at once, before it
waits for anything) when ``max_queue`` requests are already waiting *and* their rows already fill
the next call (``max_batch_size`` rows). A request that still fits in the next call is never
refused, so a queue bound below the batch size cannot cut the batches short.

The wait is bounded too: a request not answered within ``timeout`` seconds gets :class:`TimedOut`
(and leaves the queue if it was still waiting). Model calls run in the batcher's own thread
(:class:`~aprender.serve._bounded.Lane`), so a call that never returns stalls only its own model.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from aprender.serve._bounded import Lane
from aprender.serve._inputs import Frame

__all__ = ["Batcher", "Overloaded", "TimedOut"]

Outputs = dict[str, np.ndarray]


class Overloaded(Exception):
    """The batcher's queue is full; the client should retry later."""


class TimedOut(Exception):
    """A request was not answered within the batcher's ``timeout``."""


@dataclass(eq=False)  # compared by identity: the queue removes a request that timed out
class _Pending:
    X: Any
    future: asyncio.Future[Outputs]
    queued_at: float


class Batcher:
    """Merge concurrent requests' rows into calls of ``run``.

    Parameters
    ----------
    run : callable
        ``run(X) -> {output name: array with one leading row per row of X}``; called in a thread.
    max_batch_size : int
        Most rows merged into one call (1: no merging, requests still queue in order).
    max_batch_time : float
        Seconds to wait for more rows, from the first queued request, before a call that is
        not full; 0 dispatches whatever is queued as soon as the model is free.
    max_queue : int
        Most requests waiting beyond those that fit in the next call: one more, when the waiting rows
        already fill a call, raises :class:`Overloaded`.
    on_batch : callable, optional
        ``on_batch(rows)`` after each call, for metrics.
    inline_rows : int
        Calls of at most this many rows run on the event loop itself, for a model whose calls take
        microseconds per row (a thread would wait for the event loop's GIL at every release, up to
        its 5 ms switch interval each time); larger calls, and every call if 0, run in the batcher's
        thread.
    timeout : float, optional
        Seconds a request waits for its outputs, queued and computed, before :class:`TimedOut`.

    Examples
    --------
    >>> import asyncio, numpy as np
    >>> batcher = Batcher(lambda X: {"double": 2 * X}, max_batch_size=8, max_batch_time=0.0, max_queue=4)
    >>> asyncio.run(batcher.submit(np.array([[1.0], [2.0]])))["double"].ravel().tolist()
    [2.0, 4.0]
    """

    def __init__(self, run: Callable[[np.ndarray], Outputs], max_batch_size: int, max_batch_time: float,
                 max_queue: int, on_batch: Callable[[int], None] | None = None, inline_rows: int = 0,
                 timeout: float | None = None) -> None:
        self._run = run
        self.timeout = timeout
        self._lane = Lane(getattr(run, "__qualname__", "model"))
        self.inline_rows = inline_rows
        self.max_batch_size = max(1, max_batch_size)
        self.max_batch_time = max_batch_time
        self.max_queue = max_queue
        self._on_batch = on_batch
        self._queue: deque[_Pending] = deque()
        self._rows = 0  # rows waiting
        self._worker: asyncio.Task[None] | None = None
        self._arrived: asyncio.Event | None = None

    @property
    def queued(self) -> int:
        """Requests waiting for a call."""
        return len(self._queue)

    @property
    def full(self) -> bool:
        """Whether a request arriving now is refused: ``max_queue`` requests wait and fill the next call."""
        return len(self._queue) >= self.max_queue and self._rows >= self.max_batch_size

    async def submit(self, X: np.ndarray) -> Outputs:
        """Queue ``X`` (a 2-D array, 1-D documents or a :class:`~aprender.serve._inputs.Frame`); wait for its outputs.

        Raises :class:`Overloaded` on a full queue, :class:`TimedOut` past ``timeout``.
        """
        if self.full:
            raise Overloaded(f"{len(self._queue)} requests ({self._rows} rows) already waiting")
        loop = asyncio.get_running_loop()
        pending = _Pending(X, loop.create_future(), time.monotonic())
        self._queue.append(pending)
        self._rows += len(X)
        if self._arrived is not None:
            self._arrived.set()
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._drain())
        if self.timeout is None:
            return await pending.future
        try:
            # shielded: the batch this request is part of goes on for the others in it
            return await asyncio.wait_for(asyncio.shield(pending.future), self.timeout)
        except TimeoutError:
            if pending in self._queue:  # never computed for nobody
                self._queue.remove(pending)
                self._rows -= len(X)
            raise TimedOut(f"no answer within {self.timeout:g} s") from None

    async def _wait_for_rows(self) -> None:
        """Wait until ``max_batch_size`` rows are queued or ``max_batch_time`` has passed."""
        deadline = self._queue[0].queued_at + self.max_batch_time
        self._arrived = asyncio.Event()
        try:
            while self._rows < self.max_batch_size and (left := deadline - time.monotonic()) > 0:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), left)
                except TimeoutError:
                    break
        finally:
            self._arrived = None

    def _take(self) -> list[_Pending]:
        """The next batch: queued requests of the first one's dtype, up to max_batch_size rows."""
        batch = [self._queue.popleft()]
        rows = len(batch[0].X)
        while self._queue:
            nxt = self._queue[0]
            if not _same_kind(nxt.X, batch[0].X) or rows + len(nxt.X) > self.max_batch_size:
                break
            batch.append(self._queue.popleft())
            rows += len(nxt.X)
        self._rows -= rows
        return batch

    async def _drain(self) -> None:
        first = True
        while self._queue:
            if not first:
                if self.max_batch_time > 0 and self.max_batch_size > 1:
                    await self._wait_for_rows()
                else:
                    await asyncio.sleep(0)  # after a call on the event loop, let it serve the others
            first = False
            await self._execute(self._take())

    async def _call(self, X: np.ndarray) -> Outputs:
        if len(X) <= self.inline_rows:
            return self._run(X)
        return await self._lane.call(self._run, X)

    async def _execute(self, batch: list[_Pending]) -> None:
        rows = sum(len(p.X) for p in batch)
        if self._on_batch is not None:
            self._on_batch(rows)
        try:
            X = batch[0].X if len(batch) == 1 else _concat([p.X for p in batch])
            outputs = await self._call(X)
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0].future, exception=exc)
                return
            for pending in batch:  # one bad input fails only itself
                try:
                    _settle(pending.future, await self._call(pending.X))
                except Exception as single:
                    _settle(pending.future, exception=single)
            return
        start = 0
        for pending in batch:
            stop = start + len(pending.X)
            _settle(pending.future, {name: value[start:stop] for name, value in outputs.items()})
            start = stop


def _same_kind(a: Any, b: Any) -> bool:
    """Whether two inputs can go in one call: arrays of one dtype, or frames of the same columns and dtypes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.ndim == b.ndim
    return isinstance(a, Frame) and isinstance(b, Frame) and a.kind() == b.kind()


def _concat(parts: list[Any]) -> Any:
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return Frame.concat(parts)


def _settle(future: asyncio.Future[Outputs], result: Outputs | None = None, *,
            exception: BaseException | None = None) -> None:
    if future.done():  # the client went away
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)
