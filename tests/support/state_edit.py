"""Craft hostile model files by editing a real model's state, then load them back.

Used by the pipeline and preprocessing tests: ``hostile(model, edit, tmp_path)``
saves ``model``'s ModelState after ``edit(meta, tensors)`` changed it, as a real
SafeTensors file, and returns the :class:`FormatError` that loading it raises.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import aprender
from aprender.codec import ModelState, to_state
from aprender.exceptions import FormatError
from aprender.format import safetensors


def estimator_nodes(node: Any) -> Iterator[dict]:
    """Every estimator node of a metadata tree, depth first."""
    if isinstance(node, dict):
        if node.get("__t__") == "estimator":
            yield node
        for value in node.values():
            yield from estimator_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from estimator_nodes(value)


def find(meta: dict, class_name: str, *, fitted: bool = True) -> dict:
    """The first (fitted) estimator node whose class key ends with ``.class_name``."""
    for node in estimator_nodes(meta["model"]):
        if node["class"].endswith("." + class_name) and (bool(node["attrs"]) or not fitted):
            return node
    raise AssertionError(f"no {class_name} node in the model")


def hostile(model: Any, edit: Callable[[dict, dict[str, np.ndarray]], None], tmp_path) -> FormatError:
    """Save ``model`` with ``edit`` applied to its state; loading the file must raise FormatError."""
    state = to_state(model)
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta, tensors)
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=tensors, meta=meta)))
    with pytest.raises(FormatError) as info:
        aprender.load(path)
    return info.value
