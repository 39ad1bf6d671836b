"""ModelState <-> SafeTensors, through the official ``safetensors`` package.

Layout (docs/safetensors-format.md): the standard SafeTensors file, with all of
aprender's metadata as canonical JSON under the single ``__metadata__`` key
``"aprender"``. One key, because the package keeps metadata in a hash map and
several keys would come out in a different order from save to save.

Model files are written by the package and read back by a validating reader here:
the header is checked exactly as the package checks it (tests hold the two to the
same verdicts), then the whole file is read once and every tensor is a view into
that buffer. A hostile file fails with :class:`~aprender.exceptions.FormatError`
saying what and where, and nothing the header merely claims is allocated.
Foreign files (:func:`load_tensors`) are read by the package itself.

Examples
--------
>>> from aprender.linear_model import LinearRegression
>>> from aprender.format import safetensors
>>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> data = safetensors.dumps(model)
>>> safetensors.loads(data).predict([[2.0]])
array([5.])
"""

from __future__ import annotations

import ctypes
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError, TensorSpec, safe_open, serialize, serialize_file

from aprender._lazy import LazyValues, bfloat16
from aprender._limits import checked_shape
from aprender._warn import deprecated_alias
from aprender.codec import ModelState, ModelType, canonical_json, from_state, parse_json, to_state
from aprender.codec._nodes import preview
from aprender.exceptions import FormatError
from aprender.format._formats import Capabilities, model_type_keyword
from aprender.format._info import ModelInfo, TensorInfo, ValidationReport, rebuilt
from aprender.format._io import existing_file, fill, open_model_file, write_atomic, write_path_atomic

__all__ = [
    "CAPABILITIES",
    "MAX_HEADER_SIZE",
    "METADATA_KEY",
    "dumps",
    "inspect_file",
    "load_file",
    "load_tensors",
    "loads",
    "read_state",
    "save_file",
    "state_from_bytes",
    "state_to_bytes",
    "validate_file",
    "write_state",
]

#: Loads back, and holds (and reads other tools') tensors without a model; no options of its own.
CAPABILITIES = Capabilities(raw_tensors=True)
#: The one ``__metadata__`` key aprender writes.
METADATA_KEY = "aprender"
#: Largest JSON header accepted (the limit of the reference implementation).
MAX_HEADER_SIZE = 100_000_000

#: SafeTensors dtype code -> numpy dtype; ``DTYPES["BF16"]`` imports ml_dtypes on first use.
DTYPES: dict[str, np.dtype] = LazyValues({
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U64": np.dtype(np.uint64),
    "U32": np.dtype(np.uint32),
    "U16": np.dtype(np.uint16),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
}, {"BF16": bfloat16})
#: numpy dtype -> the dtype name ``TensorSpec`` takes: numpy's own (``dtype.name`` is a slow
#: property), or ``bfloat16`` (looked up by name: ml_dtypes is imported once an array has it).
_SPEC_NAMES = {dtype: dtype.name for dtype in DTYPES.values()}


# -- writing ---------------------------------------------------------------------


def _specs(tensors: Mapping[str, np.ndarray]) -> dict[str, TensorSpec]:
    # TensorSpec points at the arrays' own memory: no copy before the write.
    specs = {}
    for name, array in tensors.items():
        spec_dtype = _SPEC_NAMES.get(array.dtype)
        if spec_dtype is None and array.dtype.name == "bfloat16" and array.dtype == DTYPES["BF16"]:
            spec_dtype = "bfloat16"
        if spec_dtype is None or not array.flags.c_contiguous:
            raise FormatError(f"tensor '{name}' has dtype {array.dtype}: SafeTensors cannot store it")
        specs[name] = TensorSpec(dtype=spec_dtype, shape=list(array.shape), data_ptr=_address(array),
                                 data_len=array.nbytes)
    return specs


def _address(array: np.ndarray) -> int:
    """Where ``array``'s data starts in memory."""
    try:  # a quarter of what array.ctypes.data costs, per tensor of each save
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):  # read-only (a model loaded with mmap=True) or empty
        return array.ctypes.data


def state_to_bytes(state: ModelState) -> bytes:
    """Serialize a :class:`ModelState` to SafeTensors bytes."""
    return bytes(serialize(_specs(state.tensors), metadata={METADATA_KEY: canonical_json(state.meta)}))


#: Files with up to this many bytes of tensors are serialized in memory and written through
#: ``write_atomic``. Larger ones are streamed to disk by the package, without that copy; it writes
#: a temporary file of its own, so they go through a private folder (a mkdir, two renames and a
#: rmdir, which would cost more than the rest of a small model's save).
_IN_MEMORY_BYTES = 1 << 24


