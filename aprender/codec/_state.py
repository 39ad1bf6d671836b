"""ModelState: the format-neutral form every backend reads and writes.

``to_state`` turns a fitted estimator into tensors plus JSON-able metadata;
``from_state`` validates such a state and rebuilds the estimator through the
allow-list. Every file format (SafeTensors, .apr, GGUF) stores exactly a ModelState,
so there is one codec for all of them. docs/codec.md describes the metadata tree.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from aprender import _budget
from aprender._warn import model_type_keyword
from aprender.codec._model_type import ModelType
from aprender.codec._nodes import MAX_JSON_DEPTH, preview
from aprender.exceptions import FormatError, LoadBudgetExceeded, ModelTypeMismatch, UnsupportedVersion

if TYPE_CHECKING:
    from aprender.codec._migrations import Plan

__all__ = ["SCHEMA_VERSION", "ModelState", "canonical_json", "from_state", "parse_json", "to_state"]

#: Version of the metadata tree written by this codec (``meta["schema"]``).
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ModelState:
    """A fitted model as named tensors and JSON-able metadata.

    Parameters
    ----------
    tensors : dict of str to ndarray
        Numeric arrays, C-contiguous and little-endian, keyed by dotted names.
    meta : dict
        Canonical-JSON-able metadata: schema version, model type code, the
        estimator tree (class keys, hyperparameters, non-numeric fitted attributes
        and references to tensors), library versions and user metadata.

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.codec import to_state
    >>> state = to_state(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]))
    >>> sorted(state.tensors)
    ['coefficients', 'intercept', 'singular_']
    """

    tensors: dict[str, np.ndarray]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def class_key(self) -> str:
        """Registry key of the top-level estimator class."""
        return str(self.meta.get("model", {}).get("class", ""))

    @property
    def model_type(self) -> ModelType:
        """Family code of the top-level estimator."""
        try:
            return ModelType(int(self.meta.get("model_type", ModelType.CUSTOM)))
        except (TypeError, ValueError):
            return ModelType.CUSTOM

    @property
    def user_metadata(self) -> dict[str, Any]:
        """The ``metadata=`` dict the model was saved with."""
        return dict(self.meta.get("user", {}))


#: One encoder for every save: ``json.dumps`` with options builds a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, UTF-8, no NaN (deterministic bytes)."""
    return _CANONICAL.encode(obj)


def _reject_constant(token: str) -> None:
    raise ValueError(f"non-standard JSON constant {token}")


#: One decoder for every load: ``json.loads`` with an option builds a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)

try:  # the ``fast`` extra: orjson parses several times faster
    import orjson as _orjson
except ImportError:  # the standard library alone
    _orjson = None

#: Every digit becomes "0": a run of 19 zeros then marks 19 digits in a row.
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19
#: What :func:`_parse_fast` returns for input it leaves to the standard library.
_SLOW = object()


