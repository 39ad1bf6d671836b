"""aprender: scikit-learn estimators that save and load without pickle.

The names below are imported on first use (SPEC 1, ``lazy_loader``): ``import aprender``
alone imports neither scikit-learn nor the codec, so a command that only reads file
headers, or a load of one model, pays for what it uses. ``__init__.pyi`` lists them, once,
for the lazy loader and for type checkers alike.

Examples
--------
>>> import aprender
>>> isinstance(aprender.__version__, str)
True
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
