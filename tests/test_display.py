"""aprender._display: the one rule for showing what a file says, and the server's JSON bodies that follow it."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

from aprender._display import json_printable, printable, unsafe_characters
from aprender.serve._errors import HTTPError
from aprender.serve._http import dumps, error_reply

HOSTILE = "\x1b]52;c;SGFja2Vk\x07\x1b[8m\u202e\x9b[2J\x7f\u2066[link=http://x]L[/link]"


@pytest.mark.parametrize("ch", ["\x00", "\t", "\r", "\x1b", "\x7f", "\x85", "\x9b", "\u200b", "\u200e", "\u202a",
                                "\u202e", "\u2028", "\u2066", "\ufeff", "\U000e0001", "\ue000", "\U0010fffd"])
def test_printable_escapes_each_kind(ch) -> None:
    shown = printable(f"a{ch}b")
    assert not unsafe_characters(shown) and shown.startswith("a\\") and shown.endswith("b")
    assert json.loads(json_printable(json.dumps(f"a{ch}b", ensure_ascii=False))) == f"a{ch}b"


def test_printable_keeps_scripts_and_plain_text() -> None:
    for text in ("LinearRegression", "coef_ 1.5e-3 [x]", "été Ελληνικά 日本語 עברית 🙂", "C:\\models\\a.apr"):
        assert printable(text) == text


def test_server_bodies_are_inert_and_parse_to_the_same_values() -> None:
    content = {"metadata": {HOSTILE: [HOSTILE]}, "classes": np.array(["a", HOSTILE], dtype=object)}
    body = dumps(content).decode()
    assert not unsafe_characters(body)
    assert orjson.loads(body) == {"metadata": {HOSTILE: [HOSTILE]}, "classes": ["a", HOSTILE]}
    reply = error_reply(HTTPError(400, f"bad input: {HOSTILE}"))
    assert not unsafe_characters(bytes(reply.body).decode()) and HOSTILE in orjson.loads(reply.body)["error"]


def test_numeric_bodies_are_untouched() -> None:
    values = np.linspace(-1, 1, 1000)
    assert dumps({"predictions": values}) == orjson.dumps({"predictions": values}, option=orjson.OPT_SERIALIZE_NUMPY)


def test_escaping_is_idempotent_and_survives_pickling() -> None:
    """An error re-raised in another process (serve's workers) is rebuilt from its escaped args unchanged."""
    import pickle

    from aprender.exceptions import FormatError

    assert printable(printable(HOSTILE)) == printable(HOSTILE)
    exc = FormatError(f"at '{HOSTILE}': bad")
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)
