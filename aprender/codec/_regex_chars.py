"""The characters one item of a parsed regular expression can match, as sorted code-point intervals.

Used by :mod:`aprender.codec._regex_chains` to tell whether two repetitions can match the same
character. Every answer errs towards *more* characters: ``.`` includes the newline, ``\\w`` is
Unicode's (a superset of ``re.ASCII``'s) while ``\\W`` is the complement of ASCII's (a superset of
Unicode's), and under a case-insensitive flag a set holding any cased letter holds them all.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import numpy as np

__all__ = ["Chars", "chars_of", "meet"]

#: A set of code points: sorted, disjoint, non-adjacent ``(low, high)`` intervals, both ends included.
Chars = tuple[tuple[int, int], ...]

_TOP = 0x10FFFF
_ALL: Chars = ((0, _TOP),)
_ASCII: dict[str, Chars] = {"CATEGORY_DIGIT": ((48, 57),), "CATEGORY_SPACE": ((9, 13), (32, 32)),
                            "CATEGORY_WORD": ((48, 57), (65, 90), (95, 95), (97, 122))}
_UNICODE = {"CATEGORY_DIGIT": r"\d", "CATEGORY_SPACE": r"\s", "CATEGORY_WORD": r"\w"}


def _intervals(mask: np.ndarray) -> Chars:
    """The runs of ``True`` in a mask indexed by code point."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return tuple((int(lo), int(hi) - 1) for lo, hi in zip(edges[::2], edges[1::2], strict=True))


@cache
def _every_character() -> str:
    return np.arange(_TOP + 1, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@cache
def _matched_by(pattern: str) -> Chars:
    """Code points a one-character ``pattern`` matches, asked of ``re`` itself so the answer is its own."""
    return tuple((m.start(), m.end() - 1) for m in re.finditer(f"(?:{pattern})+", _every_character()))


@cache
def _cased() -> Chars:
    """Characters a case-insensitive match may equate with another."""
    mask = np.fromiter((chr(c).lower() != chr(c) or chr(c).upper() != chr(c) for c in range(_TOP + 1)),
                       dtype=bool, count=_TOP + 1)
    return _intervals(mask)


def union(*sets: Chars) -> Chars:
    """The characters of any of ``sets``."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(pair for chars in sets for pair in chars):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(merged)


def complement(chars: Chars) -> Chars:
    """The characters not in ``chars``."""
    out, start = [], 0
    for low, high in chars:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _TOP:
        out.append((start, _TOP))
    return tuple(out)


def meet(one: Chars, other: Chars) -> Chars:
    """The characters in both ``one`` and ``other``."""
    out, i, j = [], 0, 0
    while i < len(one) and j < len(other):
        low, high = max(one[i][0], other[j][0]), min(one[i][1], other[j][1])
        if low <= high:
            out.append((low, high))
        if one[i][1] < other[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def _category(name: str, wide: bool) -> Chars:
    negated = name.startswith("CATEGORY_NOT_")
    base = name.replace("_NOT_", "_")
    if base not in _UNICODE:  # the line-break categories: never produced for a str pattern
        return _ALL if wide else ()
    # re.ASCII's \w is a subset of Unicode's, so its \W a superset
    if negated:
        return complement(_matched_by(_UNICODE[base]) if not wide else _ASCII[base])
    return _matched_by(_UNICODE[base]) if wide else _ASCII[base]


def _item(name: str, arg: Any, wide: bool) -> Chars:
    """Every character ``(name, arg)`` can match and more if ``wide``, else only ones it surely matches."""
    if name == "LITERAL":
        return ((arg, arg),)
    if name == "NOT_LITERAL":
        return complement(((arg, arg),))
    if name == "RANGE":
        return ((arg[0], arg[1]),)
    if name == "CATEGORY":
        return _category(str(arg), wide)
    if name == "IN":
        negate = bool(arg) and str(arg[0][0]) == "NEGATE"
        members = union(*(_item(str(op), value, wide != negate) for op, value in arg[negate:]))
        return complement(members) if negate else members
    return _ALL if wide else ()  # ANY, and whatever else consumes a character


def chars_of(name: str, arg: Any, ignore_case: bool) -> Chars:
    """The characters the one-character item ``(name, arg)`` can match."""
    chars = _item(name, arg, True)
    if ignore_case and meet(chars, _cased()):
        return union(chars, _cased())
    return chars
