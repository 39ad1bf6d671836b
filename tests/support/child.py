"""Load crafted files and use the models in one child process, so a crash fails a test instead of pytest.

Each case is a file path and the Python statements that use the loaded model ``m``. The
answer for a case is ``"AprenderError: ..."`` when the load refuses the file, ``"USED"``
when the statements ran, or ``"USED, raised <Type>: ..."`` when they raised. A child that
dies (a segfault in compiled code) fails the calling test with its exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

__all__ = ["load_and_use"]

_RUNNER = """
import json, sys
import aprender
from aprender.exceptions import AprenderError
out = {}
for case, (path, use) in json.loads(sys.argv[1]).items():
    try:
        m = aprender.load(path)
    except AprenderError as exc:
        out[case] = f"AprenderError: {exc}"
        continue
    try:
        exec(use)
    except Exception as exc:
        out[case] = f"USED, raised {type(exc).__name__}: {exc}"
    else:
        out[case] = "USED"
print(json.dumps(out))
"""


def load_and_use(cases: dict[str, tuple[str, str]], setup: str = "") -> dict[str, str]:
    """Case -> outcome for ``cases`` (case -> (path, statements using ``m``)), after ``setup`` has run
    in the child (the inputs the statements use)."""
    code = textwrap.dedent(setup) + _RUNNER
    done = subprocess.run([sys.executable, "-c", code, json.dumps(cases)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"child died with {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
