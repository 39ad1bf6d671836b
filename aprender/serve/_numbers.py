"""The one reading of a decimal number that a client or a repository folder supplies as text: a
length header, a version in a URL or a model id, a version folder's name.

``str.isdigit()`` accepts '²', the Arabic-Indic digits and every other Unicode digit, which ``int()``
then refuses or reads as another number, and ``int()`` refuses text of more than 4,300 digits: each is
an exception that is neither the client's error nor a folder the server skips. :func:`decimal` takes
ASCII digits only, and few enough of them for an int64; ``tests/test_serve_limits.py`` checks that no
other module of the server reads a number from text.
"""

from __future__ import annotations

__all__ = ["MAX_DIGITS", "decimal"]

#: 19 digits hold every number below 2**63 (numpy's index type, and any length the server can hold).
MAX_DIGITS = 19


def decimal(text: str) -> int | None:
    """``text`` as a non-negative integer if it is 1 to :data:`MAX_DIGITS` ASCII digits, else None.

    Examples
    --------
    >>> decimal("42"), decimal("²"), decimal("-1"), decimal("9" * 20)
    (42, None, None, None)
    """
    if 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit():
        return int(text)
    return None
