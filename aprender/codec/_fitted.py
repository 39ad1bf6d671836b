"""Fitted attributes are the names fits produce, and private flags hold the values fits leave.

The rule and how its table is learned: ``aprender/codec/_fitted_names.py`` and
tools/gen_fitted_names.py; docs/threat-model.md, "Fitted attributes".
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from aprender.codec._checks import fail
from aprender.codec._nodes import preview
from aprender.codec._registry import public_key

__all__ = ["INPUT_GATES", "MACHINE_STATE", "USER_SET", "check_fitted_flags", "check_fitted_names", "check_input_gates",
           "fitted_key", "machine_state"]

#: Instance attributes a user's own calls set on any estimator, fitted or not: ``set_fit_request``
#: (metadata routing), ``set_callbacks``, ``set_output`` and ``aprender.distill`` (the student's
#: provenance record). Their values are checked by their handlers (provenance is plain JSON).
USER_SET = frozenset(["_metadata_request", "_skl_callbacks", "_sklearn_output_config",
                      "provenance_"])  # aprender.distill's record on the student it fits


#: Fitted attributes scikit-learn's input validation (``validate_data(reset=False)``) compares the
#: caller's data with, and skips the comparison without: a k-neighbors model whose file leaves out
#: ``n_features_in_`` hands a query of any width to the pairwise-distance reductions, which read
#: ``_fit_X`` rows as that wide (a SIGSEGV on a 200,000-column query).
INPUT_GATES = ("n_features_in_",)

#: A fit that legitimately leaves no gate, and why the width is checked all the same: a neighbors
#: model fitted on a prebuilt KDTree/BallTree (scikit-learn sets the width from arrays only) queries
#: that tree, which compares the query's width with its own data.
_GATE_CHECKED_BY_TREE = ("kd_tree", "ball_tree")


#: Fitted attributes that describe the machine a model was fitted on, not the model, and size what
#: every later call starts on the loading machine: attribute -> the node tag the encoder writes for
#: it, which the decoder replaces by the loading machine's own value (``Decoder._n_threads``).
#: KMeans' ``_n_threads`` is the ``num_threads`` of its OpenMP loops in ``predict``, ``transform``,
#: ``score`` and ``partial_fit``: a 1 KB file stating 1,000 made libgomp abort the interpreter
#: ("Thread creation failed"), 100,000 was a SIGSEGV, and -5 made libgomp ask 927 GB and exit.
MACHINE_STATE: dict[str, str] = {"_n_threads": "n_threads"}


def machine_state(attrs: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """``attrs`` (undecoded nodes) with every attribute of :data:`MACHINE_STATE` standing for the loading machine's.

    Files written before the encoder wrote the tag hold the fitting machine's count as a plain int,
    which is never used either; any other value is a ``FormatError``.
    """
    found = [name for name in MACHINE_STATE if name in attrs]
    if not found:
        return attrs
    out = dict(attrs)
    for name in found:
        node = {"__t__": MACHINE_STATE[name]}
        if out[name] != node and type(out[name]) is not int:
            raise fail(path, f"'{name}' is the loading machine's, stored as {node}, found {preview(out[name])}")
        out[name] = node
    return out


@functools.lru_cache(maxsize=1024)
def _fitted_table(cls: type) -> tuple[frozenset[str] | None, dict[str, tuple[bool, ...]]]:
    """The fitted names and boolean flags real fits of ``cls`` leave, under the scikit-learn they were learned on.

    Under another minor release the class may write other names, so nothing is known:
    ``(None, {})``, and only the other rules apply (docs/threat-model.md says so).
    """
    import sklearn

    from aprender.codec import _fitted_names as table

    if ".".join(sklearn.__version__.split(".")[:2]) != table.SKLEARN:
        return None, {}
    key = fitted_key(cls)
    return table.NAMES.get(key), table.FLAGS.get(key, {})


def fitted_key(cls: type) -> str:
    """The key ``cls``'s fitted names are learned under: an aprender namesake's are its scikit-learn parent's."""
    for base in cls.__mro__:
        if base.__module__.startswith("sklearn.") and base.__name__ == cls.__name__:
            cls = base
            break
    return public_key(cls)


def check_fitted_names(cls: type, names: Any, path: str) -> None:
    """Every fitted attribute name is one that fitting ``cls`` leaves behind (``_fitted_names.py``).

    A flag that scikit-learn sets only while fitting (``_in_fit``) makes the estimator
    skip its input validation; no file may set it. Classes a user registers, and classes
    under a scikit-learn release the table was not learned on, have no list.
    """
    known, _ = _fitted_table(cls)
    if known is None:
        return
    for name in names:
        if name not in known and name not in USER_SET:
            raise fail(path, f"'{name}' is not an attribute that fitting {cls.__name__} leaves: fits of it never "
                             f"produce one, and scikit-learn may read it to skip a check")


def check_fitted_flags(cls: type, attrs: Mapping[str, Any], path: str) -> None:
    """Private boolean flags hold a value that real fits leave (``FLAGS`` of ``_fitted_names.py``)."""
    _, flags = _fitted_table(cls)
    for name, allowed in flags.items():
        if name in attrs and (type(attrs[name]) is not bool or attrs[name] not in allowed):
            raise fail(path, f"'{name}' is {preview(attrs[name])}; fits of {cls.__name__} leave it "
                             f"{' or '.join(map(str, allowed))}")


def check_input_gates(cls: type, attrs: Mapping[str, Any], path: str) -> None:
    """A fitted estimator whose state reaches compiled code holds every :data:`INPUT_GATES` name its fits leave.

    The classes are those of the compiled-code audit (``schemas/_compiled.py``: ``COMPILED``
    and ``NESTED``); elsewhere an unchecked width reaches NumPy, which raises.
    """
    from aprender.codec.schemas._compiled import COMPILED, NESTED

    key = fitted_key(cls)
    known, _ = _fitted_table(cls)
    audited = key in COMPILED or key in NESTED
    if known is None or not audited or attrs.get("_fit_method") in _GATE_CHECKED_BY_TREE:
        return
    missing = [name for name in INPUT_GATES if name in known and name not in attrs]
    if missing:
        raise fail(path, f"fitted attribute '{missing[0]}' is missing: fits of {cls.__name__} leave it, and without "
                         "it scikit-learn does not check the width of the data given to compiled code")
