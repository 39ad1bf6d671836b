"""Estimator -> (tensors, metadata tree). The writing half of the codec.

Every value becomes a JSON node: JSON scalars stand for themselves, lists are JSON
arrays, and anything else is an object tagged with ``"__t__"`` (see docs/codec.md).
Numeric arrays become tensors referenced by name; nothing is ever pickled, and a
value of an unknown type raises :class:`UnsupportedTypeError` naming its path.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any

import numpy as np

from aprender.codec import handlers as _handlers
from aprender.codec._fitted import MACHINE_STATE
from aprender.codec._nodes import MAX_DEPTH, PY_TYPES, TENSOR_KINDS, join
from aprender.codec._registry import entry_for_class
from aprender.codec._spec import Spec
from aprender.codec._warm_start import is_warm_start_guard
from aprender.codec.handlers.records import RECORDS
from aprender.codec.refused import advice
from aprender.exceptions import UnsupportedTypeError

__all__ = ["Encoder", "float_dtype"]

_CAST_DTYPES = ("float32", "float16", "bfloat16")


def legacy_lists() -> tuple[type, ...]:
    """List types of older scikit-learn versions, saved as the plain lists they hold.

    1.6's ColumnTransformer lists its remainder's columns in a ``_RemainderColsList`` (a
    list of column indices that warns when read, gone in 1.9): the indices select the same
    columns under every version. A value can be one only once its module is imported, so
    this imports nothing.
    """
    legacy = getattr(sys.modules.get("sklearn.compose._column_transformer"), "_RemainderColsList", None)
    return () if legacy is None else (legacy,)

@functools.lru_cache(maxsize=1024)
def _init_param_names(cls: type) -> tuple[str, ...]:
    return tuple(cls._get_param_names())


@functools.lru_cache(maxsize=1024)
def _params_are_init_names(cls: type) -> bool:
    """Whether ``cls().get_params(deep=False)`` is keyed by exactly the ``__init__`` parameters.

    True for scikit-learn's own ``get_params``, and for its composites (Pipeline,
    ColumnTransformer, FeatureUnion, Voting and Stacking): their ``_get_params`` adds the
    nested estimators' parameters only when ``deep`` is true. A subclass that overrides
    ``get_params`` itself is asked every time.
    """
    from sklearn.base import BaseEstimator
    from sklearn.utils.metaestimators import _BaseComposition

    get_params = cls.get_params
    return get_params is BaseEstimator.get_params or (
        issubclass(cls, _BaseComposition) and get_params.__module__.startswith("sklearn."))


def _param_names(est: Any) -> Any:
    """The names ``est.get_params(deep=False)`` returns.

    scikit-learn's own ``get_params`` inspects the signature of ``__init__`` on every
    call, which costs a good share of a small model's save (a third of a Pipeline's
    encoding): for a class that keeps it, the names are read once per class.
    """
    cls = type(est)
    if _params_are_init_names(cls):
        return _init_param_names(cls)
    return est.get_params(deep=False)


def _param_value(est: Any, names: Any, name: str) -> Any:
    """A hyperparameter that is not an instance attribute of its own: a property or class-level
    default, or a value only ``get_params`` holds (CatBoost keeps every parameter in a dict of
    its own, XGBoost the keywords its constructor passes on)."""
    try:
        return getattr(est, name)
    except AttributeError:
        return names[name] if type(names) is dict else est.get_params(deep=False)[name]


def float_dtype(dtype: str | np.dtype) -> np.dtype:
    """Parse a ``dtype=`` option: one of float32, float16, bfloat16."""
    key = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if key not in _CAST_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_CAST_DTYPES)}, got {dtype!r}")
    if key == "bfloat16":
        import ml_dtypes  # here, not at the top: no other save needs it

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(key)


def _column_major(array: np.ndarray) -> bool:
    """F-contiguous, or a strided view laid out column-major.

    PCA(svd_solver="randomized") keeps ``components_`` as a row slice of an F-ordered
    matrix: neither C- nor F-contiguous, yet BLAS treats it as column-major, so it must
    come back F-ordered for ``transform`` to reproduce the last bit.
    """
    if array.flags.c_contiguous:
        return False
    strides = [abs(s) for s, n in zip(array.strides, array.shape, strict=True) if n > 1]
    return array.flags.f_contiguous or (len(strides) > 1 and strides == sorted(strides))


#: Fortran-ordered matrices of this many bytes or more are copied to C order tile by tile.
TILED_COPY_BYTES = 1 << 22
_TILE = 256


def _c_ordered(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``array`` (not C-contiguous itself).

    numpy copies an F-ordered matrix to C order row by row, reading one element per
    column and a whole cache line for each; a 256 x 256 tile stays in cache, so large
    matrices are copied tile by tile (several times faster for a matrix of hundreds of
    megabytes). Small ones are not worth the loop.
    """
    if array.ndim != 2 or not array.flags.f_contiguous or array.nbytes < TILED_COPY_BYTES:
        return np.ascontiguousarray(array)
    out = np.empty(array.shape, dtype=array.dtype)
    rows, columns = array.shape
    for i in range(0, rows, _TILE):
        for j in range(0, columns, _TILE):
            out[i : i + _TILE, j : j + _TILE] = array[i : i + _TILE, j : j + _TILE]
    return out


