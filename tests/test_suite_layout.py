"""The test suite's own layout: helpers live in tests/support/, and no test module imports another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_no_test_module_imports_another() -> None:
    modules = sorted(TESTS.glob("test_*.py")) + sorted((TESTS / "support").glob("*.py"))
    offenders = {p.name: sorted(n for n in _imported(p) if n.startswith("test_")) for p in modules}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_helpers_live_in_support() -> None:
    loose = sorted(p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_") and p.name != "conftest.py")
    assert loose == []
