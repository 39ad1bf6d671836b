"""Every script in examples/ runs and says what it did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))
#: Examples that train something large read this and use a small size.
QUICK = {**os.environ, "APRENDER_EXAMPLE_QUICK": "1"}


def test_examples_exist() -> None:
    assert any(p.name == "quickstart.py" for p in EXAMPLES)


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    # examples may leave files where they run (the quickstart does, for the CLI): never in the repo
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env=QUICK)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "an example must print what it did"
