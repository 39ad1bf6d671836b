"""The ``sklearn_tree`` handler: one scikit-learn ``Tree``, as the node arrays of :mod:`aprender.codec.trees`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sklearn.tree._tree import Tree

from aprender.codec.handlers._base import TENSOR, Handler, register_handler, tensor_field
from aprender.codec.trees._sklearn_tree import TREE_ARRAYS, build_tree, tree_columns

if TYPE_CHECKING:
    from aprender.codec.handlers._base import Decoding, Encoding


def _encode_tree(tree: Tree, enc: Encoding, path: str) -> dict[str, Any]:
    node: dict[str, Any]
    node, arrays = tree_columns(tree)
    for name in TREE_ARRAYS:
        node[name] = enc.tensor(arrays[name], f"{path}.{name}")
    return node


def _decode_tree(node: Mapping[str, Any], dec: Decoding, path: str) -> Tree:
    packed: dict[str, Any] = {k: node.get(k) for k in ("n_features", "n_outputs", "n_classes")}
    for name in TREE_ARRAYS:
        packed[name] = tensor_field(dec, node, name, path, "biuf")
    return build_tree(packed, node["max_depth"], path)


register_handler(Handler("sklearn_tree", (Tree,), _encode_tree, _decode_tree,
                          {"n_features": (int,), "n_outputs": (int,), "n_classes": (list,), "max_depth": (int,),
                           **dict.fromkeys(TREE_ARRAYS, TENSOR)}))