def write_state(state: ModelState, path: str | os.PathLike) -> None:
    """Write a :class:`ModelState` to ``path`` atomically."""
    specs = _specs(state.tensors)
    metadata = {METADATA_KEY: canonical_json(state.meta)}
    if sum(spec.data_len for spec in specs.values()) <= _IN_MEMORY_BYTES:
        write_atomic(path, [serialize(specs, metadata=metadata)])
        return
    # The package writes a temporary file of its own.
    write_path_atomic(path, lambda tmp: serialize_file(specs, str(tmp), metadata=metadata), own_temporary=True)


def dumps(model: Any, *, dtype: str | None = None, metadata: Mapping[str, Any] | None = None,
          inference_only: bool = False) -> bytes:
    """Serialize a fitted model to SafeTensors bytes.

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import safetensors
    >>> data = safetensors.dumps(StandardScaler().fit([[1.0], [3.0]]))
    >>> data[8:9]
    b'{'
    """
    return state_to_bytes(to_state(model, dtype=dtype, metadata=metadata, inference_only=inference_only))


#: The older name of :func:`dumps` (``save`` takes a path at the top level: one meaning per verb).
save = deprecated_alias(dumps, "aprender.format.safetensors.save", "dumps (bytes) or save_file (a path)")


def save_file(
    model: Any,
    path: str | os.PathLike,
    *,
    dtype: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    inference_only: bool = False,
) -> None:
    """Save a fitted model to a SafeTensors file (atomic write).

    ``dtype``, ``metadata`` and ``inference_only`` are as for
    :func:`aprender.codec.to_state`.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import Ridge
    >>> from aprender.format import safetensors
    >>> path = os.path.join(tempfile.mkdtemp(), "ridge.safetensors")
    >>> safetensors.save_file(Ridge().fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> os.path.getsize(path) > 0
    True
    """
    write_state(to_state(model, dtype=dtype, metadata=metadata, inference_only=inference_only), path)


# -- reading ---------------------------------------------------------------------


#: A tensor as the header describes it, once checked: data offsets, name, dtype, shape.
_Span = tuple[int, int, str, np.dtype, tuple[int, ...]]


def _check_header(head: bytes | memoryview, total: int, where: str) -> tuple[int, dict[str, Any], list[_Span]]:
    """Validate the header and return ``(header_length, header, tensors)``.

    ``head`` holds at least the first ``min(total, 8 + header_length)`` bytes. The
    checks are those of the reference implementation (sizes, dtypes, offsets, and
    tensors tiling the data section without gaps or overlaps), made before any
    tensor byte is read, with messages that say what and where. ``tensors`` lists
    every tensor in header order.
    """
    if total < 8:
        raise FormatError(f"{where}: {total} bytes is too short for a SafeTensors file (needs at least 8)")
    n = int.from_bytes(head[:8], "little")
    if n > MAX_HEADER_SIZE:
        raise FormatError(f"{where}: header length {n} (bytes 0-7) exceeds the {MAX_HEADER_SIZE}-byte limit")
    if 8 + n > total:
        raise FormatError(f"{where}: header length {n} (bytes 0-7) runs past the end of the {total}-byte file")
    header = parse_json(bytes(head[8 : 8 + n]), f"{where}: header (bytes 8-{8 + n})")
    if not isinstance(header, dict):
        raise FormatError(f"{where}: header must be a JSON object")
    data_len = total - 8 - n
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            if not isinstance(info, dict) or not all(isinstance(v, str) for v in info.values()):
                raise FormatError(f"{where}: '__metadata__' must map strings to strings")
            continue
        spans.append(_check_entry(name, info, data_len, where))
    position = 0
    for begin, end, name, _, _ in sorted(spans):
        if begin != position:
            raise FormatError(
                f"{where}: tensor '{name}' starts at data byte {begin}, expected {position} "
                "(tensors must tile the data section without gaps or overlaps)"
            )
        position = end
    if position != data_len:
        raise FormatError(f"{where}: tensors end at data byte {position} but the data section has {data_len} bytes")
    return n, header, spans


def _read_header(p: Path, where: str) -> tuple[int, dict[str, Any]]:
    """Read and validate the header of file ``p`` without reading its data."""
    with open(p, "rb") as f:
        total = os.fstat(f.fileno()).st_size
        prefix = f.read(8)
        n = int.from_bytes(prefix, "little") if len(prefix) == 8 else 0
        head = prefix + (f.read(n) if n <= min(MAX_HEADER_SIZE, total - 8) else b"")
    return _check_header(head, total, where)[:2]


