"""How many estimators a file may nest inside one another.

scikit-learn asks a meta-estimator's members for their tags on every call (``check_is_fitted``,
``get_tags``), and a Pipeline asks its first and last steps several times over, so the work of each
``predict`` or ``transform`` grows about threefold per level of nesting. A 4 KB file of twelve
Pipelines, one inside the next, loaded in milliseconds and then took 30 s per two-row ``transform``;
sixteen did not return in 100 s. The codec's own depth bound (64 value levels) let about sixteen
through. So a file may nest at most :data:`aprender._limits.MAX_NESTED_ESTIMATORS` estimators, counted
before anything is decoded.
"""

from __future__ import annotations

from typing import Any

from aprender import _limits
from aprender.codec._checks import fail
from aprender.codec._nodes import join

__all__ = ["check_nesting"]

# Keys of the metadata tree's own nodes, left out of the path the error names (``steps.0.1``, not
# ``params.steps.0.v.1``).
_WRAPPERS = frozenset(["params", "attrs", "v"])


def check_nesting(model: Any) -> None:
    """At most :data:`~aprender._limits.MAX_NESTED_ESTIMATORS` estimator nodes on any path of ``model``'s tree.

    Raises
    ------
    FormatError
        Naming the bound and where it is passed.
    """
    bound = _limits.MAX_NESTED_ESTIMATORS
    stack: list[tuple[Any, int, str]] = [(model, 0, "")]
    while stack:  # the metadata tree is at most MAX_JSON_DEPTH deep and its values are counted: no recursion
        node, levels, path = stack.pop()
        if isinstance(node, dict):
            if node.get("__t__") == "estimator":
                levels += 1
                if levels > bound:
                    raise fail(path, f"estimators nested {levels} deep: at most {bound} (every call of a "
                                     "meta-estimator asks its members for their tags, work that grows "
                                     "about threefold per level; aprender._limits.MAX_NESTED_ESTIMATORS)")
            stack.extend((value, levels, path if key in _WRAPPERS else join(path, key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, levels, join(path, i)) for i, value in enumerate(node))
