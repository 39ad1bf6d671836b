"""GGML block quantization (Q8_0, Q4_0, Q4_1) of a :class:`ModelState`, via ``gguf.quants``.

Only the float tensors an estimator declares quantizable (``Spec.quantizable``: linear
weights, centroids, components, layer weights) are quantized; thresholds, indices,
counts and every other structural array are never touched. Each quantized tensor is
replaced by a ``uint8`` array of raw GGML blocks, exactly the bytes ``gguf.quants``
produces (bit-exact with ggml). A last dimension that is not a multiple of 32 is padded
by repeating its last value (so padding never widens a block's range) and the true
shape is recorded in ``meta["quantization"]`` (docs/quantization.md).

Examples
--------
>>> import numpy as np
>>> from aprender.linear_model import LinearRegression
>>> from aprender.codec import to_state
>>> from aprender.format.quantize import dequantize, quantize
>>> rng = np.random.default_rng(0)
>>> lr = LinearRegression().fit(rng.normal(size=(50, 40)), rng.normal(size=50))
>>> q = quantize(to_state(lr), "q8_0")
>>> q.tensors["coefficients"].dtype, q.tensors["coefficients"].shape
(dtype('uint8'), (68,))
>>> dequantize(q).tensors["coefficients"].shape
(40,)
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf import quants as ggml_quants

from aprender._lazy import bfloat16
from aprender._limits import checked_shape
from aprender._warn import warn
from aprender.codec import ModelState
from aprender.codec._nodes import preview
from aprender.exceptions import FormatError

__all__ = [
    "BLOCK_SIZE",
    "QTYPES",
    "TYPE_SIZES",
    "block_shape",
    "dequantize",
    "ggml_type",
    "is_quantized",
    "quantizable_tensors",
    "quantize",
    "true_shape",
]

#: Supported block formats, as accepted by ``quantize=``.
QTYPES = ("q8_0", "q4_0", "q4_1")

_GGML_TYPES = {
    "q8_0": GGMLQuantizationType.Q8_0,
    "q4_0": GGMLQuantizationType.Q4_0,
    "q4_1": GGMLQuantizationType.Q4_1,
}

#: Values per block (the same for the three formats).
BLOCK_SIZE = 32
#: Bytes per block of 32 values: Q8_0 34, Q4_0 18, Q4_1 20.
TYPE_SIZES = {name: GGML_QUANT_SIZES[t][1] for name, t in _GGML_TYPES.items()}

#: Deepest metadata tree walked (bounds recursion on hostile metadata; the codec itself
#: limits each estimator's values to 64 levels).
_MAX_TREE_DEPTH = 256

#: Float dtypes a quantized tensor may have had before quantization (bfloat16: ml_dtypes', on first use).
_FLOAT_NAMES = ("float64", "float32", "float16", "bfloat16")


@functools.cache
def _float_dtype(name: str) -> np.dtype:
    return bfloat16() if name == "bfloat16" else np.dtype(name)


def _check_qtype(qtype: object) -> str:
    key = qtype.lower() if isinstance(qtype, str) else qtype
    if key not in _GGML_TYPES:
        raise ValueError(f"quantize must be one of {', '.join(QTYPES)}; got {qtype!r}")
    return key


def ggml_type(qtype: str) -> GGMLQuantizationType:
    """The ``gguf.GGMLQuantizationType`` of ``qtype`` (``"q8_0"`` -> ``Q8_0``)."""
    return _GGML_TYPES[_check_qtype(qtype)]


def block_shape(shape: tuple[int, ...] | list[int], qtype: str) -> tuple[int, ...]:
    """Shape of the ``uint8`` block array that stores a tensor of ``shape``.

    The last axis becomes ``ceil(n / 32)`` blocks of ``TYPE_SIZES[qtype]`` bytes.

    Examples
    --------
    >>> from aprender.format.quantize import block_shape
    >>> block_shape((3, 40), "q4_0")
    (3, 36)
    """
    *lead, last = shape
    return (*lead, math.ceil(last / BLOCK_SIZE) * TYPE_SIZES[_check_qtype(qtype)])


def is_quantized(state: ModelState) -> bool:
    """True when ``state`` holds block-quantized tensors (``meta["quantization"]``)."""
    return isinstance(state.meta, dict) and "quantization" in state.meta


# -- finding the quantizable tensors -------------------------------------------------


def _tensor_nodes(node: Any, depth: int) -> Iterator[dict[str, Any]]:
    """Tensor reference nodes held directly by ``node`` or by its lists, tuples and dicts."""
    if depth > _MAX_TREE_DEPTH:
        raise FormatError(f"model metadata nested deeper than {_MAX_TREE_DEPTH} levels")
    if isinstance(node, list):
        for item in node:
            yield from _tensor_nodes(item, depth + 1)
    elif isinstance(node, dict):
        tag = node.get("__t__")
        if tag == "tensor":
            yield node
        elif tag in ("tuple", "objarray"):
            yield from _tensor_nodes(node.get("v"), depth + 1)
        elif tag == "dict":
            yield from _tensor_nodes(node.get("items"), depth + 1)


def _quantizable_nodes(node: Any, depth: int = 0) -> Iterator[dict[str, Any]]:
    """Tensor nodes of attributes that their estimator's Spec declares quantizable."""
    if depth > _MAX_TREE_DEPTH:
        raise FormatError(f"model metadata nested deeper than {_MAX_TREE_DEPTH} levels")
    if isinstance(node, list):
        for item in node:
            yield from _quantizable_nodes(item, depth + 1)
        return
    if not isinstance(node, dict):
        return
    if node.get("__t__") == "estimator" and isinstance(node.get("attrs"), dict):
        # The allow-list (its class table) is needed to quantize, not to read or dequantize a file.
        from aprender.codec._registry import entry_for_key

        spec = entry_for_key(node.get("class")).spec
        for name, value in node["attrs"].items():
            if name in spec.quantizable:
                yield from _tensor_nodes(value, depth + 1)
            # nested estimators (experts, pipeline steps) bring their own Spec
            yield from _quantizable_nodes(value, depth + 1)
        yield from _quantizable_nodes(node.get("params"), depth + 1)
        return
    for value in node.values():
        yield from _quantizable_nodes(value, depth + 1)


