"""ModelState <-> GGUF, through the official ``gguf`` package (``GGUFWriter``, ``GGUFReader``).

Layout (docs/gguf-format.md): a standard GGUF v3 file with
``general.architecture = "aprender"``, the GGUF ``general.*`` conventions (name,
description, file type, ...) and aprender's metadata under ``aprender.*`` keys: class
key, hyperparameters and fitted attributes (canonical JSON), versions and user
metadata. Tensors keep their dtype (F64/F32/F16/BF16/I64/I32/I16/I8; unsigned and bool
stored as the same-width signed type) or are GGML Q8_0/Q4_0/Q4_1 blocks when saved
with ``quantize=``. Names longer than ggml's 63 bytes and ranks above 4 are mapped
reversibly (``aprender.tensor_map``).

Files are read by a bounds-checked ``GGUFReader``: a truncated or corrupted file raises
:class:`~aprender.exceptions.FormatError`.

Examples
--------
>>> from aprender.linear_model import LinearRegression
>>> from aprender.format import gguf
>>> model = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> data = gguf.dumps(model)
>>> data[:4]
b'GGUF'
>>> gguf.loads(data).predict([[2.0]])
array([5.])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGML_QUANT_VERSION, GGUFValueType, GGUFWriter, LlamaFileType

from aprender._warn import deprecated_alias
from aprender.codec import ModelState, ModelType, canonical_json, from_state, to_state
from aprender.format import quantize as _quantize
from aprender.format._formats import Capabilities, model_type_keyword
from aprender.format._info import ModelInfo, TensorInfo, ValidationReport, rebuilt
from aprender.format._io import existing_file, write_path_atomic
from aprender.format.gguf import _foreign as foreign
from aprender.format.gguf import _layout as layout
from aprender.format.gguf import _reader as _gguf_reader
from aprender.format.gguf._reader import check_extent, open_any, quantized_type, read_fields

__all__ = [
    "CAPABILITIES",
    "dumps",
    "inspect_file",
    "load_file",
    "load_tensors",
    "loads",
    "read_state",
    "save_file",
    "state_from_bytes",
    "state_to_bytes",
    "to_model_state",
    "validate_file",
    "write_state",
]

#: Loads back and holds GGML blocks as they are; no options of its own.
CAPABILITIES = Capabilities(quantizes=True)
#: ``general.file_type`` of a quantized file (llama.cpp's ``LlamaFileType``).
_FILE_TYPES = {
    "q8_0": LlamaFileType.MOSTLY_Q8_0,
    "q4_0": LlamaFileType.MOSTLY_Q4_0,
    "q4_1": LlamaFileType.MOSTLY_Q4_1,
}
#: User metadata entries mirrored into the matching ``general.*`` key when they are strings.
_GENERAL_MIRRORS = ("name", "description", "author", "version", "license", "url")
#: Top-level metadata entries with dedicated keys; any other goes to ``aprender.meta.<key>``.
_OWN_KEYS = ("schema", "model_type", "model", "versions", "user", "quantization")


# -- writing ---------------------------------------------------------------------


def _add_general(writer: GGUFWriter, state: ModelState) -> None:
    user = state.meta.get("user") or {}
    writer.add_type("model")
    for key in _GENERAL_MIRRORS:
        value = user.get(key)
        if key == "name" and not isinstance(value, str):
            value = state.class_key.rsplit(".", 1)[-1] or "model"
        if isinstance(value, str):
            writer.add_string(f"general.{key}", value)
    qtype = _quantize.is_quantized(state) and state.meta["quantization"]["type"]
    if qtype:
        writer.add_uint32("general.file_type", int(_FILE_TYPES[qtype]))
        writer.add_quantization_version(GGML_QUANT_VERSION)


def _add_aprender(writer: GGUFWriter, meta: Mapping[str, Any], tensor_map: Mapping[str, Any]) -> None:
    model = meta["model"]
    for name, key in (("schema", layout.KEY_SCHEMA), ("model_type", layout.KEY_MODEL_TYPE)):
        if name in meta:
            writer.add_uint32(key, int(meta[name]))
    writer.add_string(layout.KEY_CLASS, model["class"])
    writer.add_string(layout.KEY_PARAMS, canonical_json(model["params"]))
    writer.add_string(layout.KEY_ATTRS, canonical_json(model["attrs"]))
    for lib, version in sorted((meta.get("versions") or {}).items()):
        writer.add_key_value(layout.PREFIX_VERSIONS + lib, str(version), GGUFValueType.STRING)
    for name, key in (("user", layout.KEY_USER), ("quantization", layout.KEY_QUANTIZATION)):
        if name in meta:
            writer.add_string(key, canonical_json(meta[name]))
    if tensor_map:
        writer.add_string(layout.KEY_TENSOR_MAP, canonical_json(tensor_map))
    for name in sorted(set(meta) - set(_OWN_KEYS)):
        writer.add_string(layout.PREFIX_EXTRA + name, canonical_json(meta[name]))


def write_state(state: ModelState, path: str | os.PathLike) -> None:
    """Write a (possibly quantized) :class:`ModelState` to ``path`` atomically.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.cluster import KMeans
    >>> from aprender.codec import to_state
    >>> from aprender.format import gguf
    >>> path = os.path.join(tempfile.mkdtemp(), "km.gguf")
    >>> gguf.write_state(to_state(KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]])), path)
    >>> gguf.read_state(path).tensors["cluster_centers_"]
    array([[2.]])
    """
    qtype = quantized_type(state.meta)
    quantized = set(state.meta["quantization"]["tensors"]) if qtype else set()
    ggml = _quantize.ggml_type(qtype) if qtype else None
    placed = [layout.place(name, state.tensors[name], ggml if name in quantized else None)
              for name in sorted(state.tensors)]
    tensor_map = {p.name: p.mapping for p in placed if p.mapping}
    names = [p.name for p in placed]
    if len(set(names)) != len(names):
        raise ValueError("two tensor names map to the same GGUF name")

    def write(tmp: Path) -> None:
        writer = GGUFWriter(tmp, layout.ARCHITECTURE)
        try:
            _add_general(writer, state)
            _add_aprender(writer, state.meta, tensor_map)
            for p in placed:
                writer.add_tensor(p.name, p.array, raw_dtype=p.raw_dtype)
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
        finally:
            writer.close()

    write_path_atomic(path, write)


def to_model_state(
    model: Any,
    *,
    quantize: str | None = None,
    dtype: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    inference_only: bool = False,
) -> ModelState:
    """The state :func:`save_file` writes: the codec's, quantized on request."""
    if quantize is not None:
        _quantize.ggml_type(quantize)  # reject a bad qtype before encoding anything
    state = to_state(model, dtype=dtype, metadata=metadata, inference_only=inference_only)
    return _quantize.quantize(state, quantize) if quantize is not None else state