def _check_entry(name: str, info: Any, data_len: int, where: str) -> _Span:
    if type(info) is not dict:
        raise FormatError(f"{where}: tensor '{name}' has no description object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    numpy_dtype = DTYPES.get(dtype) if type(dtype) is str else None
    if numpy_dtype is None and dtype == "BF16":
        numpy_dtype = DTYPES[dtype]
    if numpy_dtype is None:
        raise FormatError(f"{where}: tensor '{name[:80]}' has unsupported dtype {preview(dtype, 40)}")
    shape = checked_shape(shape, f"{where}: tensor '{name[:80]}'")
    if not (type(offsets) is list and len(offsets) == 2 and type(offsets[0]) is int and type(offsets[1]) is int):
        raise FormatError(f"{where}: tensor '{name[:80]}' has invalid data_offsets {preview(offsets, 80)}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_len:
        raise FormatError(
            f"{where}: tensor '{name}' data_offsets [{begin}, {end}] lie outside the {data_len}-byte data section"
        )
    expected = math.prod(shape) * numpy_dtype.itemsize
    if end - begin != expected:
        raise FormatError(
            f"{where}: tensor '{name}' of shape {shape} and dtype {dtype} needs {expected} bytes, "
            f"data_offsets give {end - begin}"
        )
    return begin, end, name, numpy_dtype, shape


def _meta(header: Mapping[str, Any], where: str) -> dict[str, Any]:
    raw = header.get("__metadata__", {}).get(METADATA_KEY)
    if raw is None:
        raise FormatError(
            f"{where}: no '{METADATA_KEY}' metadata: not an aprender model file. "
            "Use aprender.format.safetensors.load_tensors() to read its raw tensors."
        )
    meta = parse_json(raw, f"{where}: '{METADATA_KEY}' metadata")
    if not isinstance(meta, dict):
        raise FormatError(f"{where}: '{METADATA_KEY}' metadata must be a JSON object")
    return meta


def _state_from_buffer(buffer: np.ndarray, where: str) -> ModelState:
    # ``buffer`` is the whole file as a writable uint8 array: every tensor becomes a
    # view into it, so a load costs one read and no further copy (as pickle's does).
    n, header, spans = _check_header(memoryview(buffer), buffer.shape[0], where)
    meta = _meta(header, where)
    start = 8 + n  # ndarray(shape, dtype, buffer, offset): one call per tensor, where slice, view, reshape are three
    tensors = {name: np.ndarray(shape, dtype, buffer, start + begin) for begin, _, name, dtype, shape in spans}
    return ModelState(tensors=tensors, meta=meta)


def read_state(path: str | os.PathLike) -> ModelState:
    """Read and validate the :class:`ModelState` stored in a SafeTensors file."""
    where = f"'{os.fspath(path)}'"
    fd, size = open_model_file(path)
    try:
        buffer = np.empty(size, dtype=np.uint8)
        fill(fd, memoryview(buffer), 0, where)
    finally:
        os.close(fd)
    return _state_from_buffer(buffer, where)


def state_from_bytes(data: bytes | bytearray | memoryview) -> ModelState:
    """Parse and validate SafeTensors bytes into a :class:`ModelState`."""
    return _state_from_buffer(np.frombuffer(data, dtype=np.uint8).copy(), "SafeTensors bytes")


@model_type_keyword
def loads(data: bytes | bytearray | memoryview, model_type: type | ModelType | None = None, *,
          trusted: Any = None) -> Any:
    """Rebuild a model from SafeTensors bytes (arguments as for :func:`load_file`).

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.format import safetensors
    >>> km = KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]])
    >>> safetensors.loads(safetensors.dumps(km)).cluster_centers_
    array([[2.]])
    """
    return from_state(state_from_bytes(data), model_type, trusted=trusted)


#: The older name of :func:`loads`.
load = deprecated_alias(loads, "aprender.format.safetensors.load", "loads (bytes) or load_file (a path)")


@model_type_keyword
def load_file(path: str | os.PathLike, model_type: type | ModelType | None = None, *, trusted: Any = None) -> Any:
    """Load a model from a SafeTensors file.

    Parameters
    ----------
    path : str or PathLike
        File written by aprender.
    model_type : class or ModelType, optional
        Raise :class:`~aprender.exceptions.ModelTypeMismatch` if the file holds
        something else (``expected=`` is its deprecated older name).
    trusted : iterable, optional
        Function objects the file may name beyond those trusted by default, and
        hyperparameter names it may set freely (see :mod:`aprender.codec.trust`).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import Lasso
    >>> from aprender.format import safetensors
    >>> path = os.path.join(tempfile.mkdtemp(), "lasso.safetensors")
    >>> safetensors.save_file(Lasso(alpha=0.01).fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> type(safetensors.load_file(path)).__name__
    'Lasso'
    """
    return from_state(read_state(path), model_type, trusted=trusted)


def load_tensors(path: str | os.PathLike, *, as_float32: bool = False) -> dict[str, np.ndarray]:
    """Read every tensor of any SafeTensors file, whoever wrote it.

    Parameters
    ----------
    path : str or PathLike
        A .safetensors file (F64/F32/F16/BF16/I64/I32/I16/I8/U64/U32/U16/U8/BOOL).
    as_float32 : bool, default=False
        Widen F16 and BF16 tensors to float32.

    Returns
    -------
    dict of str to ndarray

    Examples
    --------
    >>> import tempfile, os, numpy as np
    >>> from safetensors.numpy import save_file
    >>> from aprender.format.safetensors import load_tensors
    >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
    >>> save_file({"w": np.ones(2, dtype=np.float16)}, path)
    >>> load_tensors(path, as_float32=True)["w"].dtype
    dtype('float32')
    """
    p = existing_file(path)
    _read_header(p, f"'{p}'")  # the package allows shapes numpy refuses (255 dimensions, [0, 2**62])
    try:
        with safe_open(str(p), framework="np") as f:
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - not a dict
    except SafetensorError as exc:
        raise FormatError(f"'{p}': {exc}") from None
    if as_float32:
        tensors = {k: v.astype(np.float32) if v.dtype.name in ("float16", "bfloat16") else v
                   for k, v in tensors.items()}
    return tensors


def inspect_file(path: str | os.PathLike) -> ModelInfo:
    """Header, aprender metadata and tensor table of a SafeTensors file; the data is not read.

    A file written by another tool is described too (``model_type`` None).

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import safetensors
    >>> path = os.path.join(tempfile.mkdtemp(), "s.safetensors")
    >>> safetensors.save_file(StandardScaler().fit([[1.0], [3.0]]), path)
    >>> [(t.name, t.dtype, t.shape) for t in safetensors.inspect_file(path).tensors][:1]
    [('mean_', 'float64', (1,))]
    """
    p = existing_file(path)
    where = f"'{p}'"
    n, header = _read_header(p, where)
    total = p.stat().st_size
    raw_meta = header.get("__metadata__", {})
    meta = _meta(header, where) if METADATA_KEY in raw_meta else {}
    rows = sorted((*info["data_offsets"], name, info) for name, info in header.items() if name != "__metadata__")
    tensors = tuple(
        TensorInfo(name, DTYPES[info["dtype"]].name, tuple(info["shape"]), end - begin, 8 + n + begin)
        for begin, end, name, info in rows
    )
    model = meta.get("model")
    try:
        model_type = ModelType(meta["model_type"]) if "model_type" in meta else None
    except ValueError:
        model_type = None
    return ModelInfo(
        format="safetensors",
        path=str(path),
        file_size=total,
        model_type=model_type,
        class_key=model.get("class") if isinstance(model, dict) else None,
        metadata=meta,
        tensors=tensors,
        extra={"header_size": n, "other_metadata": {k: v for k, v in raw_meta.items() if k != METADATA_KEY}},
    )


def validate_file(path: str | os.PathLike, *, trusted: Any = None) -> ValidationReport:
    """Verify a SafeTensors file completely: header, tiling, metadata, and a rebuild of the model.

    A file another tool wrote (no aprender metadata) is valid when its header and tensor
    layout pass the package's rules and every tensor reads: the report then says
    ``model=False`` (raw tensors). Raises the first problem found. ``trusted`` is
    :func:`load_file`'s.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import safetensors
    >>> path = os.path.join(tempfile.mkdtemp(), "s.safetensors")
    >>> safetensors.save_file(StandardScaler().fit([[1.0], [3.0]]), path)
    >>> safetensors.validate_file(path).model
    True
    """
    if inspect_file(path).class_key is None:
        load_tensors(path)
        return ValidationReport(str(path), "safetensors", ("header and tensor layout",
                                "tensors read (no aprender model: raw tensors)"), model=False)
    state = read_state(path)
    unchecked = rebuilt(lambda: from_state(state, trusted=trusted))
    return ValidationReport(str(path), "safetensors", ("header, metadata and tensor layout",
                            "tensors read" if unchecked else "model rebuilt through the allow-list"), model=True,
                            not_checked=unchecked)
