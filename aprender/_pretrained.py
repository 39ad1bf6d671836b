"""Model folders in the Hugging Face style: ``save_pretrained`` and ``from_pretrained``.

A folder holds ``model.safetensors`` (the model), ``config.json`` (what the file
holds, readable without aprender) and ``README.md`` (a model card, see
:mod:`aprender.card`): the layout ``huggingface_hub`` uploads as a model repository.
``from_pretrained`` recomputes the configuration from the tensors file and the model
it rebuilds, and refuses a folder whose ``config.json`` says anything else.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aprender.codec import ModelState, from_state, to_state
from aprender.codec._state import parse_json
from aprender.exceptions import FormatError
from aprender.format import SaveOptions, safetensors
from aprender.format._io import sha256_file, write_atomic

__all__ = ["CARD", "CONFIG", "WEIGHTS", "from_pretrained", "save_pretrained"]

PathLike = str | os.PathLike
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
CARD = "README.md"
#: config.json keys that describe how the folder was made rather than the model.
_PROVENANCE = ("created_at", "provenance")


def _plain(values: Any) -> list[Any]:
    return np.asarray(values).tolist()


def _config(state: ModelState, model: Any, digest: str) -> dict[str, Any]:
    names = getattr(model, "feature_names_in_", None)
    classes = getattr(model, "classes_", None)
    return {
        "library_name": "aprender",
        "format": "safetensors",
        "file": WEIGHTS,
        "sha256": digest,
        "class": state.class_key,
        "model_type": state.model_type.name,
        "hyperparameters": state.meta.get("model", {}).get("params", {}),
        "versions": state.meta.get("versions", {}),
        "tensor_schema_version": state.meta.get("schema"),
        "n_features_in": getattr(model, "n_features_in_", None),
        "feature_names": None if names is None else [str(n) for n in names],
        "classes": None if classes is None else _plain(classes),
        "tensors": {name: {"dtype": str(a.dtype), "shape": list(a.shape)} for name, a in sorted(state.tensors.items())},
    }


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def save_pretrained(
    model: Any,
    folder: PathLike,
    *,
    card: Any = None,
    model_id: str | None = None,
    license: str | None = None,
    tags: Sequence[str] = (),
    datasets: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Path:
    """Write a model folder: ``model.safetensors``, ``config.json`` and a ``README.md`` card.

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator or a supported scikit-learn one.
    folder : str or PathLike
        Created if missing; the three files are replaced (each atomically), anything
        else in it (a ``.git`` folder, other files) is left alone.
    card : aprender.card.Card, optional
        A card you built (sections, metrics, plots); by default one is made from the
        other arguments. Needs the ``card`` extra.
    model_id, license, tags, datasets
        For the default card (see :class:`aprender.card.Card`).
    metadata : dict, optional
        JSON-able user metadata stored in the SafeTensors file.
    provenance : dict, optional
        Record provenance (git commit, dataset hash ...) with the Python version,
        platform and a creation time (``SOURCE_DATE_EPOCH`` when set) in
        ``config.json``. Without it the folder holds no time and the same model
        always gives the same bytes.

    Returns
    -------
    pathlib.Path
        The folder.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.linear_model import LinearRegression
    >>> folder = aprender.save_pretrained(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]),
    ...                                   os.path.join(tempfile.mkdtemp(), "line"), license="mit")
    >>> sorted(os.listdir(folder))
    ['README.md', 'config.json', 'model.safetensors']
    >>> aprender.from_pretrained(folder).predict([[2.0]])
    array([5.])
    """
    from aprender.card import Card

    state = to_state(model, metadata=metadata)
    if card is None:
        card = Card(model, model_id=model_id, license=license, tags=tags, datasets=datasets)
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    weights = target / WEIGHTS
    safetensors.write_state(state, weights)
    config = _config(state, model, sha256_file(weights))
    if provenance is not None:
        stamped = SaveOptions().with_provenance(**provenance).stamped()
        config.update(created_at=stamped.created_at, provenance=dict(stamped.provenance or {}))
    write_atomic(target / CONFIG, [_json_bytes(config)])
    card.for_file(weights, folder=True).save(target / CARD)
    return target


def _read_config(path: Path) -> dict[str, Any]:
    config = parse_json(path.read_bytes(), f"'{path}'")  # the metadata's rules: depth, values per byte
    if not isinstance(config, dict):
        raise FormatError(f"'{path}' must hold a JSON object, found {type(config).__name__}")
    if config.get("library_name") != "aprender":
        raise FormatError(f"'{path}' has library_name {config.get('library_name')!r}, not 'aprender': this folder "
                          "was not written by aprender.save_pretrained")
    return config


def from_pretrained(folder: PathLike, model_type: Any = None, *, trusted: Any = None) -> Any:
    """Load a folder written by :func:`save_pretrained`, checking config.json against the tensors.

    Parameters
    ----------
    folder : str or PathLike
        A model folder (``config.json`` and ``model.safetensors``).
    model_type : class or ModelType, optional
        Raise :class:`~aprender.exceptions.ModelTypeMismatch` if it holds another model.
    trusted : iterable, optional
        As for :func:`aprender.load`: function objects and hyperparameter names
        trusted beyond the defaults.

    Raises
    ------
    FileNotFoundError
        The folder or one of its two files is missing.
    FormatError
        ``config.json`` is malformed or disagrees with ``model.safetensors`` (its
        digest, class, hyperparameters, versions, schema version, feature names,
        classes or tensor table); the message names the key.

    Examples
    --------
    >>> import tempfile, os
    >>> import aprender
    >>> from aprender.preprocessing import StandardScaler
    >>> folder = os.path.join(tempfile.mkdtemp(), "scaler")
    >>> _ = StandardScaler().fit([[0.0], [4.0]]).save_pretrained(folder)
    >>> aprender.from_pretrained(folder).mean_
    array([2.])
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no such model folder: '{root}'")
    for name in (CONFIG, WEIGHTS):
        if not (root / name).is_file():
            raise FileNotFoundError(f"'{root}' is not a model folder: it has no {name}")
    config = _read_config(root / CONFIG)
    digest = sha256_file(root / WEIGHTS)
    if config.get("sha256") != digest:
        raise FormatError(f"'{root / CONFIG}' gives sha256 {config.get('sha256')!r} but {WEIGHTS} has {digest}: "
                          "the model file was changed or replaced after the folder was saved")
    state = safetensors.read_state(root / WEIGHTS)
    model = from_state(state, model_type, trusted=trusted)
    for key, actual in _config(state, model, digest).items():
        if key not in _PROVENANCE and config.get(key) != actual:
            raise FormatError(f"'{root / CONFIG}' disagrees with {WEIGHTS} on '{key}': config.json says "
                              f"{json.dumps(config.get(key))[:200]}, the model file holds {json.dumps(actual)[:200]}")
    return model
