"""Loading side of the ``aprender`` MLflow flavor, and its ``python_function`` loader.

``mlflow.pyfunc.load_model`` imports the loader module the MLmodel file names
(:data:`LOADER_MODULE`, which re-exports this one) and calls :func:`_load_pyfunc` with the model folder. The model file
is read by aprender's own loaders, after its SHA-256 is checked against the MLmodel
file: nothing is unpickled.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from aprender.exceptions import FormatError
from aprender.format._formats import having

__all__ = ["FLAVOR_NAME", "LOADER_MODULE", "METHODS", "MODEL_FILES", "AprenderPyfuncModel", "load_folder"]

FLAVOR_NAME = "aprender"
#: The ``loader_module`` every MLmodel file names: a stable module name, whatever this package's layout.
LOADER_MODULE = "aprender._mlflow_pyfunc"
#: Serialization format -> the model file's name inside the MLflow model folder (every format that loads).
MODEL_FILES = {f.name: f"model{f.suffix}" for f in having("loads")}
#: The estimator methods a pyfunc ``predict`` may call (a file names one; nothing else is looked up).
METHODS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "transform", "score_samples")


def _flavor(folder: Path) -> tuple[Any, dict[str, Any]]:
    from mlflow.models import Model

    mlmodel = folder / "MLmodel"
    if not mlmodel.is_file():
        raise FileNotFoundError(f"'{folder}' is not an MLflow model folder: it has no MLmodel file")
    model = Model.load(str(mlmodel))
    conf = model.flavors.get(FLAVOR_NAME)
    if not isinstance(conf, dict):
        raise FormatError(f"'{mlmodel}' has no '{FLAVOR_NAME}' flavor (flavors: {sorted(model.flavors)}); "
                          "it was not saved by aprender.mlflow")
    return model, conf


def load_folder(path: str | os.PathLike, trusted: Any = None) -> tuple[Any, Any]:
    """The estimator in a local MLflow model folder, and its ``mlflow.models.Model`` (the MLmodel file).

    Raises :class:`~aprender.exceptions.FormatError` when the flavor is missing,
    names another file than aprender writes, or the file's SHA-256 differs from the
    one recorded at save time. ``trusted`` as for ``aprender.load``.
    """
    from aprender.format._api import load
    from aprender.format._io import sha256_file

    folder = Path(path)
    mlmodel, conf = _flavor(folder)
    fmt = conf.get("format")
    if fmt not in MODEL_FILES or conf.get("model_file") != MODEL_FILES[fmt]:
        expected = " or ".join(f"{name!r} with {file}" for name, file in MODEL_FILES.items())
        raise FormatError(f"'{folder / 'MLmodel'}': the aprender flavor must name format {expected}, found {fmt!r} "
                          f"with {conf.get('model_file')!r}")
    file = folder / MODEL_FILES[fmt]
    digest = sha256_file(file) if file.is_file() else None
    if digest is None:
        raise FileNotFoundError(f"'{folder}' has no {file.name}")
    if digest != conf.get("sha256"):
        raise FormatError(f"'{file}' has sha256 {digest} but MLmodel records {conf.get('sha256')!r}: the model "
                          "file was changed after it was saved")
    return load(file, trusted=trusted), mlmodel


def predict_input(model: Any, model_input: Any) -> Any:
    """What to hand the estimator: DataFrames keep their columns only if it was fitted with names."""
    import pandas as pd

    if isinstance(model_input, pd.DataFrame) and getattr(model, "feature_names_in_", None) is None:
        return model_input.to_numpy()
    return model_input


class AprenderPyfuncModel:
    """The ``python_function`` face of an aprender model: ``predict`` calls the chosen method.

    Parameters
    ----------
    model : estimator
        The loaded model.
    predict_fn : str, default="predict"
        The estimator method ``predict`` calls (``predict_proba``, ``transform`` ...).
    """

    def __init__(self, model: Any, predict_fn: str = "predict") -> None:
        self.model = model
        self.predict_fn = predict_fn

    def predict(self, model_input: Any, params: dict[str, Any] | None = None) -> Any:
        """Apply the model's ``predict_fn`` to ``model_input`` (DataFrame or array)."""
        return getattr(self.model, self.predict_fn)(predict_input(self.model, model_input))

    def get_raw_model(self) -> Any:
        """The estimator itself."""
        return self.model


def _load_pyfunc(path: str, model_config: dict[str, Any] | None = None) -> AprenderPyfuncModel:
    """Called by ``mlflow.pyfunc.load_model`` with the local model folder.

    ``model_config`` is never read for trust: MLflow merges the caller's with the one the
    MLmodel file records, so a folder could grant itself functions. A pyfunc load trusts
    what the process registered (``aprender.register_function``) and nothing else.
    """
    model, mlmodel = load_folder(path)
    method = mlmodel.flavors[FLAVOR_NAME].get("pyfunc_predict_fn", "predict")
    if method not in METHODS or not callable(getattr(model, method, None)):
        raise FormatError(f"'{Path(path) / 'MLmodel'}': pyfunc_predict_fn {method!r} is not a prediction method of "
                          f"{type(model).__name__} (one of {', '.join(METHODS)})")
    return AprenderPyfuncModel(model, method)
