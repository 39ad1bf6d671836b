"""An MLflow flavor that stores models as ``.apr`` (or SafeTensors, GGUF) files, never pickles.

:func:`save_model` writes an MLflow model folder holding ``model.apr`` (or the file of
any other format that loads back: ``model.safetensors``, ``model.gguf``) and an
``MLmodel`` file declaring two flavors:

- ``aprender``: the model file, its format, SHA-256, class and library versions;
- ``python_function``: loader module ``aprender._mlflow_pyfunc``, so that
  ``mlflow.pyfunc.load_model(uri).predict(df)`` works, and MLflow's serving and batch
  tools take the model like any other.

Requirements (``requirements.txt``, ``conda.yaml``, ``python_env.yaml``), the signature
and the input example are written as MLflow's own flavors write them. Loading checks
the file against its recorded SHA-256 and reads it with aprender's validating loaders.
Needs the ``mlflow`` extra (``pip install "aprender[mlflow]"``; ``mlflow-skinny`` is
enough).

Examples
--------
>>> import tempfile, os
>>> import aprender.mlflow
>>> from aprender.linear_model import LinearRegression
>>> path = os.path.join(tempfile.mkdtemp(), "line")
>>> aprender.mlflow.save_model(LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0]), path)
>>> sorted(os.listdir(path))
['MLmodel', 'conda.yaml', 'model.apr', 'python_env.yaml', 'requirements.txt']
>>> aprender.mlflow.load_model(path).predict([[2.0]])
array([5.])
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import yaml
from mlflow.models import Model, ModelSignature, infer_signature
from mlflow.models.utils import _save_example
from mlflow.utils.environment import (
    _CONDA_ENV_FILE_NAME,
    _CONSTRAINTS_FILE_NAME,
    _PYTHON_ENV_FILE_NAME,
    _REQUIREMENTS_FILE_NAME,
    _mlflow_conda_env,
    _process_conda_env,
    _process_pip_requirements,
    _PythonEnv,
)

from aprender.format._io import sha256_file
from aprender.mlflow._pyfunc import FLAVOR_NAME, LOADER_MODULE, METHODS, MODEL_FILES, AprenderPyfuncModel, load_folder

__all__ = ["FLAVOR_NAME", "get_default_conda_env", "get_default_pip_requirements", "load_model", "log_model",
           "save_model"]


def get_default_pip_requirements() -> list[str]:
    """The packages a model saved by this flavor needs: aprender, scikit-learn, numpy, pandas (pinned).

    Examples
    --------
    >>> import aprender.mlflow
    >>> aprender.mlflow.get_default_pip_requirements()[0].startswith("aprender==")
    True
    """
    from importlib.metadata import version

    return [f"{name}=={version(name)}" for name in ("aprender", "scikit-learn", "numpy", "pandas")]


def get_default_conda_env() -> dict[str, Any]:
    """The default conda environment: Python and :func:`get_default_pip_requirements`."""
    return _mlflow_conda_env(additional_pip_deps=get_default_pip_requirements())


def _write_environment(path: Path, conda_env: Any, pip_requirements: Sequence[str] | None,
                       extra_pip_requirements: Sequence[str] | None) -> None:
    if conda_env is None:
        default = None if pip_requirements is not None else get_default_pip_requirements()
        conda_env, requirements, constraints = _process_pip_requirements(default, pip_requirements,
                                                                         extra_pip_requirements)
    else:
        conda_env, requirements, constraints = _process_conda_env(conda_env)
    (path / _CONDA_ENV_FILE_NAME).write_text(yaml.safe_dump(conda_env, default_flow_style=False))
    if constraints:
        (path / _CONSTRAINTS_FILE_NAME).write_text("\n".join(constraints))
    (path / _REQUIREMENTS_FILE_NAME).write_text("\n".join(requirements))
    _PythonEnv.current().to_yaml(str(path / _PYTHON_ENV_FILE_NAME))


def save_model(
    model: Any,
    path: str | os.PathLike,
    *,
    serialization_format: str = "apr",
    pyfunc_predict_fn: str = "predict",
    conda_env: Any = None,
    mlflow_model: Model | None = None,
    signature: ModelSignature | bool | None = None,
    input_example: Any = None,
    pip_requirements: Sequence[str] | None = None,
    extra_pip_requirements: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Save a fitted model as an MLflow model folder at ``path`` (which must not exist or be empty).

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator or a supported scikit-learn one.
    path : str or PathLike
        The MLflow model folder to create.
    serialization_format : {"apr", "safetensors", "gguf"}, default="apr"
        The model file: ``model.apr`` (checksummed, memory-mappable), ``model.safetensors``
        or ``model.gguf`` (every format of :data:`aprender.extend.FORMATS` that loads).
    pyfunc_predict_fn : str, default="predict"
        The method the ``python_function`` flavor's ``predict`` calls (``predict_proba`` ...).
    conda_env, pip_requirements, extra_pip_requirements
        As for MLflow's own flavors; by default aprender, scikit-learn, numpy and pandas
        pinned to the installed versions.
    mlflow_model : mlflow.models.Model, optional
        The MLmodel to add the flavors to (``Model.log`` passes one).
    signature : mlflow.models.ModelSignature or False, optional
        Inferred from ``input_example`` and the model's output when not given (a column of
        the example that MLflow's inferred type would refuse, such as a ``category`` column,
        is typed ``Any``);
        ``False`` records none.
    input_example : DataFrame or ndarray, optional
        Saved beside the model and used to infer the signature.
    metadata : dict, optional
        Custom metadata recorded in the MLmodel file.
    """
    if serialization_format not in MODEL_FILES:
        raise ValueError(f"serialization_format must be one of {sorted(MODEL_FILES)}, got {serialization_format!r}")
    if pyfunc_predict_fn not in METHODS or not callable(getattr(model, pyfunc_predict_fn, None)):
        raise ValueError(f"{type(model).__name__} has no method {pyfunc_predict_fn!r} for the pyfunc flavor "
                         f"(one of {', '.join(METHODS)})")
    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"'{folder}' already exists and is not an empty folder")
    import aprender
    from aprender.codec import to_state

    state = to_state(model)  # fitted and storable, before anything is written
    folder.mkdir(parents=True, exist_ok=True)
    model_file = folder / MODEL_FILES[serialization_format]
    aprender.save(model, model_file)
    mlflow_model = mlflow_model if mlflow_model is not None else Model()
    saved_example = _save_example(mlflow_model, input_example, str(folder))
    if signature is None and saved_example is not None:
        output = AprenderPyfuncModel(model, pyfunc_predict_fn).predict(input_example)
        signature = _enforceable(
            infer_signature(input_example, np.asarray(output) if not hasattr(output, "columns") else output),
            input_example)
    if signature:
        mlflow_model.signature = signature
    if metadata is not None:
        mlflow_model.metadata = dict(metadata)
    mlflow.pyfunc.add_to_model(mlflow_model, loader_module=LOADER_MODULE, conda_env=_CONDA_ENV_FILE_NAME,
                               python_env=_PYTHON_ENV_FILE_NAME)
    versions = state.meta.get("versions", {})
    mlflow_model.add_flavor(FLAVOR_NAME, model_file=model_file.name, format=serialization_format,
                            sha256=sha256_file(model_file), model_class=state.class_key,
                            aprender_version=versions.get("aprender"), sklearn_version=versions.get("sklearn"),
                            pyfunc_predict_fn=pyfunc_predict_fn)
    mlflow_model.save(str(folder / "MLmodel"))
    _write_environment(folder, conda_env, pip_requirements, extra_pip_requirements)