def save_file(
    model: Any,
    path: str | os.PathLike,
    *,
    quantize: str | None = None,
    dtype: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    inference_only: bool = False,
) -> None:
    """Save a fitted model to a GGUF file (atomic write).

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator or a supported scikit-learn one.
    path : str or PathLike
        Destination ``.gguf`` file.
    quantize : {"q8_0", "q4_0", "q4_1"}, optional
        GGML block-quantize the tensors the estimator declares quantizable.
    dtype : {"float32", "float16", "bfloat16"}, optional
        Downcast the float tensors first (before any quantization).
    metadata : dict, optional
        JSON-able user metadata; string ``name``, ``description``, ``author``,
        ``version``, ``license`` and ``url`` also fill the ``general.*`` keys.
    inference_only : bool, default=False
        Leave out what only further training reads (docs/codec.md lists it per
        family); the loaded model predicts identically and refuses ``partial_fit``.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from aprender.linear_model import Ridge
    >>> from aprender.format import gguf
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(100, 64)), rng.normal(size=100)
    >>> path = os.path.join(tempfile.mkdtemp(), "ridge.gguf")
    >>> gguf.save_file(Ridge().fit(X, y), path, quantize="q8_0", metadata={"name": "ridge"})
    >>> gguf.inspect_file(path).quantization
    'q8_0'
    """
    write_state(to_model_state(model, quantize=quantize, dtype=dtype, metadata=metadata,
                                            inference_only=inference_only), path)


def state_to_bytes(state: ModelState) -> bytes:
    """Serialize a :class:`ModelState` to GGUF bytes."""
    with tempfile.TemporaryDirectory(prefix="aprender-gguf-") as folder:
        path = Path(folder) / "model.gguf"
        write_state(state, path)
        return path.read_bytes()


def dumps(
    model: Any,
    *,
    quantize: str | None = None,
    dtype: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    inference_only: bool = False,
) -> bytes:
    """Serialize a fitted model to GGUF bytes (see :func:`save_file` for the options).

    Examples
    --------
    >>> from aprender.preprocessing import StandardScaler
    >>> from aprender.format import gguf
    >>> gguf.dumps(StandardScaler().fit([[1.0], [3.0]]))[:4]
    b'GGUF'
    """
    return state_to_bytes(to_model_state(model, quantize=quantize, dtype=dtype, metadata=metadata,
                                            inference_only=inference_only))


