"""The ``python_function`` loader module that MLmodel files name: ``aprender._mlflow_pyfunc``.

Every MLmodel file the ``aprender`` flavor wrote names this module as its
``loader_module``, and ``mlflow.pyfunc.load_model`` imports it by that name, so the
name stays however the flavor's code is arranged. The code is in
:mod:`aprender.mlflow._pyfunc`; this module only gives it the name.
"""

from aprender.mlflow._pyfunc import (
    FLAVOR_NAME,
    METHODS,
    MODEL_FILES,
    AprenderPyfuncModel,
    _load_pyfunc,
    load_folder,
    predict_input,
)

__all__ = ["FLAVOR_NAME", "METHODS", "MODEL_FILES", "AprenderPyfuncModel", "_load_pyfunc", "load_folder",
           "predict_input"]
