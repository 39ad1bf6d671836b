"""tools/gen_namesakes.py, the generator of aprender's scikit-learn namesakes, for the tests that check them.

``namesake(cls)`` is the aprender class of a scikit-learn class, generated or hand-written.
"""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "gen_namesakes.py"
if str(SCRIPT.parent) not in sys.path:  # tools/ is not a package
    sys.path.insert(0, str(SCRIPT.parent))

import gen_namesakes as gen  # noqa: E402 -- found through the path entry above

__all__ = ["SCRIPT", "gen", "namesake"]

namesake = gen.namesake
