"""Schema of Pipeline: its steps are the state, each step encoded under ``steps.{i}.{name}.``.

A Pipeline has no fitted attributes of its own; what a file can get wrong is the
shape of ``steps``, so that is what is checked, before sklearn ever iterates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import pipeline as sk

from aprender import pipeline as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail


def is_skip(value: Any) -> bool:
    """``"passthrough"`` or ``None``: a step that stands for "no estimator here"."""
    return value is None or (type(value) is str and value == "passthrough")


def is_estimator(value: Any) -> bool:
    """A decoded estimator (only allow-listed classes decode to objects with ``fit``)."""
    return hasattr(value, "fit") and hasattr(value, "get_params")


def check_names(names: list[Any], reserved: Mapping[str, Any], what: str, path: str) -> None:
    """Step names: distinct strings without ``__`` that do not clash with parameters (sklearn's rules)."""
    for name in names:
        if type(name) is not str or not name or "__" in name or name in reserved:
            raise fail(path, f"{what} name {str(name)[:80]!r} must be a non-empty string without '__' "
                             "that is not a parameter name")
    if len(set(names)) != len(names):
        raise fail(path, f"{what} names are not unique: {names!r}")


def check_pipeline(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """steps is a non-empty list of (name, estimator) pairs; every step but the last transforms."""
    steps = params.get("steps")
    if not isinstance(steps, list) or not steps:
        raise fail(path, "'steps' must be a non-empty list of (name, estimator) pairs")
    for i, step in enumerate(steps):
        if not isinstance(step, tuple) or len(step) != 2:
            raise fail(path, f"'steps.{i}' must be a (name, estimator) pair, found {type(step).__name__}")
    check_names([name for name, _ in steps], params, "step", path)
    *transforms, (last_name, last) = steps
    for name, step in transforms:
        if not is_skip(step) and not (is_estimator(step) and hasattr(step, "transform")):
            raise fail(path, f"step '{name}' must be a transformer or 'passthrough', found {type(step).__name__}")
    if not is_skip(last) and not is_estimator(last):
        raise fail(path, f"final step '{last_name}' must be an estimator or 'passthrough', found {type(last).__name__}")


SCHEMAS = [
    ((ap.Pipeline, sk.Pipeline), Spec(ModelType.PIPELINE, validate=check_pipeline)),
]
