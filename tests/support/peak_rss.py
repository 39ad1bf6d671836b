"""Run loads one after another in one fresh interpreter and measure how far each raises the peak RSS.

A hostile file must be refused before it allocates what its header claims; the peak resident
set (``VmHWM``) is what the kernel charged, so it also catches allocations a Python-level
counter would miss.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

__all__ = ["peak_growths"]

ROOT = Path(__file__).resolve().parents[2]

_RUNNER = textwrap.dedent("""
    import json, sys
    import aprender, aprender.exceptions, gguf, sklearn.pipeline  # imports are not what a load allocates
    from aprender.format import apr, gguf, safetensors

    def hwm():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM"))

    results = {}
    for path, load in json.loads(sys.argv[1]).items():
        before = hwm()
        try:
            eval(load)
            error = None
        except Exception as exc:
            error = [type(exc).__name__, isinstance(exc, aprender.exceptions.AprenderError), str(exc)]
        results[path] = {"error": error, "growth": hwm() - before}
    print(json.dumps(results))
""")


def peak_growths(loads: dict[str, str], timeout: float = 300) -> dict[str, dict[str, Any]]:
    """Path -> its load's error and peak growth, for ``loads`` (path -> a Python expression of ``path``).

    The error is ``[class name, whether an AprenderError, message]`` or None; the growth is how
    far the load raised the peak RSS (bytes) above the peak before it.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(loads)], capture_output=True, text=True,
                         env=env, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])
