"""aprender's metadata in an ONNX model: ``metadata_props`` and ``doc_string``.

Every key starts with ``aprender.``; values are plain strings, JSON where noted
(docs/onnx.md lists them). The class and parameter tree come from the codec
(:func:`~aprender.codec.to_state`) so they read exactly as in the other formats,
without the fitted attributes, which the graph itself carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from aprender.codec import ModelType
from aprender.codec._encode import Encoder
from aprender.codec._registry import entry_for_class, public_key
from aprender.codec._state import _versions, canonical_json, to_state
from aprender.exceptions import UnsupportedTypeError
from aprender.format.onnx._props import PREFIX

__all__ = ["doc_string", "model_props"]


def _params_only(node: Any) -> Any:
    """The codec's model tree without fitted attributes (they reference tensors)."""
    if isinstance(node, dict):
        if node.get("__t__") == "estimator":
            return {"__t__": "estimator", "class": node["class"], "params": _params_only(node["params"])}
        return {k: _params_only(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_params_only(v) for v in node]
    return node


def _plain_value(value: Any, name: str) -> Any:
    """A scalar parameter as the codec writes it: NaN and inf as ``{"__t__": "float", "v": "nan"}``.

    JSON has no NaN or infinity (``missing_values=np.nan``, ``max_eps=np.inf``), and the
    codec's nodes keep the value exact; a scalar the codec refuses is shown as its repr.
    """
    try:
        return Encoder().value(value, name, 1)
    except UnsupportedTypeError:
        return repr(value)


def _plain_params(est: Any) -> dict[str, Any]:
    """Parameters of a class the codec does not know, as readable JSON."""
    out: dict[str, Any] = {}
    for name, value in sorted(est.get_params(deep=False).items()):
        if value is None or isinstance(value, (bool, int, float, str, np.generic)):
            out[name] = _plain_value(value, name)
        elif hasattr(value, "get_params") and hasattr(value, "fit"):
            out[name] = {"__t__": "estimator", "class": public_key(type(value)), "params": _plain_params(value)}
        else:
            out[name] = repr(value)
    return out


def model_props(model: Any, metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """The ``metadata_props`` of ``model``'s ONNX export."""
    import onnx
    import skl2onnx

    user = dict(metadata or {})
    try:
        meta = to_state(model, metadata=user).meta
        key, model_type = meta["model"]["class"], _type_name(meta["model_type"])
        params, versions = _params_only(meta["model"]["params"]), meta["versions"]
    except UnsupportedTypeError:  # a scikit-learn class off the allow-list: skl2onnx may still convert it
        canonical_json(user)
        key, model_type = public_key(type(model)), _registered_type(model)
        params, versions = _plain_params(model), _versions()
    versions = {**versions, "onnx": onnx.__version__, "skl2onnx": skl2onnx.__version__}
    props = {
        "class": key,
        "model_type": model_type,
        "params": canonical_json(params),
        "versions": canonical_json(versions),
        "user": canonical_json(user),
    }
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        props["feature_names_in"] = canonical_json([str(n) for n in names])
    return {PREFIX + k: v for k, v in sorted(props.items())}


def _type_name(code: int) -> str:
    return ModelType(code).name


def _registered_type(model: Any) -> str:
    try:
        return entry_for_class(type(model)).spec.model_type.name
    except UnsupportedTypeError:
        return ModelType.CUSTOM.name


def doc_string(model: Any, key: str) -> str:
    """One line naming the exported class."""
    from aprender._version import __version__

    return f"{type(model).__name__} ({key}) exported by aprender {__version__}"
