"""Routing of a mixture of experts: each row to its top-k experts, within a capacity.

:func:`route` turns gate weights into the renormalised weights inference applies;
docs/schema/moe.md states the overflow rule it implements.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["route"]


def _queue_positions(experts: np.ndarray, priority: np.ndarray, n_experts: int) -> np.ndarray:
    """Place of each assignment in its expert's queue when assignments are served in ``priority`` order."""
    served = experts[priority]
    counts = np.bincount(served, minlength=n_experts)
    by_expert = np.argsort(served, kind="stable")
    position = np.empty(served.shape[0], dtype=np.int64)
    position[priority[by_expert]] = np.arange(served.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    return position


def _apply_capacity(gates: np.ndarray, order: np.ndarray, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Enforce ``capacity`` rows per expert on the top-k choices ``order``; see :func:`route`."""
    n, top_k = order.shape
    n_experts = gates.shape[1]
    rows = np.arange(n)
    order = order.copy()
    keep = np.zeros(order.shape, dtype=bool)
    # Phase 1: first choices, the most confident rows first, then by row index.
    first = gates[rows, order[:, 0]]
    priority = np.lexsort((rows, -first))
    keep[:, 0] = _queue_positions(order[:, 0], priority, n_experts) < capacity
    load = np.bincount(order[keep[:, 0], 0], minlength=n_experts)
    for i in priority[~keep[priority, 0]]:
        # Overflow: the row's best expert with room (total room >= n, so one always exists).
        preference = np.argsort(-gates[i], kind="stable")
        expert = preference[np.argmax(load[preference] < capacity)]
        load[expert] += 1
        order[i, 0] = expert
        keep[i, 0] = True
    if top_k > 1:
        # Phase 2: the other choices by rank, then confidence, then row, into the room left.
        later = order[:, 1:]
        r, c = np.nonzero(later != order[:, :1])
        experts = later[r, c]
        priority = np.lexsort((r, -gates[r, experts], c))
        keep[r, c + 1] = _queue_positions(experts, priority, n_experts) < (capacity - load)[experts]
    return order, keep


def route(gates: np.ndarray, top_k: int, capacity_factor: float | None = None) -> np.ndarray:
    """Combination weights of the experts for each row: top-k of the gate, renormalised.

    Each row keeps the ``top_k`` experts of highest gate weight (the lower expert index
    first on ties) and their gate weights divided by their sum.

    With ``capacity_factor`` an expert takes at most
    ``capacity = max(ceil(capacity_factor * top_k * n / n_experts), ceil(n / n_experts))``
    rows of the ``n``-row batch (the second term guarantees room for every row):

    1. First choices are served by descending gate weight, then row index. A row whose
       first choice is full goes to its best expert (by gate weight) that still has
       room, in that same order; every row is therefore routed to exactly one expert
       in this phase, possibly one outside its top-k.
    2. The remaining top-k choices are served by rank (all second choices before third
       choices), then descending gate weight, then row index, into the room left; a
       choice that finds its expert full -- or that names the expert the row already
       has -- is dropped.
    3. Each row's kept gate weights are renormalised to sum to one.

    Parameters
    ----------
    gates : ndarray of shape (n_samples, n_experts)
        Gate routing weights.
    top_k : int
        Experts per row.
    capacity_factor : float, optional
        Capacity relative to a perfectly balanced batch; ``None`` means unlimited.

    Returns
    -------
    ndarray of shape (n_samples, n_experts)
        Rows sum to one; experts a row is not routed to have weight 0.

    Examples
    --------
    >>> import numpy as np
    >>> from aprender.ensemble._moe import route
    >>> route(np.array([[0.5, 0.3, 0.2]]), top_k=2)
    array([[0.625, 0.375, 0.   ]])
    """
    n, n_experts = gates.shape
    top_k = min(top_k, n_experts)
    order = np.argsort(-gates, axis=1, kind="stable")[:, :top_k]
    keep = np.ones(order.shape, dtype=bool)
    if capacity_factor is not None and n:
        capacity = max(math.ceil(capacity_factor * top_k * n / n_experts), math.ceil(n / n_experts))
        order, keep = _apply_capacity(gates, order, capacity)
    chosen = np.where(keep, np.take_along_axis(gates, order, axis=1), 0.0)
    chosen /= chosen.sum(axis=1, keepdims=True)
    weights = np.zeros_like(gates, dtype=np.float64)
    rows = np.arange(n)
    for rank in range(top_k):
        weights[rows, order[:, rank]] += chosen[:, rank]
    return weights
