"""ONNX tensors stored outside the file: refused, before any tensor is read.

An ONNX tensor may keep its bytes in another file (``data_location = EXTERNAL`` and an
``external_data`` entry ``location``). ``onnx.numpy_helper.to_array`` resolves a relative
``location`` against the *working directory* when no folder is given, and ``onnx.load``
against the model's folder, following ``..``, absolute paths and symlinks: ``apr inspect
m.onnx`` would show statistics of (and so leak) a file the model names, such as a secret
in the folder the command runs from. aprender never writes external data, so every tensor
that names any is refused, wherever it sits: graph initializers, sparse initializers,
``Constant`` and other node attributes, and the same in every subgraph (``If``, ``Loop``,
``Scan`` bodies) and function.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx

from aprender.exceptions import FormatError

__all__ = ["refuse_external_data"]


def _graph_tensors(graph: Any) -> Iterator[Any]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices


def _node_tensors(nodes: Any, graphs: list[Any]) -> Iterator[Any]:
    """The tensors held by ``nodes``' attributes; their subgraphs are appended to ``graphs``."""
    for node in nodes:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("sparse_tensor"):
                yield attr.sparse_tensor.values
                yield attr.sparse_tensor.indices
            for sparse in attr.sparse_tensors:
                yield sparse.values
                yield sparse.indices
            if attr.HasField("g"):
                graphs.append(attr.g)
            graphs.extend(attr.graphs)


def _all_tensors(model: onnx.ModelProto) -> Iterator[Any]:
    # A work list, not recursion: the nesting of subgraphs is the file's choice.
    graphs = [model.graph]
    for function in model.functions:
        yield from _node_tensors(function.node, graphs)
    while graphs:
        graph = graphs.pop()
        yield from _graph_tensors(graph)
        yield from _node_tensors(graph.node, graphs)


def refuse_external_data(model: onnx.ModelProto, where: str) -> None:
    """Raise :class:`FormatError` if any tensor of ``model`` keeps its data in another file.

    Parameters
    ----------
    model : onnx.ModelProto
        A model parsed without its external data (``onnx.load(..., load_external_data=False)``).
    where : str
        The file, for the message.

    Raises
    ------
    FormatError
        Naming the first such tensor and the location it gives; nothing at that location
        is opened, resolved or read.
    """
    for tensor in _all_tensors(model):
        if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            raise FormatError(
                f"'{where}': tensor {tensor.name[:200]!r} keeps its data in another file "
                f"(location {location[:200]!r}); aprender reads only self-contained ONNX "
                "files and never opens a path a file names (re-save it with onnx.save(model, path, "
                "save_as_external_data=False))")