def _eligible(node: dict[str, Any], array: np.ndarray) -> bool:
    # Scalars stored as shape-[1] tensors (an intercept) and empty arrays gain nothing.
    return ("scalar" not in node and array.dtype.name in _FLOAT_NAMES and array.dtype == _float_dtype(array.dtype.name)
            and array.ndim >= 1 and array.size > 0)


def quantizable_tensors(state: ModelState) -> list[str]:
    """Names of the tensors :func:`quantize` would quantize, sorted.

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import to_state
    >>> from aprender.format.quantize import quantizable_tensors
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.2], [5.0], [5.2]])
    >>> quantizable_tensors(to_state(km))
    ['cluster_centers_']
    """
    names: set[str] = set()
    for node in _quantizable_nodes(state.meta.get("model")):
        name = node.get("name")
        if not isinstance(name, str):
            continue
        array = state.tensors.get(name)
        if array is not None and _eligible(node, array):
            names.add(name)
    return sorted(names)


# -- quantize / dequantize -------------------------------------------------------------


def _blocks(array: np.ndarray, qtype: str, name: str) -> np.ndarray:
    values = array.astype(np.float32)
    if not np.isfinite(values).all():
        raise ValueError(f"tensor '{name}' has non-finite values (or overflows float32); it cannot be quantized")
    pad = -values.shape[-1] % BLOCK_SIZE
    if pad:
        # Repeat the last value: padding then never widens a block's min/max.
        values = np.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, pad)], mode="edge")
    return np.ascontiguousarray(ggml_quants.quantize(values, _GGML_TYPES[qtype]))


def quantize(state: ModelState, qtype: str) -> ModelState:
    """Block-quantize the quantizable float tensors of ``state``.

    Parameters
    ----------
    state : ModelState
        An unquantized state (from :func:`~aprender.codec.to_state` or a file).
    qtype : {"q8_0", "q4_0", "q4_1"}
        GGML block format.

    Returns
    -------
    ModelState
        A new state whose quantized tensors are ``uint8`` arrays of GGML blocks, with
        ``meta["quantization"] = {"type": qtype, "tensors": {name: {"shape": [...],
        "dtype": "float64"}}}`` recording each tensor's true shape and stored dtype.
        When the model has no quantizable tensor, a :class:`UserWarning` is issued and
        the state is returned unquantized.

    Raises
    ------
    ValueError
        If ``qtype`` is unknown, the state is already quantized, or a weight is not finite.

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import to_state
    >>> from aprender.format.quantize import quantize
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.2], [5.0], [5.2]])
    >>> q = quantize(to_state(km), "q4_1")
    >>> q.meta["quantization"]["tensors"]["cluster_centers_"]
    {'dtype': 'float64', 'shape': [2, 1]}
    """
    qtype = _check_qtype(qtype)
    if is_quantized(state):
        raise ValueError("the model state is already quantized; dequantize it first")
    names = quantizable_tensors(state)
    if not names:
        warn(f"{state.class_key or 'this model'} has no quantizable tensors; it is stored unquantized")
        return state
    tensors = dict(state.tensors)
    record = {}
    for name in names:
        array = state.tensors[name]
        tensors[name] = _blocks(array, qtype, name)
        record[name] = {"dtype": array.dtype.name, "shape": list(array.shape)}
    meta = copy.deepcopy(state.meta)
    meta["quantization"] = {"type": qtype, "tensors": record}
    return ModelState(tensors=tensors, meta=meta)