#: Values that :meth:`Encoder.value` returns unchanged (with a finite float): a
#: hyperparameter of one of these types skips the call and the path it would build.
_SELF_ENCODED = frozenset([type(None), bool, str, int])


def _type_name(value: Any) -> str:
    cls = type(value)
    return f"{cls.__module__}.{cls.__qualname__}"


class Encoder:
    """Collects tensors while turning values into metadata nodes."""

    def __init__(self, cast: np.dtype | None = None, inference_only: bool = False) -> None:
        self.tensors: dict[str, np.ndarray] = {}
        self.cast = cast
        self.inference_only = inference_only
        self._legacy_lists = legacy_lists()

    def tensor(self, array: np.ndarray, name: str, *, scalar: type | None = None) -> dict[str, Any]:
        """Store ``array`` as tensor ``name`` and return the node that refers to it."""
        if name in self.tensors:
            raise UnsupportedTypeError(name, "ndarray", "two attributes map to the same tensor name")
        node: dict[str, Any] = {"__t__": "tensor", "name": name}
        if array.ndim > 1 and _column_major(array):
            node["order"] = "F"
        if scalar is not None:
            node["scalar"] = scalar.__name__ if scalar in (float, int, bool) else "numpy"
            array = array.reshape(1)
        # np.ascontiguousarray would turn a 0-d array into shape (1,)
        data = array if array.flags.c_contiguous else _c_ordered(array)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        if self.cast is not None and data.dtype.kind == "f" and data.dtype.itemsize > self.cast.itemsize:
            node["dtype"] = data.dtype.name
            data = data.astype(self.cast)
        self.tensors[name] = data
        return node

    def estimator(self, est: Any, path: str) -> dict[str, Any]:
        """Encode an allow-listed estimator: class key, hyperparameters, fitted attributes."""
        entry = entry_for_class(type(est), path)
        # The load-time guard on a model's fit is not state: the next load installs it again.
        state = {k: v for k, v in vars(est).items() if not is_warm_start_guard(k, v)}
        params = {}
        names = _param_names(est)
        for name in names:
            params[name] = state.pop(name) if name in state else _param_value(est, names, name)
        if entry.spec.check_save is not None:
            entry.spec.check_save(params, path)
        dropped = [name for name in entry.spec.training_only if name in state] if self.inference_only else []
        for name in dropped:
            del state[name]
        if entry.spec.pack is not None:
            state = entry.spec.pack(state)
        node = {
            "__t__": "estimator",
            "class": entry.key,
            "params": {k: v if type(v) in _SELF_ENCODED or (type(v) is float and math.isfinite(v))
                       else self.value(v, join(path, k), 1) for k, v in sorted(params.items())},
            "attrs": {k: self._attr(k, v, path, entry.spec) for k, v in sorted(state.items())},
        }
        if dropped:
            node["dropped"] = sorted(dropped)
        return node

    def _attr(self, name: str, value: Any, prefix: str, spec: Spec) -> Any:
        if name in MACHINE_STATE and type(value) is int:
            # a property of the machine that fitted the model, not of the model: the loader uses its own
            return {"__t__": MACHINE_STATE[name]}
        alias = spec.aliases.get(name)
        if alias is not None and "{i}" in alias:
            # A list of arrays (an MLP's coefs_) names one tensor per item: layers.{i}.weight
            if type(value) is list and all(isinstance(v, np.ndarray) for v in value):
                return [self.tensor(v, join(prefix, alias.format(i=i))) for i, v in enumerate(value)]
            return self.value(value, join(prefix, name), 1)
        storable = isinstance(value, (np.ndarray, np.number, float, int)) and not isinstance(value, bool)
        if alias is not None and storable:
            scalar = None
            if not isinstance(value, np.ndarray):
                scalar = type(value) if type(value) in (float, int) else np.generic
            return self.tensor(np.asarray(value), join(prefix, alias), scalar=scalar)
        # Any other aliased value (a nested estimator, a list of them) keeps its structure
        # and takes the alias as the prefix of its tensors: experts_ -> experts.0.coefficients
        return self.value(value, join(prefix, alias or name), 1)

    def value(self, value: Any, path: str, depth: int) -> Any:
        """Encode any supported value found at ``path``."""
        if depth > MAX_DEPTH:
            raise UnsupportedTypeError(path, _type_name(value), f"nested deeper than {MAX_DEPTH} levels")
        if value is None or type(value) in (bool, str, int):
            return value
        if type(value) is float:
            return value if math.isfinite(value) else {"__t__": "float", "v": repr(value)}
        if type(value) is np.ndarray:
            return self._array(value, path, depth)
        if isinstance(value, np.generic):
            return self._numpy_scalar(value, path)
        if type(value) in self._legacy_lists:  # read its items without the warning it gives on access
            value = list(value.data)
        if type(value) is list:
            return [self.value(v, join(path, i), depth + 1) for i, v in enumerate(value)]
        if type(value) is tuple:
            return {"__t__": "tuple", "v": self._sequence(value, path, depth)}
        if type(value) is dict:
            items = [[self.value(k, path, depth + 1), self.value(v, join(path, k), depth + 1)]
                     for k, v in value.items()]
            return {"__t__": "dict", "items": items}
        if isinstance(value, type):
            return self._type(value, path)
        if hasattr(value, "get_params") and hasattr(value, "fit"):
            return self.estimator(value, path)
        handler = _handlers.for_value(value)
        if handler is not None:
            return {"__t__": handler.tag, **handler.encode(value, self, path)}
        if isinstance(value, np.ndarray):  # another ndarray subclass (np.matrix, ...): store its array
            return self._array(np.asarray(value), path, depth)
        raise UnsupportedTypeError(path, _type_name(value), advice(_type_name(value)))

    def _sequence(self, seq: tuple, path: str, depth: int) -> list:
        # (name, estimator, ...) tuples -- Pipeline steps, ColumnTransformer transformers --
        # name their estimator's tensors after the step: steps.0.scaler.mean_
        named = len(seq) >= 2 and isinstance(seq[0], str) and hasattr(seq[1], "get_params")
        out = []
        for i, v in enumerate(seq):
            sub = join(path, seq[0]) if named and i == 1 else join(path, i)
            out.append(self.value(v, sub, depth + 1))
        return out

    def _array(self, array: np.ndarray, path: str, depth: int) -> Any:
        kind = array.dtype.kind
        if kind in TENSOR_KINDS and array.dtype.names is None:
            return self.tensor(array, path)
        if array.dtype.names is not None:
            return {"__t__": RECORDS.tag, **RECORDS.encode(array, self, path)}
        if kind in "Mm":
            from aprender.codec.handlers.std import DATETIME

            return {"__t__": DATETIME.tag, **DATETIME.encode(array, self, path)}
        if kind == "U":
            return {"__t__": "strarray", "dtype": array.dtype.str, "shape": list(array.shape),
                    "v": array.ravel().tolist()}
        if kind == "O":
            flat = array.ravel()
            return {"__t__": "objarray", "shape": list(array.shape),
                    "v": [self.value(v, join(path, i), depth + 1) for i, v in enumerate(flat)]}
        raise UnsupportedTypeError(path, f"ndarray of dtype {array.dtype}")

    def _numpy_scalar(self, value: np.generic, path: str) -> Any:
        dtype = value.dtype
        if dtype.kind == "U":
            return str(value)
        if dtype.kind not in TENSOR_KINDS:
            raise UnsupportedTypeError(path, f"numpy scalar of dtype {dtype}")
        item = value.item()
        if dtype.kind == "f" and not math.isfinite(item):
            item = repr(float(item))
        return {"__t__": "scalar", "dtype": dtype.name, "v": item}

    def _type(self, value: type, path: str) -> dict[str, Any]:
        for name, cls in PY_TYPES.items():
            if value is cls:
                return {"__t__": "type", "v": name}
        if issubclass(value, np.generic) and np.dtype(value).kind in TENSOR_KINDS:
            return {"__t__": "type", "v": "numpy." + np.dtype(value).name}
        from aprender.codec.handlers.objects import CLASS  # here: only a class object as a value needs it

        if isinstance(value, CLASS.types):
            return {"__t__": CLASS.tag, **CLASS.encode(value, self, path)}
        raise UnsupportedTypeError(path, f"type object {value.__module__}.{value.__qualname__}")
