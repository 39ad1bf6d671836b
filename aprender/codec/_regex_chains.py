"""Side-by-side repetitions that backtrack into each other: the polynomial kind of slow pattern.

``\\w+\\w+x`` on a word of n letters without an ``x``: at each of n starts the first ``\\w+``
gives back one letter at a time, and for each split the second scans what is left, n**3
steps in all (15 s on one 2,000-letter word). Two repetitions *chain* when some character
can be matched by both and nothing between them must consume a character outside the
ones both match (``\\w+-\\w+x`` is safe: the first cannot run past a ``-`` and the second
cannot reach one). A chain's work per start is the product of the choices of its members
before the last, times what the last one scans; a repetition that can match more than
:data:`LONG` characters counts as n of each. A chain is refused when that work is n**2 or
more, more than :data:`LINEAR_BUDGET` times n, or more than :data:`CONSTANT_BUDGET` steps,
unless nothing after its last member can fail (``.*income.*``: once the second ``.*`` is
reached the match has succeeded, and no backtracking into the chain ever happens).
Lookarounds are atomic in ``re``: nothing after one backtracks into it, but it runs again at every
position a repetition before it gives back, so its body chains with those. Branches and optional
groups are followed on every path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from aprender.codec._regex_chars import Chars, chars_of, meet, union

__all__ = ["CONSTANT_BUDGET", "LINEAR_BUDGET", "LONG", "chained_repetitions"]

#: A repetition that can match more characters than this counts as unbounded.
LONG = 16
#: Most work per start, in multiples of the subject's length, of a chain of repetitions.
LINEAR_BUDGET = 2
#: Most steps per start of a chain of short repetitions.
CONSTANT_BUDGET = 4096

_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
_ATOMS = ("LITERAL", "NOT_LITERAL", "IN", "ANY")
_CATEGORIES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
               "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}


@dataclass(frozen=True, order=True)
class _Cost:
    """``factor * n ** power`` steps, n the subject's length."""

    power: int
    factor: int

    def __mul__(self, other: _Cost) -> _Cost:
        return _Cost(self.power + other.power, self.factor * other.factor)

    def too_much(self) -> bool:
        limit = {0: CONSTANT_BUDGET, 1: LINEAR_BUDGET}.get(self.power, 0)
        return self.factor > limit


@dataclass(frozen=True)
class _Open:
    """A repetition a later one may backtrack into, and what must be matched since it."""

    number: int
    shown: str
    chars: Chars
    choices: _Cost
    since: tuple[Chars, ...] = ()


def _show_item(name: str, arg: Any) -> str:
    if name == "SUBPATTERN" and len(arg[-1]) == 1:
        return _show_item(str(arg[-1][0][0]), arg[-1][0][1])
    if name == "SUBPATTERN":
        return "(...)"
    if name == "LITERAL":
        return re.escape(chr(arg))
    if name == "ANY":
        return "."
    if name == "IN" and len(arg) == 1 and str(arg[0][0]) == "CATEGORY":
        return _CATEGORIES.get(str(arg[0][1]), "[...]")
    if name == "IN" and len(arg) == 1 and str(arg[0][0]) == "LITERAL":
        return re.escape(chr(arg[0][1]))
    return "[^...]" if name == "NOT_LITERAL" or (name == "IN" and str(arg[0][0]) == "NEGATE") else "[...]"


