"""The one rule for showing a string a file supplies: every character a terminal acts on is shown escaped.

A model file chooses its metadata, class names, tensor names, parameter values, GGUF keys and
ONNX graph strings. Printed raw, such a string is a program for the reader's terminal: OSC 52
(``ESC ] 52 ; c ; BASE64 BEL``) writes the clipboard, SGR 8 (``ESC [ 8 m``) hides what follows,
a C1 ``CSI`` (U+009B) starts a sequence without ESC, and a bidi override (U+202E) shows text in
an order other than the one it is read in. :func:`printable` writes every such character as the
escape Python's ``repr`` uses (``\\x1b``, ``\\x9b``, ``\\u202e``), so what is shown is what the
file holds, inert. The command line, the server and aprender's error messages all go through it.

rich markup (``[link=...]``) is a separate concern of the rich printer, handled where rich prints
(``aprender.cli._render``); this module imports nothing, so every layer may use it.
"""

from __future__ import annotations

import re
import traceback
import unicodedata

__all__ = ["MAX_MESSAGE_CHARS", "UNSAFE_CATEGORIES", "clip", "json_printable", "message", "printable",
           "traceback_text", "unsafe_characters"]

#: Unicode categories a terminal or a text renderer acts on rather than shows: controls (C0, DEL,
#: C1), format characters (bidi embeddings, overrides and isolates, zero-width joiners, the BOM),
#: line and paragraph separators, surrogates, private use and unassigned code points.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})

#: Characters of an error message or warning kept: a message quotes a file's names and values, and a
#: 5 MB tensor name made a 5 MB ``str(exc)`` that every log line, terminal and server error body repeated.
#: aprender's longest own messages (a list of a class's parameters) stay far inside.
MAX_MESSAGE_CHARS = 4096

# Only these characters need a category look-up: printable ASCII (names, numbers, paths) is safe as it is;
# in a JSON document, so are the newlines of indentation (inside a string json.dumps writes ``\\n``).
_SUSPECT = re.compile(r"[^\x20-\x7e]")
_JSON_SUSPECT = re.compile(r"[^\x20-\x7e\n]")


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def printable(text: object, keep: str = "") -> str:
    """``str(text)`` with every control, format, separator and unassigned character escaped.

    Parameters
    ----------
    text : object
        What to show; not a ``str`` is shown as ``str(text)``.
    keep : str, default ""
        Characters left as they are: ``"\\n"`` for a message aprender itself wrote on
        several lines. Never ESC, C1 or a bidi control: they are what this escapes.

    Returns
    -------
    str
        The text with each unsafe character written as ``\\xNN``, ``\\uNNNN`` or
        ``\\UNNNNNNNN``; printable characters of every script are kept.

    Examples
    --------
    >>> from aprender._display import printable
    >>> printable("name\\x1b]52;c;aGk=\\x07 \\u202eevil")
    'name\\\\x1b]52;c;aGk=\\\\x07 \\\\u202eevil'
    >>> printable("Ridge  \\u00e9t\\u00e9")
    'Ridge  été'
    """
    text = text if isinstance(text, str) else str(text)
    if text.isascii() and text.isprintable():  # the common case, at C speed
        return text
    return _SUSPECT.sub(lambda m: _escape(m[0]) if m[0] not in keep and _unsafe(m[0]) else m[0], text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to its first and last ``limit // 2`` characters, the cut saying how many it left out.

    Both ends are kept: a message names the file first and says what was wrong last.

    Examples
    --------
    >>> from aprender._display import clip
    >>> clip("tensor 'aaaaaaaaaaaaaaaa' is wrong", 16)
    "tensor '[... 18 characters cut ...]is wrong"
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}[... {len(text) - 2 * half:,} characters cut ...]{text[len(text) - half:]}"


def message(text: str) -> str:
    """An error message or warning as aprender shows it: cut to :data:`MAX_MESSAGE_CHARS`, then :func:`printable`.

    Line breaks are escaped too: aprender's messages are one line each, so a name a file chose
    (``"w\\nvalid: model.apr"``) cannot start a line of its own under ``invalid:`` or in a log.
    """
    return printable(clip(text, MAX_MESSAGE_CHARS))


#: How a traceback's own chunks begin: frames (file, line and source) and the chaining notes. Only their
#: line breaks are kept; every other chunk (an exception's message) is escaped whole, line breaks too.
_STRUCTURE = ("Traceback (most recent call last):", "  File ", "\nThe above exception", "\nDuring handling")


def traceback_text(exc: BaseException) -> str:
    """``exc``'s traceback as lines of inert text: each frame on its lines, each exception's message on one.

    A message may quote a file or a request (a third party's exception quoting a feature name), so it is
    escaped whole, newlines included: it cannot forge a line of the output it is written to.
    """
    chunks = traceback.format_exception(exc)
    return "\n".join(printable(chunk.rstrip("\n"), keep="\n" if chunk.startswith(_STRUCTURE) else "")
                     for chunk in chunks)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # JSON writes a code point above U+FFFF as a surrogate pair
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def json_printable(document: str) -> str:
    """A JSON text (from ``json.dumps``) with every unsafe character inside its strings as a ``\\u`` escape.

    ``json.dumps(..., ensure_ascii=False)`` escapes C0 controls but writes DEL, C1 controls and
    bidi overrides raw. The result parses to the same values; only the newlines of indentation
    (never inside a string, where ``json.dumps`` already wrote ``\\n``) stay as they are.

    Examples
    --------
    >>> import json
    >>> from aprender._display import json_printable
    >>> doc = json_printable(json.dumps({"name": "\\u202eevil\\x9b"}, ensure_ascii=False))
    >>> doc, json.loads(doc)["name"] == "\\u202eevil\\x9b"
    ('{"name": "\\\\u202eevil\\\\u009b"}', True)
    """
    return _JSON_SUSPECT.sub(lambda m: _json_escape(m[0]) if _unsafe(m[0]) else m[0], document)


def unsafe_characters(text: str) -> list[str]:
    """The characters of ``text`` that :func:`printable` escapes, in order (for tests and checks)."""
    return [ch for ch in text if _unsafe(ch)]