def _record(meta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    quant = meta.get("quantization")
    if not isinstance(quant, dict) or not isinstance(quant.get("tensors"), dict):
        raise FormatError("'quantization' metadata must be an object with a 'tensors' object")
    qtype = quant.get("type")
    if not isinstance(qtype, str) or qtype not in _GGML_TYPES:
        raise FormatError(f"unknown quantization type {preview(qtype, 40)}; supported: {', '.join(QTYPES)}")
    return qtype, quant["tensors"]


def true_shape(info: Any, name: str) -> tuple[tuple[int, ...], str]:
    """Validated ``(shape, original dtype)`` of one entry of a quantization record (FormatError if bad)."""
    if not isinstance(info, dict):
        raise FormatError(f"quantized tensor '{name}': record must be an object")
    shape = checked_shape(info.get("shape"), f"quantized tensor '{name}'", min_ndim=1, min_dim=1)
    dtype = info.get("dtype")
    if not isinstance(dtype, str) or dtype not in _FLOAT_NAMES:
        raise FormatError(f"quantized tensor '{name}': invalid original dtype {preview(dtype, 40)}")
    return shape, dtype


def _dequantize_one(blocks: np.ndarray, qtype: str, shape: tuple[int, ...], name: str) -> np.ndarray:
    expected = block_shape(shape, qtype)
    if blocks.dtype != np.uint8 or blocks.shape != expected:
        raise FormatError(
            f"quantized tensor '{name}' of shape {list(shape)} needs {qtype.upper()} blocks as uint8 of shape "
            f"{list(expected)}, found {blocks.dtype} of shape {list(blocks.shape)}"
        )
    values = ggml_quants.dequantize(np.ascontiguousarray(blocks), _GGML_TYPES[qtype])
    return np.ascontiguousarray(values[..., : shape[-1]])


def dequantize(state: ModelState) -> ModelState:
    """Expand GGML blocks back to float tensors (the inverse layout of :func:`quantize`).

    Values are decoded to float32 with the padding stripped and the quantization
    record removed. Each tensor then comes back in the dtype the estimator had:
    a float64 weight is marked in its tensor node (``"dtype": "float64"``) so that
    :func:`~aprender.codec.from_state` widens it (float64-only code paths such as
    KMeans keep working); float16/bfloat16 weights are cast back directly.

    Raises
    ------
    FormatError
        If the quantization record or a block array is inconsistent (hostile files).

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import from_state, to_state
    >>> from aprender.format.quantize import dequantize, quantize
    >>> km = KMeans(n_clusters=2, n_init=1, random_state=0).fit([[0.0], [0.2], [5.0], [5.2]])
    >>> restored = from_state(dequantize(quantize(to_state(km), "q8_0")))
    >>> restored.cluster_centers_.dtype
    dtype('float64')
    """
    meta = copy.deepcopy(state.meta)
    qtype, record = _record(meta)
    tensors = dict(state.tensors)
    targets = {}
    name: Any  # a record's tensor name, then a node's, which a hostile file may make anything
    for name, info in record.items():
        if name not in tensors:  # JSON object keys are strings
            raise FormatError(f"quantized tensor {preview(name, 80)} is missing")
        shape, stored = true_shape(info, name)
        tensors[name] = _dequantize_one(tensors[name], qtype, shape, name)
        targets[name] = stored
    found = set()
    for node in _tensor_nodes_anywhere(meta.get("model"), 0):
        name = node.get("name")
        if not isinstance(name, str) or name not in targets or name in found:
            continue
        found.add(name)
        # The estimator wants the node's original dtype if the codec cast it, else the stored one.
        final = node.get("dtype") or targets[name]
        if not isinstance(final, str) or final not in _FLOAT_NAMES:
            raise FormatError(f"tensor '{name}' has invalid original dtype {preview(final, 40)}")
        if _float_dtype(final).itemsize > 4:
            node["dtype"] = final
        else:
            node.pop("dtype", None)
            tensors[name] = tensors[name].astype(_float_dtype(final), copy=False)
    missing = sorted(set(targets) - found)
    if missing:
        raise FormatError(f"quantized tensor '{missing[0][:80]}' is not referenced by the model metadata")
    del meta["quantization"]
    return ModelState(tensors=tensors, meta=meta)


def _tensor_nodes_anywhere(node: Any, depth: int) -> Iterator[dict[str, Any]]:
    """Every tensor reference node in a metadata tree."""
    if depth > _MAX_TREE_DEPTH:
        raise FormatError(f"model metadata nested deeper than {_MAX_TREE_DEPTH} levels")
    if isinstance(node, list):
        for item in node:
            yield from _tensor_nodes_anywhere(item, depth + 1)
    elif isinstance(node, dict):
        if node.get("__t__") == "tensor":
            yield node
            return
        for value in node.values():
            yield from _tensor_nodes_anywhere(value, depth + 1)
