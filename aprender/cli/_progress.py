"""A progress bar on stderr for work on large files (rich.progress).

The format backends read and write a file in one call, so the bar advances phase by
phase (read, quantize, write...) rather than byte by byte; it appears only for files
over :data:`LARGE` bytes unless ``--progress`` / ``--no-progress`` says otherwise.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

from aprender._display import printable

__all__ = ["LARGE", "phases"]

#: Files at least this large get a progress bar by default (100 MB).
LARGE = 100_000_000


@contextlib.contextmanager
def phases(total: int, size: int, enabled: bool | None) -> Iterator[Callable[[str], None]]:
    """Yield ``start(description)``: each call finishes the previous phase and names the next.

    ``enabled`` None shows the bar when ``size`` reaches :data:`LARGE`.
    """
    if not (enabled if enabled is not None else size >= LARGE):
        yield lambda _description: None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task("starting", total=total)
        started = False

        def start(description: str) -> None:
            nonlocal started
            # descriptions name files: text, never markup or controls
            progress.update(task, description=escape(printable(description)), advance=1 if started else 0)
            started = True

        yield start
        progress.update(task, description="done", completed=total)
