"""Side-by-side repetitions that backtrack into each other are refused where a pattern runs on text.

``aprender/codec/_regex_chains.py`` holds the rule; tools/regex_worst_case.py measures the slowest
pattern it accepts (docs/threat-model.md quotes the numbers).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aprender.codec._regex import check_pattern
from aprender.codec._regex_chains import CONSTANT_BUDGET, LINEAR_BUDGET, LONG
from aprender.feature_extraction.text import HashingVectorizer, TfidfVectorizer
from aprender.text import NgramLm
from tests.support.state_edit import find, hostile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from regex_worst_case import subjects, timed

TEXTS = ["the cat sat", "a dog ran far", "the dog sat on a mat", "cats and dogs"]

#: Patterns real users write (scikit-learn's defaults, its docs and gallery, common tutorials).
REAL = [
    r"(?u)\b\w\w+\b", r"(?u)\b\w+\b", r"\b\w+\b", r"\S+", r"[a-zA-Z]{2,}", r"(?u)\b[a-z]{3,}\b",
    r"\b\w[\w'-]*\b", r"[^\s]+", r"(?u)\w+|[^\w\s]", r"\b[^\d\W]+\b", r"(?u)\b\w+(?:'\w+)?\b",
    r"[A-Za-z]+|\d+", r"#\w+", r"\b\d{1,3}(?:,\d{3})*\b", "city", "^num_", "_cat$", ".*income.*",
]


@pytest.mark.parametrize("pattern", REAL)
def test_real_patterns_are_accepted(pattern):
    assert check_pattern(pattern) is None


@pytest.mark.parametrize(("pattern", "first", "second"), [
    (r"\w+\w+x", r"\w+", r"\w+"),  # 15 s on one 2,000-letter word
    ("(?=a*a*a*a*b)", "a*", "a*"),  # inside a lookaround; did not finish on 300 letters
    (r"\w+?\w+?x", r"\w+", r"\w+"),  # lazy repetitions backtrack the same way
    (r".*ab.*x", ".*", ".*"),  # literals between that both can match do not separate them
    (r"^.*income.*$", ".*", ".*"),  # on a document, $ can fail after a newline
    # a lookaround runs again at every position a repetition before it gives back (found by
    # tools/regex_worst_case.py: 0.2 s on 300 characters)
    (r"\S{2,}(?=1{2,}[^a]\s*a{2,})", r"\S{2,}", "1{2,}"),
    (r"\w+(?!.*x)", r"\w+", ".*"),
    (r"(?:\w+|-)\w+x", r"\w+", r"\w+"),  # through one branch of an alternation
    (r"(?:\w+)?\w+x", r"\w+", r"\w+"),  # through an optional group
    (r"(\w+)\w*(x)", r"\w+", r"\w*"),  # through capturing groups
    (r"[a-c]+[b-d]+x", "[...]+", "[...]+"),  # ranges that overlap
    (r"\d+\w+x", r"\d+", r"\w+"),  # a category inside another
    (r"[^a]+[^b]+a", "[^...]+", "[^...]+"),  # negations
    (r"(?i)[a-z]+K+x", "[...]+", "K+"),  # case-insensitive: K is k
    (r"[a-z]+(?i:K)+x", "[...]+", "K+"),  # a scoped case-insensitive flag
    (r"\s+\s{2,}x", r"\s+", r"\s{2,}"),
    (r"\w+(?>\w+)x", r"\w+", r"\w+"),  # an atomic group runs again at every position before it
    (r".*x\w{1000}", ".*", r"\w{1000}"),  # a large fixed count scans as far as an unbounded one
    (r"\w{0,8}\w+x", r"\w{0,8}", r"\w+"),  # nine choices, each a scan of the text: 2.4 s on 10,000 letters
    (r"\w{0,3}\w+x", r"\w{0,3}", r"\w+"),  # four scans of the text per start: 3 s on 10,000 letters
    # short, but 16**4 steps per start: 2.6 s on 2,000 letters
    (r"\w{1,16}\w{1,16}\w{1,16}\w{1,16}x", r"\w{1,16}", r"\w{1,16}"),
])
def test_chained_repetitions_are_refused(pattern, first, second):
    why = check_pattern(pattern)
    assert why is not None and f"repetitions {first} and {second}" in why, why
    assert "can match the same characters" in why


@pytest.mark.parametrize("pattern", [
    r"\w+-\w+x",  # the first cannot run past a -, the second cannot reach one
    r".+-\w+x",  # \w+ stops at the next -: each split scans its own stretch
    r"[a-z]+[A-Z]+x", r"\d+\s+\d+x", r"[ab]+[cd]+x",  # disjoint characters
    r".*income.*", r"\w+\w*",  # nothing after the second can fail
    r"(?=\w+)\w+x",  # a lookaround is atomic: nothing backtracks into it
    r"(?!.*x.*)", r"\w+(?=.*)", r"a+(?=b*x)",
    r"\w?\w+x", r"\d{1,3}\d{1,3}x",  # within the budgets
    r"\w++\w+x", r"(?>\w+)\w+x",  # possessive and atomic: the first gives nothing back
])
def test_separated_or_harmless_repetitions_are_accepted(pattern):
    assert check_pattern(pattern) is None


def test_column_selector_patterns_keep_the_name_rule():
    """A selector's pattern runs on column names, not documents: chains stay allowed, nesting does not."""
    assert check_pattern(r"^.*income.*$", on_text=False) is None
    assert check_pattern(r"^(\w+)_(\d+)_(\w+)_(\d+)$", on_text=False) is None
    assert check_pattern(r"^(\w+)_(\d+)_(\w+)_(\d+)$") is not None
    assert "nests a repetition" in check_pattern("^(a+)+$", on_text=False)


@pytest.mark.parametrize("model", [
    TfidfVectorizer().fit(TEXTS), HashingVectorizer(), NgramLm(n=2).fit(TEXTS),
], ids=["tfidf", "hashing", "ngram"])
def test_every_token_pattern_is_checked_at_load(model, tmp_path):
    def chain(meta, tensors):
        find(meta, type(model).__name__, fitted=False)["params"]["token_pattern"] = r"\w+\w+x"

    err = hostile(model, chain, tmp_path)
    assert "token_pattern" in str(err) and r"repetitions \w+ and \w+" in str(err)


def test_worst_case_tool_times_and_stops_a_stall():
    assert all(len(text) == 50 and text.endswith("!") for text in subjects(r"\w+x", 50))
    times = timed([r"\w+x", "(a+)+$"], 200, timeout=3.0)
    assert times[r"\w+x"] < 3.0 and times["(a+)+$"] == float("inf")


def test_threat_model_states_the_budgets_in_force():
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "threat-model.md").read_text().split())
    assert f"more than {LONG} characters counts as unbounded" in text
    assert f"at most {CONSTANT_BUDGET:,} steps per start" in text
    assert f"at most {LINEAR_BUDGET} scans" in text
