"""Shared helpers for the benchmark scripts: timing medians and the README table.

Each benchmark owns one section of benchmarks/README.md, delimited by
``<!-- NAME:start -->`` and ``<!-- NAME:end -->``, and rewrites only that section.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

README = Path(__file__).with_name("README.md")


def median_seconds(fn: Callable[[], object], repeat: int, *, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs (``setup`` runs untimed before each)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}"
    )


def write_section(name: str, markdown: str) -> None:
    """Replace the ``name`` section of benchmarks/README.md (appending it if new)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = README.read_text() if README.exists() else "# Benchmarks\n"
    block = f"{start}\n{markdown.strip()}\n{end}"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        _, after = rest.split(end, 1)
        text = before + block + after
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    README.write_text(text)
