"""Model work under a bound: a load and warm-up that cannot stall the server, and the threads model calls run in.

A model file can be valid in every byte and still describe work without end (a hyperparameter
sizing a loop, a transform that allocates without limit). Python threads cannot be killed, so
the server never *waits* on such work without a bound:

* :func:`run_bounded` runs a load and warm-up in a thread of its own and waits for it at most
  ``seconds``, watching the process's resident memory grow meanwhile. Past either bound it gives
  up (:class:`Exceeded`): the caller marks the model failed and goes on, and the thread is
  *abandoned*: :class:`Abandoned` is raised in it asynchronously, which ends it at its next Python
  bytecode (a single long C call finishes first). The normal path costs one thread start and a
  poll of ``/proc/self/statm`` every 50 ms.
* :class:`Lane` is the thread one batcher's model calls run in, in order: a model whose call
  never returns holds its own lane only, never the event loop's shared thread pool, which
  loads, request parsing and the other models need.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Abandoned", "Exceeded", "Lane", "join_abandoned", "rss", "run_bounded"]

T = TypeVar("T")
#: Seconds between two looks at the memory of the process while bounded work runs.
_POLL = 0.05
#: Seconds a lane's thread waits for work before it ends (it restarts on the next call).
_IDLE = 30.0
#: Threads abandoned and not yet seen to end.
_abandoned: set[threading.Thread] = set()


class Exceeded(Exception):
    """Bounded work ran past its time or memory bound and was abandoned; the message says which."""


class Abandoned(BaseException):
    """Raised inside an abandoned thread to end it (a BaseException: model code catching
    ``Exception``, as the warm-up does, must not swallow it)."""


def rss() -> int | None:
    """Resident memory of this process in bytes, or None where ``/proc`` does not tell it."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _abandon(thread: threading.Thread) -> None:
    """Raise :class:`Abandoned` in ``thread`` at its next bytecode (CPython's only way to stop a thread)."""
    if thread.ident is not None and thread.is_alive():
        _abandoned.add(thread)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(Abandoned))


def join_abandoned(seconds: float) -> list[str]:
    """Wait up to ``seconds`` for the abandoned threads to end; the names of those still running.

    Before ``--workers`` forks: a thread still running may hold a lock (the import lock, a logging
    handler's) that each forked worker would then find held forever.
    """
    deadline = time.monotonic() + seconds
    for thread in list(_abandoned):
        thread.join(max(0.0, deadline - time.monotonic()))
        if not thread.is_alive():
            _abandoned.discard(thread)
    return sorted(t.name for t in _abandoned)


async def run_bounded(fn: Callable[..., T], *args: Any, seconds: float | None, memory: int | None,
                      what: str) -> T:
    """``fn(*args)`` in a new daemon thread, awaited at most ``seconds`` and while the process grew by
    at most ``memory`` bytes (None: no bound).

    Raises
    ------
    Exceeded
        Past a bound: the thread is abandoned (see the module's docstring); ``what`` names the work.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[Any, BaseException | None]] = loop.create_future()

    def settle(outcome: tuple[Any, BaseException | None]) -> None:
        if not done.done():
            done.set_result(outcome)

    def target() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (fn(*args), None)
        except Abandoned:
            return
        except BaseException as exc:  # handed to the awaiting coroutine, which re-raises it
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the event loop closed meanwhile
            loop.call_soon_threadsafe(settle, outcome)

    base = rss() if memory is not None else None
    thread = threading.Thread(target=target, name=f"aprender-bounded: {what}", daemon=True)
    thread.start()
    deadline = None if seconds is None else loop.time() + seconds
    try:
        while not done.done():
            step = _POLL if base is not None else None
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise Exceeded(f"{what} did not finish within {seconds:g} s; abandoned")
                step = left if step is None else min(step, left)
            await asyncio.wait([done], timeout=step)
            grown = None if base is None or done.done() else (rss() or base) - base
            if grown is not None and memory is not None and grown > memory:
                raise Exceeded(f"{what} grew the server's memory by {grown >> 20} MiB, over its bound of "
                               f"{memory >> 20} MiB; abandoned")
    except BaseException:  # over a bound, or the server stops: the work is not waited for
        _abandon(thread)
        raise
    result, error = done.result()
    if error is not None:
        raise error
    return result


class Lane:
    """One thread running a batcher's model calls in order, started on the first call and ended after
    ``_IDLE`` seconds without one.

    Examples
    --------
    >>> import asyncio
    >>> asyncio.run(Lane("doc").call(lambda x: 2 * x, 21))
    42
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    async def call(self, fn: Callable[[Any], T], arg: Any) -> T:
        """``fn(arg)`` in the lane's thread, once the calls before it are done."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._jobs.put((loop, future, fn, arg))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=f"aprender-lane: {self.name}", daemon=True)
                self._thread.start()
        return await future

    def _serve(self) -> None:
        while True:
            try:
                loop, future, fn, arg = self._jobs.get(timeout=_IDLE)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._thread = None
                        return
                continue
            try:
                outcome = (fn(arg), None)
            except Exception as exc:  # the caller's to raise
                outcome = (None, exc)
            with contextlib.suppress(RuntimeError):  # the event loop closed meanwhile
                loop.call_soon_threadsafe(_settle, future, outcome)


def _settle(future: asyncio.Future[Any], outcome: tuple[Any, BaseException | None]) -> None:
    if future.done():  # the caller went away
        return
    result, error = outcome
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