#: The older name of :func:`dumps` (``save`` takes a path at the top level: one meaning per verb).
save = deprecated_alias(dumps, "aprender.format.gguf.save", "dumps (bytes) or save_file (a path)")


# -- reading ---------------------------------------------------------------------


def _where(path: str | os.PathLike) -> str:
    return f"'{path}'"


def read_state(path: str | os.PathLike) -> ModelState:
    """Read and validate the :class:`ModelState` stored in a GGUF file (still quantized, if it was)."""
    p = existing_file(path)
    return _gguf_reader.read_state(p, _where(p))


def state_from_bytes(data: bytes | bytearray | memoryview) -> ModelState:
    """Parse and validate GGUF bytes into a :class:`ModelState` (still quantized, if it was)."""
    with tempfile.TemporaryDirectory(prefix="aprender-gguf-") as folder:
        path = Path(folder) / "model.gguf"
        path.write_bytes(data)
        return _gguf_reader.read_state(path, "GGUF bytes")


def _model(state: ModelState, model_type: type | ModelType | None, trusted: Any = None) -> Any:
    if _quantize.is_quantized(state):
        state = _quantize.dequantize(state)
    return from_state(state, model_type, trusted=trusted)


@model_type_keyword
def loads(data: bytes | bytearray | memoryview, model_type: type | ModelType | None = None, *,
          trusted: Any = None) -> Any:
    """Rebuild a model from GGUF bytes, dequantized (arguments as for :func:`load_file`).

    Examples
    --------
    >>> from aprender.cluster import KMeans
    >>> from aprender.format import gguf
    >>> km = KMeans(n_clusters=1, n_init=1).fit([[1.0], [3.0]])
    >>> gguf.loads(gguf.dumps(km), KMeans).cluster_centers_
    array([[2.]])
    """
    return _model(state_from_bytes(data), model_type, trusted)


#: The older name of :func:`loads`.
load = deprecated_alias(loads, "aprender.format.gguf.load", "loads (bytes) or load_file (a path)")


@model_type_keyword
def load_file(path: str | os.PathLike, model_type: type | ModelType | None = None, *, trusted: Any = None) -> Any:
    """Load a model from a GGUF file written by aprender.

    Parameters
    ----------
    path : str or PathLike
        A ``.gguf`` file written by :func:`save_file` (or ``save_gguf``).
    model_type : class or ModelType, optional
        Raise :class:`~aprender.exceptions.ModelTypeMismatch` if the file holds
        something else (``expected=`` is its deprecated older name).
    trusted : iterable, optional
        Function objects the file may name beyond those trusted by default, and
        hyperparameter names it may set freely (see :mod:`aprender.codec.trust`).

    Returns
    -------
    estimator
        Quantized weights come back dequantized (float32 values in the
        estimator's original dtype).

    Raises
    ------
    FormatError
        If the file is truncated, corrupted, or not an aprender GGUF file.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import Lasso
    >>> from aprender.format import gguf
    >>> path = os.path.join(tempfile.mkdtemp(), "lasso.gguf")
    >>> gguf.save_file(Lasso(alpha=0.01).fit([[0.0], [1.0]], [0.0, 1.0]), path)
    >>> type(gguf.load_file(path)).__name__
    'Lasso'
    """
    return _model(read_state(path), model_type, trusted)


def load_tensors(path: str | os.PathLike, *, as_float32: bool = False) -> dict[str, np.ndarray]:
    """Read every tensor of any GGUF file, whoever wrote it.

    Plain tensors keep their dtype (F64/F32/F16/I64/I32/I16/I8, in native byte order),
    BF16 comes back as ``ml_dtypes.bfloat16``, and GGML block types (Q8_0, Q4_K, ...)
    are dequantized to float32 by ``gguf.quants``. Names are the file's own (an
    aprender file's mapped names too: :func:`read_state` restores those).

    Parameters
    ----------
    path : str or PathLike
        A GGUF file (v2 or v3, either byte order).
    as_float32 : bool, default=False
        Widen F16 and BF16 tensors to float32.

    Returns
    -------
    dict of str to ndarray
        Fresh C-ordered arrays, in ``numpy`` shape order (slowest dimension first).

    Raises
    ------
    FormatError
        If the file is truncated, malformed, or holds a type ``gguf.quants`` cannot
        dequantize.
    UnsupportedVersion
        If the GGUF version is not one the ``gguf`` package reads.

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> from gguf import GGMLQuantizationType, GGUFWriter, quants
    >>> from aprender.format.gguf import load_tensors
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.gguf")
    >>> writer = GGUFWriter(path, "llama")
    >>> writer.add_tensor("norm", np.ones(4, dtype=np.float16))
    >>> blocks = quants.quantize(np.full((2, 32), 0.5, dtype=np.float32), GGMLQuantizationType.Q8_0)
    >>> writer.add_tensor("w", blocks, raw_dtype=GGMLQuantizationType.Q8_0)
    >>> writer.write_header_to_file(); writer.write_kv_data_to_file(); writer.write_tensors_to_file()
    >>> writer.close()
    >>> tensors = load_tensors(path, as_float32=True)
    >>> tensors["norm"].dtype, tensors["w"].shape, bool(np.abs(tensors["w"] - 0.5).max() < 1e-3)
    (dtype('float32'), (2, 32), True)
    """
    p = existing_file(path)
    where = _where(p)
    return foreign.tensors(open_any(p, where), where, as_float32=as_float32)


