"""What the scripts that write a generated table into hand-kept pages share: the block between two
marker comments, replaced in place, and a ``--check`` that writes nothing and fails on a stale page."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["cell", "main", "replace_block", "write_module"]


def cell(text: str) -> str:
    """``text`` for a Markdown table cell."""
    return text.replace("|", "\\|")


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with everything from ``begin`` to ``end`` (markers included) replaced by ``block``."""
    start, stop = text.index(begin), text.index(end) + len(end)
    return text[:start] + block + text[stop:]


def main(description: str, pages: Sequence[Path], render: Callable[[str], str], script: str) -> int:
    """Rewrite each page with ``render``; with ``--check``, write nothing and exit 1 naming stale pages."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date, writing nothing")
    args = parser.parse_args()
    stale = []
    for page in pages:
        text = page.read_text()
        new = render(text)
        if new != text:
            stale.append(page)
            if not args.check:
                page.write_text(new)
    if args.check and stale:
        print(f"out of date: {', '.join(p.name for p in stale)} (run python {script})", file=sys.stderr)
        return 1
    return 0


def write_module(path: Path, text: str) -> int:
    """Write a generated module, or with ``--check`` on the command line exit 1 while it differs."""
    if "--check" in sys.argv:
        return 0 if path.read_text() == text else 1
    path.write_text(text)
    return 0
