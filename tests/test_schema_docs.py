"""docs/schema/reference/ is what tools/gen_schema_docs.py writes from the registry today.

The pages are generated from the allow-list and from what each estimator's fitted
example stores, so a new class, a renamed tensor or a new metadata field changes them;
this test fails until they are regenerated (``python tools/gen_schema_docs.py``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import sklearn

import aprender

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "docs" / "schema" / "reference"


def _generated_with() -> str:
    match = re.search(r"from scikit-learn (\S+), aprender (\S+);", (PAGES / "README.md").read_text())
    assert match, "docs/schema/reference/README.md lacks its 'Generated ... from' line"
    return match.group(1)


def test_reference_pages_are_up_to_date() -> None:
    if _generated_with() != sklearn.__version__:
        pytest.skip(f"pages were generated under scikit-learn {_generated_with()}, running {sklearn.__version__}: "
                    "fitted state differs between versions (tests/test_compat.py covers loading across them)")
    # A fresh interpreter: the pages describe what a user's process stores, not what this
    # test process holds after other tests registered classes or used the shared instances.
    done = subprocess.run([sys.executable, str(REPO / "tools" / "gen_schema_docs.py"), "--check"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:] + "\nregenerate with: python tools/gen_schema_docs.py"


def test_every_documented_schema_class_has_a_section() -> None:
    from aprender.codec._registry import allow_list, public_key

    text = "\n".join(p.read_text() for p in PAGES.glob("*.md"))
    for entry in allow_list():
        if not entry.key.startswith(("aprender.", "sklearn.")):
            continue  # a class another test registered in this process
        parents = [f"`{public_key(t)}`" for t in entry.twins if t.__module__.startswith("sklearn.")]
        if entry.cls.__module__.endswith("._generated") and not any(p in text for p in parents):
            continue  # a generated namesake shares its parent's section; some parents have no example
        assert f"`{entry.key}`" in text, entry.key
    assert f"aprender {aprender.__version__};" in (PAGES / "README.md").read_text()
