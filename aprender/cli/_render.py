"""Output: rich tables for people, JSON for machines, one-line warnings on stderr.

Everything the command line prints goes through this module, and every text here goes
through :func:`aprender._display.printable` (controls, ESC, C1, bidi controls shown escaped)
and, where rich prints, ``rich.markup.escape``: what a file says is shown, never acted on by
the terminal or interpreted as markup. tests/test_cli_hostile_strings.py runs every command on
files whose strings are hostile.

rich is imported by the first table or line it renders, and numpy is never imported
here: a command that prints JSON or only says a line does not pay for what it does not use.
"""

from __future__ import annotations

import enum
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aprender._display import clip, json_printable, printable, traceback_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

__all__ = ["console", "echo", "echo_traceback", "emit_json", "json_safe", "kv_table", "number", "say", "short", "size",
           "table", "tree", "warn"]


#: Width of tables written to a pipe or file (rich's 80 columns fold tensor names).
_PIPE_WIDTH = 120

# A file chooses how many rows a table of it has and how long each cell is: rich took 113 s to lay out
# the 100,000 empty tensors of a 6.6 MB SafeTensors header, and a 2 MB tensor name printed 2.9 MB.
# What a person reads is bounded; ``--json`` lists everything, whole.
#: Rows of one table, or nodes of one tree, shown; a last row says how many more there are.
MAX_ROWS = 1000
#: Characters of one cell (a tensor name, a metadata key) shown; the cut says how many more there were.
MAX_CELL_CHARS = 1024


def _cell(value: Any) -> str:
    """A cell as shown: cut to :data:`MAX_CELL_CHARS`, unsafe characters escaped, markup shown literally."""
    from rich.markup import escape

    return escape(printable(clip(value if isinstance(value, str) else str(value), MAX_CELL_CHARS)))


def _shown(rows: Iterable[Any]) -> tuple[list[Any], int]:
    """The first :data:`MAX_ROWS` rows and how many were left out."""
    rows = list(rows)
    return rows[:MAX_ROWS], max(len(rows) - MAX_ROWS, 0)


def _more(hidden: int) -> str:
    return f"... {hidden:,} more not shown (--json lists them all)"


def console() -> Console:
    """A console on the current stdout (tests swap it), without syntax highlighting guesses."""
    from rich.console import Console

    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    return Console(highlight=False, emoji=False, width=None if wide else _PIPE_WIDTH)


def say(text: str, *, lines: bool = False) -> None:
    """Print a line of rich markup on stdout, never wrapped (callers escape markup in file names).

    A newline is escaped unless ``lines``: only aprender's own text (a key's two lines) may span
    lines, so a file's name printed in one cannot start a line of its own.
    """
    console().print(printable(text, keep="\n" if lines else ""), soft_wrap=True)


def echo(text: str, err: bool = True, *, lines: bool = False) -> None:
    """Print plain text (no markup), on stderr by default, with unsafe characters escaped (newlines unless
    ``lines``, as for :func:`say`)."""
    click.echo(printable(text, keep="\n" if lines else ""), err=err)


def echo_traceback(exc: BaseException) -> None:
    """``--debug``'s traceback on stderr: its frames on their lines, each message (which may quote a file) on one."""
    echo(traceback_text(exc), lines=True)


def warn(message: str) -> None:
    """One ``warning:`` line on stderr."""
    echo(f"warning: {printable(message)}")


def json_safe(value: Any) -> Any:
    """``value`` with tuples, paths, bytes, enums, numpy scalars and non-finite floats made JSON-able."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    np = sys.modules.get("numpy")  # a numpy scalar comes only from a process that imported numpy
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf": JSON has no literal for them
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Path):
        return str(value)
    return value


def emit_json(obj: Any) -> None:
    """Pretty, strict JSON on stdout."""
    click.echo(json_printable(json.dumps(json_safe(obj), indent=2, ensure_ascii=False, allow_nan=False)))


def size(n: int, exact: bool = False) -> str:
    """``1234`` -> ``'1.2 kB'``, or ``'1.2 kB (1,234 bytes)'`` when ``exact``."""
    from rich.filesize import decimal

    return f"{decimal(n)} ({n:,} bytes)" if exact and n >= 1000 else decimal(n)


def number(x: Any) -> str:
    """A statistic for a table cell."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def short(value: Any, width: int = 72) -> str:
    """One line for a table cell: a nested estimator by its class, anything else as compact JSON."""
    if isinstance(value, Mapping) and value.get("__t__") == "estimator":
        return f"{str(value.get('class', '?')).rsplit('.', 1)[-1]}(...)"
    text = value if isinstance(value, str) else json.dumps(json_safe(value), separators=(",", ":"),
                                                           ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def _title(title: str | None) -> str | None:
    """A table title as text: titles name files and quantization types, never markup."""
    return None if title is None else _cell(title)


def table(title: str | None, columns: Iterable[str], rows: Iterable[Iterable[Any]], *,
          right: Iterable[str] = ()) -> Table:
    """A table; columns named in ``right`` are right-aligned (numbers)."""
    from rich.table import Table

    right = set(right)
    shown, hidden = _shown(rows)
    cells = [[_cell(cell) for cell in row] for row in shown]
    columns = list(columns)
    if hidden:
        cells.append([_more(hidden)] + [""] * (len(columns) - 1))
    t = Table(title=_title(title), title_justify="left", title_style="bold")
    for i, name in enumerate(columns):
        # The first column names things (keys, tensors): keep it whole so it can be searched for.
        first = max((len(row[0]) for row in cells), default=0) if i == 0 else None
        t.add_column(name, justify="right" if name in right else "left", overflow="fold",
                     min_width=min(first, 64) if first else None)
    for row in cells:
        t.add_row(*row)
    return t


#: A node of :func:`tree`: its text, a dimmed note after it (or ""), and its children.
Branch = tuple[str, str, list]


def tree(title: str, root: Branch, footer: str = "") -> Any:
    """A titled tree of plain-text labels (escaped as table cells are), with an optional footer line."""
    from rich.console import Group
    from rich.markup import escape
    from rich.tree import Tree

    def label(branch: Branch) -> str:
        text, note, _ = branch
        note = f"  [dim]{_cell(note)}[/dim]" if note else ""
        return _cell(text) + note

    budget = [MAX_ROWS]  # nodes still shown, over the whole tree

    def grow(node: Tree, branch: Branch) -> None:
        for i, child in enumerate(branch[2]):
            if budget[0] <= 0:
                node.add(escape(_more(len(branch[2]) - i)))
                return
            budget[0] -= 1
            grow(node.add(label(child)), child)

    top = Tree(label(root), guide_style="dim")
    grow(top, root)
    parts: list[Any] = [f"[bold]{_title(title)}[/bold]", top]
    if footer:
        parts.append(_cell(footer))
    return Group(*parts)


def kv_table(title: str | None, rows: Iterable[tuple[str, Any]]) -> Table:
    """A two-column key/value table without a header."""
    from rich.table import Table

    t = Table(title=_title(title), title_justify="left", title_style="bold", show_header=False)
    t.add_column(style="bold")
    t.add_column(overflow="fold")
    shown, hidden = _shown(rows)
    for key, value in shown:
        t.add_row(_cell(key), _cell(value))
    if hidden:
        t.add_row(_more(hidden), "")
    return t
