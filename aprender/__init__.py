"""aprender: scikit-learn estimators that save and load without pickle.

The names below are imported on first use (PEP 562): ``import aprender`` alone imports
neither scikit-learn nor the codec, so a command that only reads file headers, or a
load of one model, pays for what it uses.

Examples
--------
>>> import aprender
>>> isinstance(aprender.__version__, str)
True
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from aprender._lazy import lazy_attributes
from aprender._version import __version__

if TYPE_CHECKING:
    from aprender._pretrained import from_pretrained, save_pretrained
    from aprender.codec import ModelType, register_estimator
    from aprender.codec.handlers.functions import register_function
    from aprender.distill import distill
    from aprender.format._api import inspect, load, save, validate

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



class _Package(types.ModuleType):
    """The package's module type: ``aprender.distill`` stays the function when its package is imported.

    The import system binds a subpackage to its name in the package when it is first
    imported; ``aprender.distill`` names the function the subpackage defines. The
    subpackage is left unbound instead (it stays in ``sys.modules``), and the first read
    of ``aprender.distill`` imports the function (``__getattr__`` below): binding the
    function here would import scikit-learn whenever anything imports the subpackage,
    as ``apr`` does for ``aprender.distill.METHODS``.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "distill" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__getattr__, __dir__ = lazy_attributes("aprender", {
    "_pretrained": ["from_pretrained", "save_pretrained"],
    "codec.handlers.functions": ["register_function"],
    "distill": ["distill"],
    "codec": ["ModelType", "register_estimator"],
    "format._api": ["inspect", "load", "save", "validate"],
})
