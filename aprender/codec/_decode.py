"""(tensors, metadata tree) -> estimator. The reading half of the codec.

Input here comes from files that may be hostile. Every tagged node is checked against
the declaration of its fields (:data:`BUILTIN_FIELDS` for the codec's own tags, each
handler's ``fields`` for the others) in one place, :func:`check_fields`, before any code
reads it: a field of the wrong JSON type, a missing or an undeclared field, or an
integer outside int64/uint64 is refused. Classes come only from the registry, and any
inconsistency raises :class:`FormatError` naming the path where it was found.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender import _budget
from aprender._limits import MAX_INT, MIN_INT, checked_shape
from aprender.codec import handlers as _handlers
from aprender.codec._agreements import check_agreements
from aprender.codec._checks import check_attr_name, check_sizes, fail
from aprender.codec._contracts import check_contract
from aprender.codec._fitted import (
    check_fitted_flags,
    check_fitted_names,
    check_input_gates,
    fitted_key,
    machine_state,
)
from aprender.codec._nodes import MAX_DEPTH, PY_TYPES, join, preview
from aprender.codec._out_widths import check_output_width, check_unbacked_names
from aprender.codec._param_rules import check_params
from aprender.codec._registry import entry_for_key
from aprender.codec._warm_start import guard_warm_start
from aprender.codec.handlers._base import ANY, NULL, TENSOR, Fields
from aprender.codec.trust import NONE, PARAM_RULES, Trust
from aprender.exceptions import (
    AprenderError,
    FormatError,
    InferenceOnlyError,
    ReadOnlyModelError,
    UntrustedParameterError,
)

if TYPE_CHECKING:
    from aprender.codec._migrations import Plan
    from aprender.codec._spec import Entry

__all__ = ["BUILTIN_FIELDS", "Decoder", "check_fields"]

_SCALAR_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"]
)
_WIDEN_TO = frozenset(["float64", "float32", "float16"])
_STR_DTYPE = re.compile(r"^[<>|=]?U(\d{1,7})$")
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_PY_SCALARS = {"float": float, "int": int, "bool": bool}
_BOOL = np.dtype(np.bool_)
#: JSON values that decode to themselves (an int is range-checked, so it is not among them).
_PLAIN = frozenset([str, float, bool, type(None)])


_OPT_STR = (str, NULL)
#: The fields of the codec's own tags (handlers declare theirs in ``Handler.fields``).
BUILTIN_FIELDS: dict[str, Fields] = {
    "tensor": {"name": (str,), "dtype": _OPT_STR, "order": _OPT_STR, "scalar": _OPT_STR},
    "float": {"v": (str,)},
    "scalar": {"dtype": (str,), "v": (bool, int, float, str)},
    "tuple": {"v": (list,)},
    "dict": {"items": (list,)},
    "strarray": {"dtype": (str,), "shape": (list,), "v": (list,)},
    "objarray": {"shape": (list,), "v": (list,)},
    "type": {"v": (str,)},
    "n_threads": {},
    "estimator": {"class": (str,), "params": (dict,), "attrs": (dict,), "dropped": (list, NULL)},
}


def check_int(value: int, path: str) -> int:
    """A JSON integer from a file, bounded to what int64 or uint64 can hold."""
    if not MIN_INT <= value <= MAX_INT:
        raise fail(path, f"integer {str(value)[:40]}... is outside the int64/uint64 range")
    return value


def check_fields(node: Mapping[str, Any], tag: str, fields: Fields, path: str) -> None:
    """Check a ``tag`` node read from a file against the declaration of its fields."""
    present = 0
    for name, value in node.items():
        kinds = fields.get(name)
        if kinds is None:
            if name == "__t__":
                continue
            raise fail(path, f"'{tag}' node has an unknown field {preview(name, 40)}")
        present += 1
        if kinds is not ANY and type(value) not in kinds:
            wanted = " or ".join("null" if k is NULL else k.__name__ for k in kinds)
            raise fail(path, f"'{tag}' field '{name}' must be {wanted}, found {type(value).__name__}")
        if type(value) is int and not MIN_INT <= value <= MAX_INT:
            check_int(value, join(path, name))
        if kinds is TENSOR and value.get("__t__") != "tensor":
            raise fail(path, f"'{tag}' field '{name}' must be a tensor reference")
    if present == len(fields):  # every name was declared, each at most once: none is missing
        return
    for name, kinds in fields.items():
        if name not in node and NULL not in kinds:
            raise fail(path, f"'{tag}' node lacks its field '{name}'")


def _shape(node: Mapping[str, Any], path: str) -> tuple[int, ...]:
    return checked_shape(node["shape"], f"at '{path or '<model>'}'")


def _count(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


class Decoder:
    """Rebuilds values from metadata nodes and a dict of tensors, checking each one."""

    def __init__(self, tensors: Mapping[str, np.ndarray], migrations: Plan | None = None, trust: Trust = NONE) -> None:
        self.tensors = tensors
        self.used: set[str] = set()
        self.migrations = migrations
        #: What the caller trusts beyond the defaults (``trusted=`` of the load).
        self.trust = trust

    def finish(self) -> None:
        """Every tensor in the file must have been referenced exactly once."""
        if len(self.used) == len(self.tensors):  # used only holds names of tensors: the sets are equal
            return
        unused = sorted(set(self.tensors) - self.used)
        if unused:
            more = f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""
            raise FormatError(f"tensor '{unused[0]}'{more} is not referenced by the model metadata")

    def tensor(self, node: Mapping[str, Any], path: str) -> Any:
        """Resolve a tensor reference node (its ``__t__`` is ``"tensor"``: callers dispatch on it)."""
        name = node.get("name")
        # The usual reference is {"__t__": "tensor", "name": str}: with two fields, a str name
        # and the tag known, no other field can be there, and there is nothing more to read.
        plain = len(node) == 2 and type(name) is str
        if not plain:
            check_fields(node, "tensor", BUILTIN_FIELDS["tensor"], path)
        array = self.tensors.get(name)
        if array is None:
            raise fail(path, f"missing tensor '{name}'")
        if name in self.used:
            raise fail(path, f"tensor '{name}' is referenced twice")
        self.used.add(name)
        if array.dtype == _BOOL and array.size and array.view(np.uint8).max() > 1:
            # No producer writes another byte; numpy reads any nonzero one as True, compiled code
            # taking the mask as bytes may test it for 1. Every format is held to what numpy writes.
            raise fail(path, f"bool tensor '{name}' holds bytes other than 0 and 1")
        if plain:
            return array
        original = node.get("dtype")
        if original is not None:
            if original not in _WIDEN_TO or array.dtype.itemsize >= np.dtype(original).itemsize:
                raise fail(path, f"tensor '{name}' cannot be restored to dtype {preview(original)}")
            # At most 4x (float16 -> float64): inside the budget's factor, charged all the same.
            _budget.charge(array.size * np.dtype(original).itemsize, f"tensor '{name}' widened to {original}", path)
            array = array.astype(original)
        order = node.get("order")
        if order == "F":
            array = np.asfortranarray(array)
        elif order is not None:
            raise fail(path, f"unknown memory order {preview(order)}")
        scalar = node.get("scalar")
        if scalar is None:
            return array
        if array.shape != (1,):
            raise fail(path, f"tensor '{name}' must have shape [1], found {list(array.shape)}")
        if scalar == "numpy":
            return array[0]
        if scalar in _PY_SCALARS:
            return _PY_SCALARS[scalar](array[0].item())
        raise fail(path, f"unknown scalar kind {preview(scalar)}")

    def value(self, node: Any, path: str, depth: int) -> Any:
        """Decode any node found at ``path``."""
        if depth > MAX_DEPTH:
            raise fail(path, f"values nested deeper than {MAX_DEPTH} levels")
        if type(node) is int:
            return check_int(node, path)
        if node is None or type(node) in (bool, float, str):
            return node
        if type(node) is list:
            return [self.value(v, join(path, i), depth + 1) for i, v in enumerate(node)]
        if type(node) is not dict:
            raise fail(path, f"unexpected JSON value of type {type(node).__name__}")
        tag = node.get("__t__")
        builtin = _TAG_METHODS.get(tag) if isinstance(tag, str) else None
        if builtin is not None:
            method, fields = builtin
            if fields is not None:
                check_fields(node, tag, fields, path)
            return method(self, node, path, depth)
        handler = _handlers.for_tag(tag) if isinstance(tag, str) else None
        if handler is None:
            raise fail(path, f"unknown value tag {preview(tag, 80)}")
        check_fields(node, tag, handler.fields, path)
        return handler.decode(node, self, path)

    def _tuple(self, node: Mapping[str, Any], path: str, depth: int) -> tuple:
        items = node["v"]
        # As in the encoder, a (name, estimator, ...) tuple's estimator is located by its name: steps.0.scaler
        named = len(items) >= 2 and type(items[0]) is str and isinstance(items[1], dict) \
            and items[1].get("__t__") == "estimator"
        return tuple(self.value(v, join(path, items[0] if named and i == 1 else i), depth + 1)
                     for i, v in enumerate(items))

    def _dict(self, node: Mapping[str, Any], path: str, depth: int) -> dict:
        items = node["items"]
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise fail(path, "'dict' node needs 'items' as a list of [key, value] pairs")
        if all(type(key) is str for key, _ in items):
            # Keyed like an object (a forest's packed trees are such dicts, of dozens of items): its
            # fast path applies. A repeated key keeps its last value, as below; what an earlier one
            # named goes unread, so a tensor it referenced fails the check that every tensor is used.
            return self._fields(dict(items), path, depth + 1)
        out = {}
        for key_node, value_node in items:
            key = self.value(key_node, path, depth + 1)
            try:
                hash(key)
            except TypeError:
                raise fail(path, f"unhashable dict key of type {type(key).__name__}") from None
            out[key] = self.value(value_node, join(path, key), depth + 1)
        return out

    def _float(self, node: Mapping[str, Any], path: str, depth: int) -> float:
        v = node["v"]
        if v not in _NON_FINITE:
            raise fail(path, f"invalid non-finite float {preview(v)}")
        return _NON_FINITE[v]

    def _scalar(self, node: Mapping[str, Any], path: str, depth: int) -> np.generic:
        dtype, v = node["dtype"], node["v"]
        if dtype not in _SCALAR_DTYPES:
            raise fail(path, f"unsupported scalar dtype {preview(dtype)}")
        if isinstance(v, str) and v in _NON_FINITE and dtype.startswith("float"):
            v = _NON_FINITE[v]
        if type(v) not in (bool, int, float):
            raise fail(path, f"scalar value {preview(v)} is not a number")
        try:
            return np.dtype(dtype).type(v)
        except (OverflowError, ValueError, TypeError) as exc:
            raise fail(path, f"scalar {preview(v)} does not fit {dtype}: {exc}") from None

    def _strarray(self, node: Mapping[str, Any], path: str, depth: int) -> np.ndarray:
        shape, values, dtype = _shape(node, path), node["v"], node["dtype"]
        match = _STR_DTYPE.match(dtype)
        if match is None:
            raise fail(path, f"invalid string dtype {preview(dtype)}")
        if _count(shape) != len(values) or not all(type(s) is str for s in values):
            raise fail(path, f"string array of shape {list(shape)} needs {_count(shape)} strings")
        longest = max((len(s) for s in values), default=0)
        if int(match.group(1)) > max(longest, 1024):
            raise fail(path, f"string dtype {dtype} is wider than its contents")
        # One itemsize for every element: one long string widens all the short ones.
        _budget.charge(np.dtype(dtype).itemsize * len(values), f"string array {dtype}[{len(values)}]", path)
        return np.array(values, dtype=dtype).reshape(shape)

    def _objarray(self, node: Mapping[str, Any], path: str, depth: int) -> np.ndarray:
        shape, values = _shape(node, path), node["v"]
        if _count(shape) != len(values):
            raise fail(path, f"object array of shape {list(shape)} needs {_count(shape)} values")
        _budget.charge(8 * len(values), f"object array of {len(values)} values", path)
        out = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            out[i] = self.value(v, join(path, i), depth + 1)
        return out.reshape(shape)

    def _type(self, node: Mapping[str, Any], path: str, depth: int) -> type:
        v = node["v"]
        if v in PY_TYPES:
            return PY_TYPES[v]
        if isinstance(v, str) and v.startswith("numpy.") and v[6:] in _SCALAR_DTYPES:
            return np.dtype(v[6:]).type
        raise fail(path, f"type {preview(v, 80)} is not allowed")

    def _n_threads(self, node: Mapping[str, Any], path: str, depth: int) -> int:
        from sklearn.utils._openmp_helpers import _openmp_effective_n_threads

        if not path.endswith("_n_threads"):
            raise fail(path, "an 'n_threads' node may only stand for a '_n_threads' attribute")
        return _openmp_effective_n_threads()

    def _tensor(self, node: Mapping[str, Any], path: str, depth: int) -> Any:
        return self.tensor(node, path)

    def _estimator(self, node: Mapping[str, Any], path: str, depth: int) -> Any:
        return self.estimator(node, path, depth=depth)

    def _fields(self, nodes: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        """:meth:`value` of each item of a ``params`` or ``attrs`` object, at depth ``depth``.

        Most items are plain JSON scalars, which :meth:`value` returns as they are (ints once
        they are in range), or tensor references: those are taken directly, and the path of
        an item is built only for the others.
        """
        prefix = f"{path}." if path else ""
        if depth > MAX_DEPTH:  # value() refuses every item
            return {k: self.value(v, prefix + k, depth) for k, v in nodes.items()}
        out = {}
        for k, v in nodes.items():
            kind = type(v)
            if kind in _PLAIN or (kind is int and MIN_INT <= v <= MAX_INT):
                out[k] = v
            elif kind is dict and v.get("__t__") == "tensor":  # what value() would dispatch to
                out[k] = self.tensor(v, prefix + k)
            else:
                out[k] = self.value(v, prefix + k, depth)
        return out

    def estimator(self, node: Mapping[str, Any], path: str, *, build_as: type | None = None, depth: int = 0) -> Any:
        """Validate and build an estimator node (``build_as`` overrides the class)."""
        check_fields(node, "estimator", BUILTIN_FIELDS["estimator"], path)
        key = node["class"]
        entry = self.migrations.entry(key, path or "model") if self.migrations else entry_for_key(key, path or "model")
        cls = build_as or entry.cls
        params_node, attrs_node = node["params"], node["attrs"]
        dropped = _dropped(node.get("dropped"), entry.spec.training_only, attrs_node, path)
        attrs_node = machine_state(attrs_node, path)  # the loading machine's threads, never the file's
        params, attrs = self._fields(params_node, path, depth + 1), self._fields(attrs_node, path, depth + 1)
        # Another scikit-learn version saved the file: carry the state across before it is checked.
        migrated = self.migrations is not None and self.migrations.apply(cls, params, attrs, path)
        fitted = _check_attr_names(cls, attrs, params, path)
        check_fitted_flags(cls, attrs, path)  # values: not part of the names' cache key
        if fitted:
            check_input_gates(cls, attrs, path)
        attrs = _checked_state(entry, params, attrs, fitted, path)
        _check_param_rules(entry.key, params, attrs, self.trust, path)
        built = self._build(cls, entry.key, params, None if migrated else params_node, attrs, path)
        if fitted:
            check_contract(built, path)  # its nested estimators, built above, against what it calls them with
        _guard_partial_fit(built, dropped, attrs)
        guard_warm_start(built)
        return built

    def _build(self, cls: type, key: str, params: dict[str, Any], params_node: Mapping[str, Any] | None,
               attrs: dict[str, Any], path: str) -> Any:
        """The estimator built; a refusal the migrations explain (a changed scikit-learn) says so."""
        try:
            return _construct(cls, key, params, params_node, attrs, path)
        except FormatError as exc:
            rejected = self.migrations.rejected(key, path, exc) if self.migrations is not None else None
            if rejected is not None:
                raise rejected from None
            raise


def _checked_state(entry: Entry, params: dict[str, Any], attrs: dict[str, Any], fitted: bool, path: str) -> Any:
    """The fitted state after the sizes and the family's validator passed, unpacked by the family's schema."""
    try:
        if fitted:
            check_sizes(attrs, path)  # every estimator, generic or not: the counts it allocates by
        if entry.spec.validate is not None and fitted:
            entry.spec.validate(params, attrs, path)
        if fitted:  # after the family's own, more specific, checks of the arrays these derive from
            check_agreements(params, attrs, path)  # each count against the array it counts
            check_output_width(fitted_key(entry.cls), attrs, params, path)
            check_unbacked_names(fitted_key(entry.cls), entry.cls, attrs, params, path)
        if entry.spec.unpack is not None:
            attrs = entry.spec.unpack(attrs, params, path)
    except AprenderError:
        raise
    except Exception as exc:  # a validator tripping over malformed values
        raise fail(path, f"invalid {entry.key} state: {type(exc).__name__}: {exc}") from None
    return attrs


def _guard_partial_fit(built: Any, dropped: Any, attrs: Mapping[str, Any]) -> None:
    """Shadow ``partial_fit`` where it cannot continue: an inference-only save, or read-only arrays."""
    if dropped and hasattr(built, "partial_fit"):
        # An instance attribute shadows the method: the training state it would continue is gone.
        built.partial_fit = functools.partial(_refuse_partial_fit, type(built).__name__, dropped)
    elif hasattr(built, "partial_fit") and _holds_read_only(attrs):
        # Views of a memory-mapped file: a partial_fit that updates them in place fails in NumPy.
        built.partial_fit = functools.partial(_read_only_partial_fit, built.partial_fit)


#: (class, fitted-attribute names, parameter names) that passed :func:`check_attr_name`:
#: the check depends on nothing else, and a file of a known model repeats the same names.
_GOOD_NAMES: dict[tuple[type, tuple[str, ...], tuple[str, ...]], bool] = {}
_GOOD_NAMES_LIMIT = 4096


def _check_attr_names(cls: type, attrs: Mapping[str, Any], params: Mapping[str, Any], path: str) -> bool:
    """Check every fitted-attribute name; return whether they make a fitted estimator.

    An unfitted estimator (ColumnTransformer.transformers, a forest's ``estimator``) has
    no fitted state to check: no ``name_`` attribute, scikit-learn's own test. Classes
    whose state is their parameters (Pipeline) say so with ``__sklearn_is_fitted__``.
    """
    key = (cls, tuple(attrs), tuple(params))
    fitted = _GOOD_NAMES.get(key)
    if fitted is not None:
        return fitted
    for name in attrs:
        check_attr_name(cls, name, params, path)
    check_fitted_names(cls, attrs, path)
    fitted = any(k.endswith("_") for k in attrs) or hasattr(cls, "__sklearn_is_fitted__")
    if len(_GOOD_NAMES) >= _GOOD_NAMES_LIMIT:
        _GOOD_NAMES.clear()
    _GOOD_NAMES[key] = fitted
    return fitted


def _dropped(names: list | None, training_only: tuple[str, ...], attrs: Mapping[str, Any], path: str) -> list[str]:
    """The training-only attributes an inference-only save left out, checked against the family's list."""
    if names is None:
        return []
    if not names or not all(type(n) is str and n in training_only and n not in attrs for n in names):
        raise fail(path, "'dropped' must list training-only attributes of the class that the file leaves out")
    return names


def _refuse_partial_fit(name: str, dropped: list[str], *args: Any, **kwargs: Any) -> None:
    raise InferenceOnlyError(
        f"this {name} was loaded from an inference-only file, which left out what training continues from "
        f"({', '.join(dropped)}): fit it anew, or save with inference_only=False to keep partial_fit")


def _holds_read_only(attrs: Mapping[str, Any]) -> bool:
    """Whether a fitted array (or one in a list of them, MLP's ``coefs_``) is read-only."""
    for value in attrs.values():
        items = value if type(value) in (list, tuple) else (value,)
        if any(type(a) is np.ndarray and not a.flags.writeable for a in items):
            return True
    return False


def _read_only_partial_fit(partial_fit: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return partial_fit(*args, **kwargs)
    except ValueError as exc:
        if "read-only" not in str(exc):
            raise
        owner = type(partial_fit.__self__).__name__
        raise ReadOnlyModelError(
            f"{owner}.partial_fit would write into fitted arrays that are read-only views of the memory the model "
            f"was loaded from (a bytes object, or a read-only map): load it from its file, or from a bytearray, to "
            f"continue training ({exc})") from None


# Hyperparameter validation is a pure function of (class, parameters) and costs far
# more than the rest of a small model's load; remember the parameter sets that passed.
# The key (see _params_key) is the node's items with their types, or the node's repr:
# distinct JSON trees (str keys; None, bool, int, float, str, list, dict values) have
# distinct reprs, and repr costs a fraction of a sorted json.dumps. Keys listed in
# another order only miss the cache.
_VALID_PARAMS: dict[tuple, None] = {}
_VALID_PARAMS_LIMIT = 4096


def _validate_params(cls: type, est: Any, params_node: Mapping[str, Any] | None) -> None:
    if not hasattr(est, "_parameter_constraints"):
        return
    if params_node is None:  # migrated parameters differ from the node: check them, remember nothing
        est._validate_params()
        return
    key = _params_key(cls, params_node)
    if key in _VALID_PARAMS:
        return
    est._validate_params()
    if type(key[1]) is str and "'__t__': 'tensor'" in key[1] and _names_a_tensor(params_node):
        return
    if len(_VALID_PARAMS) >= _VALID_PARAMS_LIMIT:
        _VALID_PARAMS.clear()
    _VALID_PARAMS[key] = None


def _params_key(cls: type, params_node: Mapping[str, Any]) -> tuple:
    """The cache key of a ``params`` node: its items with their types, or its repr if one is not hashable.

    The types are part of the key because equal JSON scalars of different types (``1``,
    ``1.0``, ``true``) compare and hash alike but do not pass the same constraints.
    Building tuples costs half of a repr for the usual node of plain scalars.
    """
    items = tuple(params_node.items())
    try:
        key = (cls, items, tuple(map(type, params_node.values())))
        hash(key)
    except TypeError:  # a list or an object among the values
        return (cls, repr(params_node))
    return key


def _names_a_tensor(node: Any) -> bool:
    """Whether a parameter's value depends on a tensor's contents, which the cache key does not hold.

    A nested estimator's fitted state is not looked at by the outer estimator's parameter
    constraints (which check types and, with ``HasMethods``, class methods that a file cannot
    shadow): only a tensor among its parameters counts. A Pipeline's steps, with all their
    fitted arrays, can then be remembered.
    """
    if type(node) is list:
        return any(_names_a_tensor(v) for v in node)
    if type(node) is not dict:
        return False
    tag = node.get("__t__")
    if tag == "tensor":
        return True
    if tag == "estimator":
        return _names_a_tensor(node.get("params"))
    return any(_names_a_tensor(v) for v in node.values())


def _check_param_rules(
    key: str, params: Mapping[str, Any], attrs: Mapping[str, Any], trust: Trust, path: str,
) -> None:
    """Hyperparameters naming paths, processes or resources hold only what :data:`PARAM_RULES` allows,
    and each parameter follows the rule of its kind in the generated table (:func:`check_params`).

    A few dict lookups per parameter; the rules are not part of the :data:`_VALID_PARAMS`
    cache, whose entries do not depend on what a load trusts or on the fitted arrays.
    """
    for name, (allowed, what) in PARAM_RULES.items():
        if name in params and not allowed(params[name]) and name not in trust.params:
            raise UntrustedParameterError(name, path, what, params[name])
    check_params(key, params, attrs, trust, path)


def _construct(
    cls: type, key: str, params: dict[str, Any], params_node: Mapping[str, Any] | None, attrs: dict[str, Any],
    path: str,
) -> Any:
    try:
        est = cls(**params)
        _validate_params(cls, est, params_node)
    except Exception as exc:  # hostile hyperparameters must surface as a format error
        raise fail(path, f"invalid hyperparameters for {key}: {type(exc).__name__}: {exc}") from None
    est.__dict__.update(attrs)
    return est


#: Tags whose methods check the node's fields themselves (handlers call them directly too):
#: value() leaves the check to them instead of making it twice.
_CHECKED_BY_METHOD = frozenset(["tensor", "estimator"])
# Indexing BUILTIN_FIELDS makes a tag without a declaration of its fields fail at import.
_TAG_METHODS = {tag: (method, None if tag in _CHECKED_BY_METHOD else BUILTIN_FIELDS[tag]) for tag, method in {
    "tensor": Decoder._tensor,
    "float": Decoder._float,
    "scalar": Decoder._scalar,
    "tuple": Decoder._tuple,
    "dict": Decoder._dict,
    "strarray": Decoder._strarray,
    "objarray": Decoder._objarray,
    "type": Decoder._type,
    "n_threads": Decoder._n_threads,
    "estimator": Decoder._estimator,
}.items()}
