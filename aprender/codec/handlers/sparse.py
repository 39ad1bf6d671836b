"""scipy.sparse matrices: CSR and CSC (data, indices and indptr tensors) and COO (data, row and column
tensors), every index checked before scipy sees it.

COO matrices are what users build a connectivity graph with (``AgglomerativeClustering(
connectivity=coo_matrix(...))``); they are stored as COO, so a loaded model holds the same
type, entry for entry, duplicates included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import scipy.sparse as sp

from aprender._limits import MAX_ELEMENTS
from aprender.codec._checks import check_compressed, fail
from aprender.codec._nodes import join, preview
from aprender.codec.handlers._base import TENSOR, Handler, register_handler, tensor_field
from aprender.exceptions import UnsupportedTypeError

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding

_SPARSE = {
    ("csr", False): sp.csr_matrix,
    ("csc", False): sp.csc_matrix,
    ("csr", True): sp.csr_array,
    ("csc", True): sp.csc_array,
}


def _encode_sparse(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    fmt = value.format
    if fmt not in ("csr", "csc"):
        raise UnsupportedTypeError(path, type(value).__name__, "only CSR and CSC sparse matrices are stored")
    return {
        "format": fmt,
        "array": isinstance(value, sp.sparray),
        "shape": [int(d) for d in value.shape],
        "data": enc.tensor(value.data, join(path, "data")),
        "indices": enc.tensor(value.indices, join(path, "indices")),
        "indptr": enc.tensor(value.indptr, join(path, "indptr")),
    }


_COO = {False: sp.coo_matrix, True: sp.coo_array}


def _encode_coo(value: Any, enc: Encoding, path: str) -> dict[str, Any]:
    if value.ndim != 2:
        raise UnsupportedTypeError(path, type(value).__name__, "only 2-d COO matrices are stored")
    return {
        "array": isinstance(value, sp.sparray),
        "shape": [int(d) for d in value.shape],
        "data": enc.tensor(value.data, join(path, "data")),
        "row": enc.tensor(value.row, join(path, "row")),
        "col": enc.tensor(value.col, join(path, "col")),
    }


def _decode_coo(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    shape = _shape(node["shape"], path)
    data = tensor_field(dec, node, "data", path, "biuf")
    row, col = (tensor_field(dec, node, name, path, "iu") for name in ("row", "col"))
    for name, index, bound in (("row", row, shape[0]), ("col", col, shape[1])):
        if index.shape != data.shape or index.ndim != 1:
            raise fail(path, f"COO '{name}' has shape {index.shape}, data {data.shape}")
        if index.size and (index.min() < 0 or index.max() >= bound):
            raise fail(path, f"COO '{name}' indices must lie in [0, {bound})")
    return _COO[node["array"]]((data, (row, col)), shape=shape)


def _shape(shape: Any, path: str) -> tuple[int, int]:
    if not (len(shape) == 2 and all(type(d) is int and 0 <= d <= MAX_ELEMENTS for d in shape)):
        raise fail(path, f"invalid sparse matrix shape {preview(shape)}")
    return shape[0], shape[1]


def _decode_sparse(node: Mapping[str, Any], dec: Decoding, path: str) -> Any:
    key = (node["format"], node["array"])
    cls = _SPARSE.get(key)
    shape = node["shape"]
    valid_shape = len(shape) == 2 and all(type(d) is int and 0 <= d <= MAX_ELEMENTS for d in shape)
    if cls is None or not valid_shape:
        raise fail(path, f"invalid sparse matrix description {preview(key)} shape={preview(shape)}")
    data = tensor_field(dec, node, "data", path, "biuf")
    indices = tensor_field(dec, node, "indices", path, "iu")
    indptr = tensor_field(dec, node, "indptr", path, "iu")
    n_major, n_minor = (shape[0], shape[1]) if key[0] == "csr" else (shape[1], shape[0])
    check_compressed(indptr, indices, n_major, n_minor, path)
    if data.shape != indices.shape:
        raise fail(path, f"sparse data has shape {data.shape}, indices {indices.shape}")
    return cls((data, indices, indptr), shape=tuple(shape))


register_handler(Handler("coo", (sp.coo_matrix, sp.coo_array), _encode_coo, _decode_coo,
                         {"array": (bool,), "shape": (list,), "data": TENSOR, "row": TENSOR, "col": TENSOR}))
register_handler(Handler("sparse", (sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array, sp.spmatrix, sp.sparray),
                         _encode_sparse, _decode_sparse,
                         {"format": (str,), "array": (bool,), "shape": (list,), "data": TENSOR, "indices": TENSOR,
                          "indptr": TENSOR}))