def inspect_file(path: str | os.PathLike) -> ModelInfo:
    """Describe a GGUF file from its key-values and tensor table, without reading tensor data.

    A file another tool wrote (``general.architecture`` is not ``"aprender"``) is
    described too: ``class_key`` and ``model_type`` None, its key-values as
    ``metadata`` (arrays summarised by their length), every tensor type in the table,
    and ``extra["foreign"]`` True.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import gguf
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.gguf")
    >>> gguf.save_file(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> info = gguf.inspect_file(path)
    >>> info.class_key, [(t.name, t.dtype) for t in info.tensors][:1]
    ('aprender.linear_model.LinearRegression', [('coefficients', 'float64')])
    """
    p = existing_file(path)
    where = _where(p)
    reader = open_any(p, where)
    if foreign.is_foreign(reader):
        return foreign.describe(reader, str(p))
    check_extent(reader, where)
    meta, tensor_map = read_fields(reader, where)
    qtype = quantized_type(meta)
    record: Any = meta["quantization"].get("tensors") if qtype else None  # the file's: checked as it is used
    tensors = []
    for t in reader.tensors:
        dtype, shape = layout.stored_form(t.tensor_type, t.shape.tolist())
        name, dtype, shape = layout.check_entry(t.name, dtype, shape, tensor_map.get(t.name), where)
        block = qtype if isinstance(record, dict) and name in record else None
        if block is not None:
            shape, _ = _quantize.true_shape(record[name], name)
        tensors.append(TensorInfo(name, block or dtype.name, shape, int(t.n_bytes), offset=int(t.data_offset),
                                  quantization=block))
    model_type: Any = meta.get("model_type")
    return ModelInfo(
        format="gguf",
        path=str(p),
        file_size=len(reader.data),
        model_type=ModelType(model_type) if model_type in ModelType._value2member_map_ else None,
        class_key=meta["model"]["class"],
        format_version=str(int(reader.fields["GGUF.version"].parts[0][0])),
        metadata=meta,
        tensors=tuple(tensors),
        quantization=qtype,
        extra={
            "alignment": int(reader.alignment),
            "general": {k: _plain(f) for k, f in reader.fields.items() if k.startswith("general.")},
            "tensor_map": tensor_map,
            "gguf_names": [t.name for t in reader.tensors],
        },
    )


def _plain(field: Any) -> Any:
    try:
        return field.contents()
    except (UnicodeDecodeError, ValueError, IndexError):
        return None


def validate_file(path: str | os.PathLike, *, trusted: Any = None) -> ValidationReport:
    """Verify a GGUF file completely: structure, key-values, tensors, and a rebuild of the model.

    Raises the specific :class:`~aprender.exceptions.AprenderError` of the first
    problem found. A file another tool wrote (no aprender keys) is valid when its
    structure passes and every tensor reads (GGML blocks dequantized): the report then
    says ``model=False`` (raw tensors). ``trusted`` is :func:`load_file`'s.

    Examples
    --------
    >>> import tempfile, os
    >>> from aprender.linear_model import LinearRegression
    >>> from aprender.format import gguf
    >>> path = os.path.join(tempfile.mkdtemp(), "lr.gguf")
    >>> gguf.save_file(LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0]), path)
    >>> gguf.validate_file(path).model
    True
    """
    if inspect_file(path).extra.get("foreign"):
        load_tensors(path)
        return ValidationReport(str(path), "gguf", ("header, key-values and tensor layout",
                                "tensors read (no aprender model: raw tensors)"), model=False)
    unchecked = rebuilt(lambda: load_file(path, trusted=trusted))
    return ValidationReport(str(path), "gguf", ("header, key-values and tensor layout",
                            "tensors read" if unchecked else "model rebuilt through the allow-list"), model=True,
                            not_checked=unchecked)
