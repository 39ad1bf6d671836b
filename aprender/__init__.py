"""aprender: scikit-learn estimators that save and load without pickle.

Examples
--------
>>> import aprender
>>> isinstance(aprender.__version__, str)
True
"""

__version__ = "0.1.0"

from aprender._pretrained import from_pretrained, save_pretrained
from aprender.codec.handlers.functions import register_function
from aprender.distill import distill
from aprender.format import ModelType, inspect, load, register_estimator, save, validate

__all__ = [
    "ModelType",
    "__version__",
    "distill",
    "from_pretrained",
    "inspect",
    "load",
    "register_estimator",
    "register_function",
    "save",
    "save_pretrained",
    "validate",
]