def _enforceable(signature: ModelSignature, example: Any) -> ModelSignature:
    """The inferred ``signature``, with each column its own input example fails typed ``Any``.

    MLflow infers a ``category`` column as ``string`` and then refuses that very column when
    the pyfunc model is called ("Can not safely convert category to <U0"): a signature must at
    least accept the example it was inferred from. ``Any`` accepts the categories (MLflow turns
    them into strings, which the fitted encoders read as they read the categories).
    """
    from mlflow.exceptions import MlflowException
    from mlflow.models import validate_schema
    from mlflow.types.schema import AnyType, ColSpec, Schema

    inputs = signature.inputs
    if inputs is None or inputs.is_tensor_spec() or not hasattr(example, "columns"):
        return signature
    try:
        validate_schema(example, inputs)
        return signature
    except MlflowException:
        pass
    columns = []
    for spec in inputs.inputs:
        try:
            validate_schema(example[[spec.name]], Schema([spec]))
            columns.append(spec)
        except MlflowException:
            columns.append(ColSpec(AnyType(), spec.name, required=spec.required))
    return ModelSignature(Schema(columns), signature.outputs, signature.params)


def log_model(model: Any, name: str = "model", **kwargs: Any) -> Any:
    """Log a fitted model to the current MLflow run (one is started if none is active).

    Parameters
    ----------
    model : estimator
        A fitted aprender estimator or a supported scikit-learn one.
    name : str, default="model"
        The model's name in the run: load it back from ``runs:/<run_id>/<name>``.
    **kwargs
        :func:`save_model`'s options, and ``mlflow.models.Model.log``'s
        (``registered_model_name=``, ``params=``, ``tags=`` ...).

    Returns
    -------
    mlflow.models.model.ModelInfo
        ``model_uri`` and the rest of what MLflow recorded.
    """
    import aprender.mlflow as flavor

    return Model.log(artifact_path=None, name=name, flavor=flavor, model=model, **kwargs)


def load_model(model_uri: str, dst_path: str | os.PathLike | None = None, *, trusted: Any = None) -> Any:
    """Load the estimator from an MLflow model URI (``runs:/...``, ``models:/...``, a path ...).

    ``trusted`` is ``aprender.load``'s: functions of yours the model may name. (Through
    ``mlflow.pyfunc.load_model``, register them with ``aprender.register_function`` first:
    a pyfunc's ``model_config`` may come from the model folder, so it is not a channel
    for trust.) Raises :class:`~aprender.exceptions.FormatError` if the model folder has
    no ``aprender`` flavor or its model file does not match the recorded SHA-256.
    """
    local = mlflow.artifacts.download_artifacts(artifact_uri=str(model_uri),
                                                dst_path=None if dst_path is None else str(dst_path))
    return load_folder(local, trusted)[0]
