"""The one rule for every regular expression a file stores: a selector's pattern, a
vectorizer's ``token_pattern``, an NgramLm's pattern, any regex-valued hyperparameter.

A pattern is bounded to :data:`MAX_PATTERN` characters, must compile, and may not nest a
variable repetition (``*``, ``+``, ``?``, ``{m,n}``) inside a repetition or repeat an
alternation, the shapes whose backtracking grows exponentially with the subject's length,
nor refer back to a group (``(a*)\1*b``: a backreference repeats whatever its group
matched, nesting the group's repetition where no parse tree shows it); it holds at most
:data:`MAX_REPETITIONS` variable repetitions, optional ones included (``a?`` thirty times before
``a`` thirty times backtracks 2**30 ways), which bounds the polynomial kind (docs/threat-model.md).
A pattern that runs on text of any length (a ``token_pattern``, on a request's documents) may
also not hold two repetitions that backtrack into each other (``\\w+\\w+x``, n**3 steps on an
n-letter word; :mod:`aprender.codec._regex_chains`); a column selector's pattern runs only on the
column names of the user's own data, short strings, where that bound is enough.
The pattern runs on text the file's maker does not see (column names, documents), so a
bad one is refused at load, not at the first ``transform``.
"""

from __future__ import annotations

import re
from typing import Any

from aprender.codec._nodes import preview
from aprender.codec._regex_chains import chained_repetitions

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - older Pythons
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = ["MAX_PATTERN", "MAX_REPETITIONS", "check_pattern"]

#: Longest pattern stored or loaded, in characters.
MAX_PATTERN = 512
#: Most variable repetitions (``*``, ``+``, ``?``, ``{m,n}`` with m < n) in a pattern: ``a*a*...a*b``
#: with k of them backtracks in time of the k-th power of a subject's length (30 of them hang on a
#: 25-character name), and k optional ones try 2**k ways at each position.
MAX_REPETITIONS = 4


_REPEATS = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
#: Nodes that match what an earlier group matched: the language is no longer regular.
_BACKREFERENCES = ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE")


def _parts(name: str, arg: Any) -> list[Any]:
    """The sub-patterns of one node of a ``re`` parse tree."""
    if name in _REPEATS:
        return [arg[2]]
    if name == "BRANCH":
        return list(arg[1])
    if name == "SUBPATTERN":
        return [arg[-1]]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [arg[1]]
    if name == "GROUPREF_EXISTS":
        return [part for part in arg[1:] if part is not None]
    if name == "ATOMIC_GROUP":
        return [arg]
    return []


def _varies(name: str, arg: Any) -> bool:
    """Whether node ``name`` is a repetition matching a variable number of times (``?`` included)."""
    return name in _REPEATS and arg[0] < arg[1]


def _nested_repeat(parsed: Any, inside_repeat: bool) -> str | None:
    """Why ``parsed`` (a ``re`` parse tree) could backtrack exponentially, or ``None``."""
    for op, arg in parsed:
        name = str(op)
        if name in _BACKREFERENCES:
            return "it refers back to a group, which repeats the group's match where no repetition shows"
        repeats = name in _REPEATS and arg[1] > 1
        if _varies(name, arg) and inside_repeat:
            return "it nests a repetition inside another"
        if name == "BRANCH" and inside_repeat:
            return "it repeats an alternation"
        for part in _parts(name, arg):
            why = _nested_repeat(part, inside_repeat or repeats)
            if why is not None:
                return why
    return None


def _repetitions(parsed: Any) -> int:
    """How many variable repetitions (``?`` included) ``parsed`` holds, anywhere in it."""
    return sum(_varies(str(op), arg) + sum(_repetitions(part) for part in _parts(str(op), arg))
               for op, arg in parsed)


def check_pattern(pattern: object, *, on_text: bool = True) -> str | None:
    """Why ``pattern`` may not be a stored regular expression, or ``None`` if it may.

    Parameters
    ----------
    pattern : object
        The value a file stores as a regular expression.
    on_text : bool, default=True
        Whether the pattern runs on text of any length (a request's documents), where side-by-side
        repetitions that backtrack into each other (:mod:`aprender.codec._regex_chains`) are refused
        too. ``False`` for a pattern that only ever runs on short strings the user chose (a column
        selector's, on the column names of the user's own data).

    Returns
    -------
    str or None
        Why the pattern is refused, or ``None``.
    """
    if type(pattern) is not str:
        return f"a pattern must be a string, found {type(pattern).__name__}"
    if len(pattern) > MAX_PATTERN:
        return f"a pattern is at most {MAX_PATTERN} characters, found {len(pattern)}"
    try:
        re.compile(pattern)
        parsed = _sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"pattern {preview(pattern, 60)} is not a valid regular expression ({exc})"
    why = _nested_repeat(parsed, False)
    if why is not None:
        return (f"pattern {preview(pattern, 60)} could take time exponential in a subject's length: {why}")
    count = _repetitions(parsed)
    if count > MAX_REPETITIONS:
        return (f"pattern {preview(pattern, 60)} holds {count} repetitions, at most {MAX_REPETITIONS}: k of them "
                "side by side can take time of the k-th power of a subject's length (or 2**k for optional ones)")
    pair = chained_repetitions(parsed) if on_text else None
    if pair is not None:
        return (f"pattern {preview(pattern, 60)} could take time of a high power of a text's length: its "
                f"repetitions {pair[0]} and {pair[1]} can match the same characters, one after the other, with a "
                "failing match after them, so each start tries every split between them (make the characters "
                "they match disjoint, put a character neither matches between them, or join them into one)")
    return None
