"""What saving refuses, and why: the reviewed list behind docs/estimators.md and docs/codec.md.

Saving raises :class:`~aprender.exceptions.UnsupportedTypeError`, naming the attribute,
for a value the codec cannot store without pickle or cannot rebuild from a table of its
own. Each entry here is one kind of such value as users meet it, with the reason and
what to do instead. tests/test_refused.py builds every entry and checks that saving it
is refused with a message that names it; tools/gen_refused.py writes the list into the
README and docs/codec.md, and the test fails while they differ.

Plain data: importing this module imports nothing.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["REFUSED", "Refused", "advice"]


class Refused(NamedTuple):
    """One kind of value that saving refuses (Markdown in every field)."""

    what: str
    reason: str
    instead: str
    #: The classes (``module.qualname``) this entry covers, so the error at save can say what to do.
    types: tuple[str, ...] = ()


#: id -> what saving refuses. The ids are the test ids of tests/test_refused.py.
REFUSED: dict[str, Refused] = {
    "lambda": Refused(
        "a lambda or nested function: `FunctionTransformer(func=lambda X: ...)`, a ColumnTransformer's callable "
        "columns, a vectorizer's `tokenizer=lambda s: ...`",
        "functions are code, stored by name only, and these have no unique name",
        "a module-level function (trusted at load with `trusted=[func]`), or "
        "`aprender.register_function(func, name=...)` before saving and before loading",
    ),
    "joblib-memory": Refused(
        "`Pipeline(memory=joblib.Memory(...))`",
        "a cache object; its folder holds pickles that a later `fit` would load",
        "`memory=None`, or a folder path, which a load accepts only with `trusted=['memory']`",
        ("joblib.memory.Memory",),
    ),
    "unregistered-class": Refused(
        "an estimator class that is neither scikit-learn's nor aprender's nor on the allow-list of a library's "
        "schema (your own, another library's; XGBoost's, LightGBM's and CatBoost's are listed: docs/boosting.md, "
        "docs/lightgbm.md, docs/catboost.md)",
        "classes are rebuilt only from the allow-list, never imported by a name a file holds",
        "`aprender.register_estimator(cls)` in every process that saves or loads it",
    ),
    "distribution-outside-table": Refused(
        "a `scipy.stats` distribution, frozen or not, outside the reviewed table (`rv_histogram`, a subclass of "
        "`rv_continuous` of your own, a distribution built with non-default settings)",
        "distributions are rebuilt by name from `DISTRIBUTIONS` (`aprender/codec/handlers/distributions.py`) with "
        "numeric parameters only",
        "one of the table's distributions (`uniform`, `loguniform`, `randint`, `norm`, `expon`, ...; docs/codec.md "
        "lists them), or a list of values",
    ),
    "selector-dtype-outside-table": Refused(
        "a `make_column_selector` dtype outside the reviewed table: a `CategoricalDtype` with its categories, "
        "a `DatetimeTZDtype`, a dtype object of another library",
        "dtypes are stored as names from `DTYPES` (`aprender/codec/handlers/column_selector.py`)",
        "a dtype name such as `\"category\"`, `\"datetimetz\"`, `\"number\"`, or a default pandas dtype instance",
    ),
    "selector-pattern-backtracks": Refused(
        "a `make_column_selector(pattern=...)` longer than 512 characters, that does not compile, that nests a "
        "repetition (`(a+)+`, `(a?){9}`), repeats an alternation (`(a|ab)*`), refers back to a group (`(a*)\\1*`) "
        "or holds more than 4 variable repetitions (`?` counts)",
        "such a pattern can take time exponential in a column name's length, or of a high power of it, when the "
        "loaded model is fitted again",
        "a pattern without nested repetition or backreference and with at most 4 repetitions (`^num_`, `_k$`, "
        "`^(age|income)`, `^f_\\d+$`)",
    ),
}


#: What a refusal of a value no entry covers says to do.
_GENERAL = ("aprender stores arrays, numbers, strings, lists, dicts, estimators of its allow-list and trusted "
            "functions, and rebuilds nothing else; for a class of your own, call aprender.register_estimator() "
            "on it; docs/estimators.md lists what saving refuses and what to do instead")


def advice(type_name: str) -> str:
    """Why a value of class ``type_name`` is refused at save, and what to do instead (plain text)."""
    for refused in REFUSED.values():
        if type_name in refused.types:
            return f"{refused.reason}; instead: {refused.instead}".replace("`", "")
    return _GENERAL