def _show(low: int, high: int, body: Any) -> str:
    """A repetition as a pattern would write it (character classes abridged)."""
    items = list(body)
    inner = _show_item(str(items[0][0]), items[0][1]) if len(items) == 1 else "(...)"
    if high >= 0xFFFFFFFF:
        count = {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    else:
        count = "?" if (low, high) == (0, 1) else f"{{{low}}}" if low == high else f"{{{low},{high}}}"
    return inner + count


def _never_fails(name: str, arg: Any) -> bool:
    """Whether node ``name`` always matches (possibly nothing), so cannot make a match backtrack."""
    if name in _REPEATS:
        return arg[0] == 0
    if name == "SUBPATTERN":
        return all(_never_fails(str(op), a) for op, a in arg[-1])
    if name == "BRANCH":
        return any(all(_never_fails(str(op), a) for op, a in alt) for alt in arg[1])
    return False


class _Walk:
    """One pass over a parse tree, left to right, carrying the repetitions still open."""

    def __init__(self) -> None:
        self.made = 0
        #: The lookarounds the walk is inside: the last repetition opened before each, and whether
        #: the match surely succeeds once it has.
        self.lookarounds: list[tuple[int, bool]] = []
        self.found: tuple[str, str] | None = None

    def sequence(self, parsed: Any, open_: list[_Open], safe: bool, ignore_case: bool) -> list[_Open]:
        items = [(str(op), arg) for op, arg in parsed]
        safe_after = [safe] * (len(items) + 1)
        for i in range(len(items) - 1, -1, -1):
            safe_after[i] = safe_after[i + 1] and _never_fails(*items[i])
        for i, (name, arg) in enumerate(items):
            open_ = self.item(name, arg, open_, safe_after[i + 1], ignore_case)
        return open_

    def item(self, name: str, arg: Any, open_: list[_Open], safe: bool, ignore_case: bool) -> list[_Open]:
        if name in _ATOMS:
            if not open_:  # nothing to separate: spare working out the characters
                return open_
            chars = chars_of(name, arg, ignore_case)
            return [replace(o, since=(*o.since, chars)) for o in open_]
        if name in ("ASSERT", "ASSERT_NOT"):
            # Atomic: nothing after it backtracks into it, so what its body opens stays inside. But it
            # runs again at every position a repetition before it gives back, so its body chains with
            # those, and such a chain may count on nothing failing only if nothing after it can.
            self.lookarounds.append((self.made, safe and name == "ASSERT"))
            self.sequence(arg[1], open_, True, ignore_case)
            self.lookarounds.pop()
            return open_
        if name == "SUBPATTERN":
            return self.sequence(arg[-1], open_, safe, ignore_case or bool(arg[1] & re.IGNORECASE))
        if name == "ATOMIC_GROUP":  # gives nothing back once matched: what opens inside stays inside
            before = self.made
            return [o for o in self.sequence(arg, open_, safe, ignore_case) if o.number <= before]
        if name == "BRANCH":
            return _merge([self.sequence(alt, open_, safe, ignore_case) for alt in arg[1]])
        if name in _REPEATS:
            low, high, body = arg
            if high <= 1:
                taken = self.sequence(body, open_, safe, ignore_case)
                return _merge([taken, open_]) if low == 0 else taken
            opened = self.repeat(low, high, body, open_, safe, ignore_case)
            return opened[:-1] if name == "POSSESSIVE_REPEAT" else opened  # gives nothing back
        return open_  # anchors and \b consume nothing

    def repeat(self, low: int, high: int, body: Any, open_: list[_Open], safe: bool,
               ignore_case: bool) -> list[_Open]:
        chars, first = _chars(body, ignore_case), _first(body, ignore_case)
        shown = _show(low, high, body)
        choices = _Cost(1, 1) if high - low >= LONG else _Cost(0, high - low + 1)
        scan = _Cost(1, 1) if high > LONG else _Cost(0, high)
        chained = [o for o in open_ if _chains(o, chars, first)]
        if chained:
            costliest = max(chained, key=lambda o: o.choices)
            safe = safe and all(ok for before, ok in self.lookarounds if costliest.number <= before)
            if (costliest.choices * scan).too_much() and not (safe and low <= LONG) and self.found is None:
                self.found = (costliest.shown, shown)
            choices = costliest.choices * choices
        if low >= 1:
            open_ = self.sequence(body, open_, False, ignore_case)
        self.made += 1
        return [*open_, _Open(self.made, shown, chars, choices)]


def _chars(parsed: Any, ignore_case: bool) -> Chars:
    """Every character a repetition's body can consume."""
    found: list[Chars] = []
    for op, arg in parsed:
        name = str(op)
        if name in _ATOMS:
            found.append(chars_of(name, arg, ignore_case))
        elif name == "SUBPATTERN":
            found.append(_chars(arg[-1], ignore_case or bool(arg[1] & re.IGNORECASE)))
        elif name in _REPEATS:
            found.append(_chars(arg[2], ignore_case))
        elif name == "ATOMIC_GROUP":
            found.append(_chars(arg, ignore_case))
    return union(*found)


def _first(parsed: Any, ignore_case: bool) -> Chars:
    """The characters a repetition's body can start with."""
    found: list[Chars] = []
    for op, arg in parsed:
        name = str(op)
        if name in _ATOMS:
            return union(*found, chars_of(name, arg, ignore_case))
        if name == "SUBPATTERN":
            found.append(_first(arg[-1], ignore_case or bool(arg[1] & re.IGNORECASE)))
            if not all(_never_fails(str(o), a) for o, a in arg[-1]):
                return union(*found)
        elif name in _REPEATS:
            found.append(_first(arg[2], ignore_case))
            if arg[0] >= 1:
                return union(*found)
        elif name not in ("AT", "ASSERT", "ASSERT_NOT"):
            return union(*found, _chars(((op, arg),), ignore_case))
    return union(*found)


def _chains(opened: _Open, chars: Chars, first: Chars) -> bool:
    """Whether a repetition of ``chars`` starting with ``first`` can backtrack into ``opened``: a
    character both match, every item since ``opened`` can consume one of those, and, with nothing
    between, it can start where ``opened`` could go on (else ``opened`` stops where it starts)."""
    both = meet(opened.chars, chars)
    if opened.since:
        return bool(both) and all(meet(since, both) for since in opened.since)
    return bool(both) and bool(meet(opened.chars, first))


def _merge(paths: list[list[_Open]]) -> list[_Open]:
    """The repetitions open after any of ``paths``; one reached on several keeps only what all of them
    had to match since it (its common prefix), which errs towards chaining."""
    merged: dict[int, _Open] = {}
    for path in paths:
        for o in path:
            seen = merged.get(o.number)
            if seen is None:
                merged[o.number] = o
                continue
            common = 0
            while common < min(len(seen.since), len(o.since)) and seen.since[common] is o.since[common]:
                common += 1
            merged[o.number] = replace(seen, choices=max(seen.choices, o.choices), since=seen.since[:common])
    return list(merged.values())


def _repeats(parsed: Any) -> int:
    """How many repetitions of more than one item ``parsed`` holds, anywhere in it."""
    count = 0
    for op, arg in parsed:
        name = str(op)
        if name in _REPEATS:
            count += (arg[1] > 1) + _repeats(arg[2])
        elif name == "BRANCH":
            count += sum(_repeats(alt) for alt in arg[1])
        elif name in ("SUBPATTERN", "ASSERT", "ASSERT_NOT"):
            count += _repeats(arg[-1])
        elif name == "ATOMIC_GROUP":
            count += _repeats(arg)
    return count


def chained_repetitions(parsed: Any) -> tuple[str, str] | None:
    """The first two repetitions of ``parsed`` (a ``re`` parse tree) that backtrack into each other
    too much, as written, or ``None``."""
    if _repeats(parsed) < 2:  # scikit-learn's default and most real patterns: no pair to look at
        return None
    ignore_case = bool(parsed.state.flags & re.IGNORECASE)
    walk = _Walk()
    walk.sequence(parsed, [], True, ignore_case)
    return walk.found