def _parse_fast(text: str | bytes) -> Any:
    """orjson's parse, where it is known to equal the standard library's; else ``_SLOW``.

    orjson refuses what the standard library also refuses (NaN, Infinity) and more
    (1e400, a UTF-8 BOM, UTF-16, lone surrogates, nesting past 1024): those inputs go to
    the standard library, which gives the verdict and its message. The one silent
    difference is an integer outside int64/uint64, which orjson turns into a float
    instead of an int the codec refuses: any 19 digits in a row (such an integer has at
    least 19) go to the standard library too. Integers of up to 18 digits fit int64.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if raw.translate(_DIGITS_TO_ZERO).find(_LONG_DIGIT_RUN) >= 0:
        return _SLOW
    try:
        return _orjson.loads(raw)
    except _orjson.JSONDecodeError:
        return _SLOW


def parse_json(text: str | bytes, where: str) -> Any:
    """Parse strict JSON read from a file; :class:`FormatError` names ``where``.

    Accepts exactly what ``json.loads`` accepts (bytes in UTF-8, -16 or -32, no BOM
    in a str), with NaN and Infinity refused, and gives the same values; orjson does
    the parsing where that is known to hold (see :func:`_parse_fast`). JSON nested
    deeper than ``MAX_JSON_DEPTH`` is refused too: every later repr, comparison or
    recursive walk of the value then stays far from Python's recursion limit.
    """
    value = _parse_fast(text) if _orjson is not None else _SLOW
    if value is _SLOW:
        try:
            if not isinstance(text, str):
                text = text.decode(json.detect_encoding(text), "surrogatepass")
            elif text.startswith("\ufeff"):
                raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
            value = _DECODER.decode(text)
        except RecursionError:
            raise FormatError(f"{where} is not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise FormatError(f"{where} is not valid JSON: {exc}") from None
    # Nesting needs an opening bracket per level: most metadata has too few to need the walk.
    opening, comma = ((b"[", b"{"), b",") if isinstance(text, bytes) else (("[", "{"), ",")
    containers = text.count(opening[0]) + text.count(opening[1])
    if containers > MAX_JSON_DEPTH:
        _check_depth(value, where)
    # Every value costs its own parse and decode (about 400 bytes and some microseconds in all,
    # measured on a list tree): a dense run of tiny values ("[],[]" or "0,0") must not cost
    # far more per byte than real metadata, whose values take 4 bytes or more each. Each value
    # but the first follows a comma or an opening bracket: their count bounds the values.
    limit = len(text) // JSON_BYTES_PER_VALUE + JSON_VALUE_ALLOWANCE
    if containers + text.count(comma) >= limit:
        _check_values(value, limit, len(text), where)
    return value


#: Bytes of JSON each value beyond :data:`JSON_VALUE_ALLOWANCE` must take, on average.
JSON_BYTES_PER_VALUE = 3
#: Values any metadata JSON may hold whatever its size.
JSON_VALUE_ALLOWANCE = 2**16


def _check_values(value: Any, limit: int, size: int, where: str) -> None:
    """Refuse a JSON tree of more than ``limit`` values, counting with a stack, not recursion."""
    count, stack = 1, [value] if type(value) in _CONTAINERS else []
    while stack:
        node = stack.pop()
        children = node.values() if type(node) is dict else node
        count += len(children)
        if count > limit:
            raise LoadBudgetExceeded(
                f"{where}: more than {limit:,} JSON values in {size:,} bytes (at most one per "
                f"{JSON_BYTES_PER_VALUE} bytes beyond {JSON_VALUE_ALLOWANCE:,}): too costly to parse")
        stack.extend(child for child in children if type(child) in _CONTAINERS)


def _check_depth(value: Any, where: str) -> None:
    """Refuse containers nested deeper than ``MAX_JSON_DEPTH``, walking with a stack, not recursion."""
    stack = [(value, 1)] if type(value) in _CONTAINERS else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise FormatError(f"{where} is not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
        children = node.values() if type(node) is dict else node
        stack.extend((child, depth + 1) for child in children if type(child) in _CONTAINERS)


_CONTAINERS = (dict, list)


@functools.cache
def _version_items() -> tuple[tuple[str, str], ...]:
    """The library versions every save records; fixed once the process has imported them."""
    import sklearn

    from aprender._version import __version__

    return (("aprender", __version__), ("numpy", np.__version__), ("sklearn", sklearn.__version__))


def _versions() -> dict[str, str]:
    return dict(_version_items())  # a fresh dict: the metadata a caller receives is theirs to change


def _looks_fitted(estimator: Any) -> bool:
    """scikit-learn's own test of fittedness, without the tags ``check_is_fitted`` reads first.

    It is ``__sklearn_is_fitted__()`` where the class defines it, else whether any
    attribute ends in ``_``. When it holds, ``check_is_fitted`` passes too; it costs a
    tenth of it, which a small model's save notices.
    """
    if hasattr(estimator, "__sklearn_is_fitted__"):
        return bool(estimator.__sklearn_is_fitted__())
    # Fitted attributes are set after the hyperparameters: from the end, the first name usually answers.
    return any(name.endswith("_") and not name.startswith("__") for name in reversed(vars(estimator)))


def to_state(
    estimator: Any,
    *,
    dtype: str | np.dtype | None = None,
    metadata: Mapping[str, Any] | None = None,
    inference_only: bool = False,
) -> ModelState:
    """Encode a fitted estimator as a :class:`ModelState`.

    Parameters
    ----------
    estimator : estimator
        A fitted, allow-listed estimator (aprender's or a supported scikit-learn one).
    dtype : {"float32", "float16", "bfloat16"}, optional
        Downcast float tensors for compact storage. Loading casts them back to the
        original dtype; the values keep the reduced precision.
    metadata : dict, optional
        JSON-able user metadata (name, description, metrics, ...). An estimator's
        ``provenance_`` record (set by :func:`aprender.distill`) is added under the key
        ``"provenance"`` unless ``metadata`` has that key.
    inference_only : bool, default=False
        Leave out the fitted attributes that only further training reads (each
        family's list is in docs/codec.md: an MLP's optimizer state and loss curve,
        a forest's out-of-bag scores, ...). The loaded model predicts identically;
        its ``partial_fit`` raises :class:`~aprender.exceptions.InferenceOnlyError`.

    Returns
    -------
    ModelState

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If the estimator is not fitted.
    UnsupportedTypeError
        If an attribute has a type the codec cannot store (names its path).

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import to_state
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.1], [5.0], [5.1]])
    >>> to_state(km).tensors["cluster_centers_"].shape
    (2, 1)
    """
    from aprender.codec._encode import Encoder, float_dtype
    from aprender.codec._registry import entry_for_class

    entry = entry_for_class(type(estimator))
    if not _looks_fitted(estimator):  # scikit-learn's check, with its tags, only where the cheap test fails
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)
    user = dict(metadata or {})
    if getattr(estimator, "provenance_", None) is not None:  # set by aprender.distill
        user.setdefault("provenance", estimator.provenance_)
    if user:
        try:
            canonical_json(user)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"metadata must be JSON-serializable with string keys: {exc}") from None
    encoder = Encoder(cast=float_dtype(dtype) if dtype is not None else None, inference_only=inference_only)
    model = encoder.estimator(estimator, "")
    meta = {
        "schema": SCHEMA_VERSION,
        "model_type": int(entry.spec.model_type),
        "model": model,
        "versions": _versions(),
        "user": user,
    }
    return ModelState(tensors=encoder.tensors, meta=meta)


def _expectation(expected: object) -> type | ModelType | str | None:
    """A ``model_type=`` argument as a class, a ModelType or a class name (an int code becomes a ModelType)."""
    if expected is None or isinstance(expected, ModelType | str | type):
        return expected
    if isinstance(expected, int) and not isinstance(expected, bool):
        try:
            return ModelType(expected)
        except ValueError:
            known = ", ".join(f"{m.value:#06x} {m.name}" for m in ModelType)
            raise ValueError(f"model_type {expected:#06x} is not a known model type code; known: {known}") from None
    raise TypeError(f"model_type must be an estimator class, a class name, a ModelType or its int code, "
                    f"got {type(expected).__name__}")


@model_type_keyword
def from_state(
    state: ModelState, model_type: type | ModelType | int | str | None = None, *,
    trusted: Iterable[Any] | None = None,
) -> Any:
    """Validate a :class:`ModelState` and rebuild its estimator.

    Parameters
    ----------
    state : ModelState
        Usually produced by a format backend's parser.
    model_type : class, class name, ModelType or int, optional
        Fail fast with :class:`ModelTypeMismatch` when the state holds something
        else. An aprender class also accepts its plain scikit-learn twin and
        rebuilds it as the aprender class; a name (``"KMeans"``) matches the
        stored class or its twin; an int is a :class:`ModelType` code.
    trusted : iterable, optional
        Function objects the file may name beyond those trusted by default, and
        names of hyperparameters it may set freely (``"memory"``, ``"n_jobs"``, ...);
        see :mod:`aprender.codec.trust`. Functions are passed as objects, never by name.

    Returns
    -------
    estimator

    Examples
    --------
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.codec import from_state, to_state
    >>> lr = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
    >>> from_state(to_state(lr)).predict([[2.0]])
    array([5.])
    """
    from aprender.codec._decode import Decoder
    from aprender.codec._nesting import check_nesting
    from aprender.codec._registry import entry_for_key, same_schema
    from aprender.codec.trust import make_trust

    meta = state.meta
    if not isinstance(meta, dict):
        raise FormatError("model metadata must be a JSON object")
    schema = meta.get("schema")
    if schema != SCHEMA_VERSION:
        if isinstance(schema, int) and schema > SCHEMA_VERSION:
            raise UnsupportedVersion(f"schema {schema}", f"schema {SCHEMA_VERSION}")
        raise FormatError(f"metadata 'schema' must be {SCHEMA_VERSION}, found {preview(schema)}")
    model = meta.get("model")
    if not isinstance(model, dict):
        raise FormatError("metadata has no 'model' object: this is not an aprender model file")
    saved = _saved_sklearn(meta.get("versions"))
    plan = _migration_plan(saved)
    entry = plan.entry(model.get("class"), "model") if plan else entry_for_key(model.get("class"), "model")
    expected = _expectation(model_type)
    build_as = None
    if isinstance(expected, ModelType):
        if entry.spec.model_type != expected:
            raise ModelTypeMismatch(expected.name, f"{entry.cls.__name__} ({entry.spec.model_type.name})")
    elif isinstance(expected, str):
        if expected not in {entry.key, *(c.__name__ for c in (entry.cls, *entry.twins))}:
            raise ModelTypeMismatch(expected, entry.cls.__name__)
    elif expected is None or issubclass(entry.cls, expected):
        pass
    elif same_schema(entry.cls, expected):
        build_as = expected
    else:
        raise ModelTypeMismatch(expected.__name__, entry.cls.__name__)
    _warn_on_version_skew(saved)
    check_nesting(model)
    decoder = Decoder(state.tensors, migrations=plan, trust=make_trust(trusted))
    with _budget.scope(lambda: _source_bytes(state)):
        estimator = decoder.estimator(model, "", build_as=build_as)
    decoder.finish()
    return estimator


def _source_bytes(state: ModelState) -> int:
    """What a load's budget is relative to: the tensor bytes plus the metadata as JSON."""
    return sum(int(t.nbytes) for t in state.tensors.values()) + len(canonical_json(state.meta).encode())


def _saved_sklearn(versions: object) -> str | None:
    """The scikit-learn version a file was saved under, if it differs from the running one."""
    import sklearn

    saved = versions.get("sklearn") if isinstance(versions, dict) else None
    return saved if isinstance(saved, str) and saved != sklearn.__version__ else None


def _migration_plan(saved: str | None) -> Plan | None:
    """The scikit-learn migrations from the version ``saved`` (see :func:`_saved_sklearn`) to the running one.

    The table is imported only for a file from another version: most loads never need it.
    """
    if saved is None:
        return None
    import sklearn

    from aprender.codec._migrations import Plan

    return Plan(saved, sklearn.__version__)


def _warn_on_version_skew(saved: str | None) -> None:
    if saved is not None:
        import sklearn

        from aprender._warn import warn
        from aprender.exceptions import VersionSkewWarning

        warn(f"this model was saved under scikit-learn {saved[:40]} and is loaded under {sklearn.__version__}: "
             "aprender rebuilt it from its stored state (nothing was unpickled) and every hyperparameter and "
             "fitted attribute passed this version's checks; compare its outputs once if they matter",
             VersionSkewWarning)

