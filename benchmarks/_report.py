"""Shared helpers for the benchmark scripts: timing medians and the README table.

Each benchmark owns one section of benchmarks/README.md, delimited by
``<!-- NAME:start -->`` and ``<!-- NAME:end -->``, and rewrites only that section.
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).with_name("README.md")
#: The project README: its benchmark summary is a section these scripts rewrite too.
TOP_README = Path(__file__).parent.parent / "README.md"


@dataclass(frozen=True)
class Timing:
    """Median, fastest and slowest of repeated runs, in seconds."""

    median: float
    min: float
    max: float

    def spread(self) -> str:
        """``min-max`` in the unit that suits the median."""
        return f"{fmt_time(self.min)}-{fmt_time(self.max)}"


def fmt_time(seconds: float) -> str:
    """``0.000123`` -> ``'123 µs'``; ms and s as they fit."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def shuffled_rounds(names: Sequence[str], repeat: int) -> Iterator[list[str]]:
    """``repeat`` rounds, each of every name once, in a fresh seeded order.

    Running A, B, C, then C, A, B, ... spreads machine noise (another process, a
    frequency change, a cold cache) over every contender instead of over whichever
    ran during it. The order is shuffled, not rotated: a rotation keeps every
    contender right after the same neighbour, so one that leaves the allocator or
    caches in a bad state (skops, say) would always tax the same successor.
    The seed is fixed, so two runs time the same orders.
    """
    order = random.Random(0)
    for _ in range(repeat):
        yield order.sample(list(names), len(names))


def interleaved(
    runs: Mapping[str, Callable[[], object]], repeat: int, *, setup: Callable[[str], object] | None = None
) -> dict[str, Timing]:
    """Time every run ``repeat`` times, interleaved in :func:`shuffled_rounds`.

    ``setup(name)`` runs untimed before each timed call.
    """
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in shuffled_rounds(names, repeat):
        for name in round_:
            if setup is not None:
                setup(name)
            start = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - start)
    return {name: Timing(statistics.median(t), min(t), max(t)) for name, t in times.items()}


def machine() -> str:
    """One line describing the machine the numbers came from."""
    import numpy as np
    import sklearn

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}; "
        f"1-minute load average {os.getloadavg()[0]:.1f} when the run started (other work on the machine)"
    )


def write_section(name: str, markdown: str, readme: Path = README) -> None:
    """Replace the ``name`` section of ``readme`` (benchmarks/README.md; appended if new)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = readme.read_text() if readme.exists() else "# Benchmarks\n"
    block = f"{start}\n{markdown.strip()}\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text)
