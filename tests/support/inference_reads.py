"""Which attributes of ``self`` an estimator's inference methods read, from their source.

A hyperparameter that only ``fit`` reads costs nothing when a loaded model is used; one that
``transform`` reads (NMF's ``max_iter``: its transform reruns the solver) costs every call. The
reads are found by walking the source of each inference method and, transitively, of every
method or property of the class it reaches through ``self``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any

#: The methods a user of a loaded model, or the server, calls.
INFERENCE = ("predict", "predict_proba", "predict_log_proba", "predict_joint_log_proba", "decision_function",
             "transform", "inverse_transform", "score", "score_samples", "apply", "decision_path", "kneighbors",
             "radius_neighbors", "kneighbors_graph", "radius_neighbors_graph", "get_feature_names_out",
             "perplexity", "staged_predict", "staged_predict_proba", "staged_decision_function", "mahalanobis",
             "sample_y")


@functools.cache
def _tree(function: Any) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):  # compiled or generated: no Python source to read
        return None


def _function(cls: type, name: str) -> Any:
    member = inspect.getattr_static(cls, name, None)
    member = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
    return inspect.unwrap(member) if callable(member) else None


def inference_reads(cls: type) -> frozenset[str]:
    """Every ``self.<name>`` that ``cls``'s inference methods, and the methods they call on ``self``, read."""
    todo = [name for name in INFERENCE if callable(getattr(cls, name, None))]
    seen: set[str] = set()
    reads: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        function = _function(cls, name)
        tree = _tree(function) if function is not None else None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                reads.add(node.attr)
                if _function(cls, node.attr) is not None:
                    todo.append(node.attr)
    return frozenset(reads)
