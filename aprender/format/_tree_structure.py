"""Vectorised structural checks for packed tree node arrays read from a file.

Trees are stored packed: the nodes of all trees concatenated, with ``offsets``
marking where each tree starts. Child indices are local to their tree. scikit-learn
walks the nodes in C without bounds checks, so a child index outside the tree, a
cycle or a wrong depth bound can read or write out of bounds. These checks make
that impossible and run in a handful of NumPy passes, never a Python loop per node.

scikit-learn numbers nodes in creation order, so a child always has a larger index
than its parent. Requiring that (no cycles possible), plus exactly one parent for
every node but the root, makes each tree a proper tree rooted at its node 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aprender.format._schemas._checks import fail

__all__ = ["Layout", "check_children", "check_offsets", "max_per_tree", "node_depths"]


class Layout:
    """Where each packed node lives: its tree, its index inside the tree, the tree's size.

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
        sizes = np.diff(offsets)
        self.tree = np.repeat(np.arange(sizes.shape[0]), sizes)
        self.base = offsets[:-1][self.tree]
        self.local = np.arange(offsets[-1], dtype=np.int64) - self.base
        self.size = sizes[self.tree]

    def name(self, t: int) -> str:
        """Human name of tree ``t``: ``tree 3``, or ``tree (2, 1)`` in a grid."""
        label = t if len(self.shape) < 2 else tuple(int(j) for j in np.unravel_index(t, self.shape))
        return f"{self.kind} {label}"

    def node(self, i: int) -> str:
        """Human name of packed node ``i``: ``tree 3 node 17``."""
        return f"{self.name(int(self.tree[i]))} node {int(self.local[i])}"


def check_offsets(offsets: object, n_trees: int, n_items: int, path: str, name: str, *, empty_ok: bool) -> np.ndarray:
    """Check ``offsets``: int64, ``n_trees + 1`` entries from 0 to ``n_items``, never decreasing.

    With ``empty_ok=False`` every tree must own at least one item (a tree has a root).
    """
    if not isinstance(offsets, np.ndarray) or offsets.dtype != np.int64 or offsets.shape != (n_trees + 1,):
        found = f"{getattr(offsets, 'dtype', type(offsets).__name__)} {getattr(offsets, 'shape', '')}"
        raise fail(path, f"'{name}' must be int64 of shape ({n_trees + 1},), found {found}")
    if offsets[0] != 0 or offsets[-1] != n_items:
        raise fail(path, f"'{name}' must run from 0 to {n_items}, found {offsets[0]} to {offsets[-1]}")
    steps = np.diff(offsets)
    bad = steps < (0 if empty_ok else 1)
    if bad.any():
        t = int(np.argmax(bad))
        rule = "never decrease" if empty_ok else "increase (every tree needs a root node)"
        raise fail(path, f"'{name}' must {rule}: entry {t} is {offsets[t]}, entry {t + 1} is {offsets[t + 1]}")
    return offsets


def check_children(layout: Layout, internal: np.ndarray, children: dict[str, np.ndarray], path: str) -> np.ndarray:
    """Check the child indices of every internal node; return the global index of each child.

    ``children`` maps a field name ("left_child") to local child indices (any int
    dtype); only entries where ``internal`` is true are read.
    """
    globals_ = []
    for name, child in children.items():
        child = child.astype(np.int64, copy=False)
        backwards = internal & (child <= layout.local)
        outside = internal & (child >= layout.size)
        if backwards.any():
            i = int(np.argmax(backwards))
            raise fail(path, f"{layout.node(i)}: {name} {int(child[i])} does not come after its parent "
                             "(children must have larger indices; this would allow a cycle)")
        if outside.any():
            i = int(np.argmax(outside))
            raise fail(path, f"{layout.node(i)}: {name} {int(child[i])} is outside the tree's "
                             f"{int(layout.size[i])} nodes")
        globals_.append(child[internal] + layout.base[internal])
    targets = np.concatenate(globals_)
    parents = np.bincount(targets, minlength=layout.local.shape[0])
    shared = parents > 1
    if shared.any():
        i = int(np.argmax(shared))
        raise fail(path, f"{layout.node(i)} has {int(parents[i])} parents: the nodes do not form a tree")
    orphan = (parents == 0) & (layout.local != 0)
    if orphan.any():
        i = int(np.argmax(orphan))
        raise fail(path, f"{layout.node(i)} is not reachable from the root: no node points to it")
    return targets


def node_depths(layout: Layout, internal: np.ndarray, children: Sequence[np.ndarray]) -> np.ndarray:
    """Depth of every node (roots are 0), level by level over all trees at once.

    Only call this after :func:`check_children` accepted the trees, so each level
    only holds nodes deeper than the last and the loop ends after the deepest leaf.
    """
    depth = np.zeros(layout.local.shape[0], dtype=np.int64)
    level = layout.offsets[:-1].copy()
    d = 0
    while level.size:
        depth[level] = d
        inner = level[internal[level]]
        level = np.concatenate([child[inner].astype(np.int64) + layout.base[inner] for child in children])
        d += 1
    return depth


def max_per_tree(layout: Layout, values: np.ndarray) -> np.ndarray:
    """The maximum of ``values`` within each tree (every tree has at least one node)."""
    return np.maximum.reduceat(values, layout.offsets[:-1]) if values.size else values
