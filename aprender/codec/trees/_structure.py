"""Vectorised structural checks for packed tree node arrays read from a file.

Trees are stored packed: the nodes of all trees concatenated, with ``offsets``
marking where each tree starts. Child indices are local to their tree. scikit-learn
walks the nodes in C without bounds checks, so a child index outside the tree, a
cycle or a wrong depth bound can read or write out of bounds. These checks make
that impossible and run in a handful of NumPy passes, never a Python loop per node.

scikit-learn numbers nodes in creation order, so a child always has a larger index
than its parent. Requiring that (no cycles possible), plus exactly one parent for
every node but the root, makes each tree a proper tree rooted at its node 0.

Masks are tested with ``np.count_nonzero`` and indexed with ``mask.nonzero()[0]``: on a
tree of a few hundred nodes these cost a third of ``mask.any()`` and ``np.flatnonzero``,
which go through Python-level wrappers, and a lone tree's load is made of such calls.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from aprender.codec._checks import fail

__all__ = ["DOUBLING_MAX_NODES", "Layout", "check_children", "check_offsets", "max_per_tree", "node_depths"]


class Layout:
    """Where each packed node lives: its tree's first node and its index inside the tree.

    Parameters
    ----------
    offsets : ndarray of int64
        Validated offsets (see :func:`check_offsets`).
    shape : sequence of int
        Shape of the ensemble's estimator grid, used to name trees in messages:
        ``(n_trees,)`` or ``(n_stages, n_trees_per_stage)``.
    kind : str
        What a tree is called in messages ("tree", "predictor").
    """

    def __init__(self, offsets: np.ndarray, shape: Sequence[int], kind: str = "tree") -> None:
        self.offsets = offsets
        self.shape = tuple(shape)
        self.kind = kind
        self.sizes = offsets[1:] - offsets[:-1]

    @functools.cached_property
    def base(self) -> np.ndarray:
        """Packed index of each node's tree's root."""
        return np.repeat(self.offsets[:-1], self.sizes)

    @functools.cached_property
    def local(self) -> np.ndarray:
        """Index of each node inside its tree."""
        local = np.arange(self.offsets[-1], dtype=np.int64)
        local -= self.base
        return local

    def parents(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray | int, np.ndarray]:
        """For packed ``nodes`` (int64): their local index, their tree's root, and how many nodes follow
        each in its tree. A lone tree (a DecisionTree) needs no gathers: its local indices are the
        packed ones."""
        if self.sizes.shape[0] == 1:
            return nodes, 0, int(self.offsets[1]) - 1 - nodes
        local = self.local[nodes]
        return local, self.base[nodes], self.per_node(self.sizes)[nodes] - local - 1

    def per_node(self, per_tree: np.ndarray) -> np.ndarray:
        """Spread one value per tree to every node of that tree."""
        return np.repeat(per_tree, self.sizes)

    def name(self, t: int) -> str:
        """Human name of tree ``t``: ``tree 3``, or ``tree (2, 1)`` in a grid."""
        label = t if len(self.shape) < 2 else tuple(int(j) for j in np.unravel_index(t, self.shape))
        return f"{self.kind} {label}"

    def node(self, i: int) -> str:
        """Human name of packed node ``i``: ``tree 3 node 17``."""
        t = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return f"{self.name(t)} node {int(self.local[i])}"


def check_offsets(offsets: object, n_trees: int, n_items: int, path: str, name: str, *, empty_ok: bool) -> np.ndarray:
    """Check ``offsets``: int64, ``n_trees + 1`` entries from 0 to ``n_items``, never decreasing.

    With ``empty_ok=False`` every tree must own at least one item (a tree has a root).
    """
    if not isinstance(offsets, np.ndarray) or offsets.dtype != np.int64 or offsets.shape != (n_trees + 1,):
        found = f"{getattr(offsets, 'dtype', type(offsets).__name__)} {getattr(offsets, 'shape', '')}"
        raise fail(path, f"'{name}' must be int64 of shape ({n_trees + 1},), found {found}")
    if offsets[0] != 0 or offsets[-1] != n_items:
        raise fail(path, f"'{name}' must run from 0 to {n_items}, found {offsets[0]} to {offsets[-1]}")
    steps = offsets[1:] - offsets[:-1]
    bad = steps < (0 if empty_ok else 1)
    if np.count_nonzero(bad):
        t = int(np.argmax(bad))
        rule = "never decrease" if empty_ok else "increase (every tree needs a root node)"
        raise fail(path, f"'{name}' must {rule}: entry {t} is {offsets[t]}, entry {t + 1} is {offsets[t + 1]}")
    return offsets


def check_children(layout: Layout, internal: np.ndarray, children: dict[str, np.ndarray], path: str) -> None:
    """Check the child indices of every internal node: each tree must be a proper tree rooted at 0.

    ``children`` maps a field name ("left_child") to local child indices (any int
    dtype); only entries where ``internal`` is true are read. All children are
    checked in one pass over their concatenation; only a file that fails is looked
    at again, field by field, to say which child of which node is wrong.
    """
    nodes = internal.nonzero()[0]
    local, base, after = layout.parents(nodes)
    n_kinds = len(children)
    child = np.concatenate([c[nodes] for c in children.values()]).astype(np.int64, copy=False)
    local, after = np.concatenate((local,) * n_kinds), np.concatenate((after,) * n_kinds)
    # A child lies after its parent and inside the tree: 0 <= child - local - 1 < after.
    bad = (child - local - 1).view(np.uint64) >= after.view(np.uint64)
    if np.count_nonzero(bad):
        k = int(np.argmax(bad))
        name, node = list(children)[k // nodes.shape[0]], int(nodes[k % nodes.shape[0]])
        where = layout.node(node)
        if child[k] <= local[k]:
            raise fail(path, f"{where}: {name} {child[k]} does not come after its parent "
                             "(children must have larger indices; this would allow a cycle)")
        raise fail(path, f"{where}: {name} {child[k]} is outside the tree's {local[k] + after[k] + 1} nodes")
    target = child + (base if type(base) is int else np.concatenate((base,) * n_kinds))
    n_nodes = int(layout.offsets[-1])
    has_parent = np.zeros(n_nodes, dtype=bool)
    has_parent[target] = True
    # Children are distinct non-root nodes, as many as there are non-root nodes: then
    # every node but the root has exactly one parent. Anything else is found and named.
    if target.shape[0] == n_nodes - layout.sizes.shape[0] and int(np.count_nonzero(has_parent)) == target.shape[0]:
        return
    parents = np.bincount(target, minlength=n_nodes)
    shared = parents > 1
    if np.count_nonzero(shared):
        i = int(np.argmax(shared))
        raise fail(path, f"{layout.node(i)} has {int(parents[i])} parents: the nodes do not form a tree")
    i = int(np.argmax((parents == 0) & (layout.local != 0)))
    raise fail(path, f"{layout.node(i)} is not reachable from the root: no node points to it")


#: Up to this many nodes, depths are found by pointer doubling: a few passes over all nodes,
#: where one pass per level costs more in NumPy calls than in work for a small tree (a
#: DecisionTree of 400 nodes is 25 levels deep). Above it, one pass per level reads less.
DOUBLING_MAX_NODES = 1 << 16


def node_depths(layout: Layout, internal: np.ndarray, children: Sequence[np.ndarray]) -> np.ndarray:
    """Depth of every node (roots are 0).

    Only call this after :func:`check_children` accepted the trees: then every node but
    a root has one parent that comes before it, the loops end, and both ways give the
    same depths.
    """
    n_nodes = layout.local.shape[0]
    if n_nodes <= DOUBLING_MAX_NODES:
        return _depths_by_doubling(layout, internal, children)
    depth = np.empty(n_nodes, dtype=np.int64)
    targets = [child + layout.base for child in children]  # global indices (garbage for leaves, never read)
    level = layout.offsets[:-1]
    d = 0
    while level.size:  # one level of all trees at a time
        depth[level] = d
        inner = level[internal[level]]
        level = np.concatenate([target[inner] for target in targets])
        d += 1
    return depth


def _depths_by_doubling(layout: Layout, internal: np.ndarray, children: Sequence[np.ndarray]) -> np.ndarray:
    # jump[i] is an ancestor of i (a root is its own) and depth[i] the distance to it; each
    # pass doubles the distance covered, until every node jumps to its root.
    n_nodes = layout.local.shape[0]
    nodes = internal.nonzero()[0]
    itself = np.arange(n_nodes)
    jump = itself.copy()
    for child in children:
        jump[child[nodes] + layout.base[nodes]] = nodes
    depth = (jump != itself).astype(np.int64)
    while True:
        further = jump[jump]
        if (further == jump).all():
            return depth
        depth += depth[jump]
        jump = further


def max_per_tree(layout: Layout, values: np.ndarray) -> np.ndarray:
    """The maximum of ``values`` within each tree (every tree has at least one node)."""
    return np.maximum.reduceat(values, layout.offsets[:-1]) if values.size else values
