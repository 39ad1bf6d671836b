"""The codec: estimator <-> :class:`ModelState`, the one form every file format stores.

Writing walks a fitted estimator into named tensors plus a JSON metadata tree
(``_encode``); reading checks every node of that tree and rebuilds the estimator
through the allow-list (``_decode``, ``_registry``). ``handlers`` holds one module per
kind of non-JSON value, ``schemas`` one module per estimator family (stable tensor
names, quantizable weights, load-time validators); a handler may use a schema's
checks, never the reverse, and ``trees`` stores decision trees for both. Nothing here
reads or writes bytes.

Examples
--------
>>> from aprender.codec import from_state, to_state
>>> from aprender.linear_model import LinearRegression
>>> lr = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> from_state(to_state(lr)).predict([[2.0]])
array([5.])
"""

from typing import TYPE_CHECKING

from aprender._lazy import lazy_attributes

if TYPE_CHECKING:
    from aprender.codec._model_type import ModelType
    from aprender.codec._registry import allow_list, register_estimator
    from aprender.codec._spec import Entry, Spec
    from aprender.codec._state import SCHEMA_VERSION, ModelState, canonical_json, from_state, parse_json, to_state

__all__ = [
    "SCHEMA_VERSION",
    "Entry",
    "ModelState",
    "ModelType",
    "Spec",
    "allow_list",
    "canonical_json",
    "from_state",
    "parse_json",
    "register_estimator",
    "to_state",
]

# Imported on first use: ``aprender.codec._model_type`` (what a file header names) comes
# without the encoder and decoder. ``registered`` is the deprecated older name of ``allow_list``.
__getattr__, __dir__ = lazy_attributes("aprender.codec", {
    "_model_type": ["ModelType"],
    "_registry": ["allow_list", "register_estimator", "registered"],
    "_spec": ["Entry", "Spec"],
    "_state": ["SCHEMA_VERSION", "ModelState", "canonical_json", "from_state", "parse_json", "to_state"],
}, ["handlers", "schemas"])
