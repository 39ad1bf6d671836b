"""Model files: the codec, the allow-list and the format backends.

Examples
--------
>>> from aprender.format import ModelType, load, save
>>> ModelType.LINEAR_REGRESSION.value
1
"""

from aprender.format._api import load, save
from aprender.format._model_type import ModelType
from aprender.format._registry import register_estimator
from aprender.format._state import ModelState, from_state, to_state

__all__ = ["ModelState", "ModelType", "from_state", "load", "register_estimator", "save", "to_state"]
