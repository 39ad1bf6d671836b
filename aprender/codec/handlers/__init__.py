"""Handlers for values that are neither JSON nor plain arrays, one module per kind.

Sparse matrices (``sparse``), ``RandomState`` and ``Generator`` (``random_state``,
``rng``), scikit-learn's ``Tree`` and loss objects (``tree``, ``loss``),
standard-library values such as slices and numpy dtypes (``std``), KD/Ball trees
(``binary_tree``), interp1d and BSpline rebuilt from data (``interpolate``),
Bunch/defaultdict/OrderedDict and masked arrays (``containers``), SGD losses (``sgd_loss``), structured arrays of
numeric fields (``records``), functions by name (``functions``) and allow-listed plain
helper objects (``objects``).

Importing this package registers no handler: each module comes in when a file names
one of its tags or a value being saved has one of its types (see ``_base``).
"""

from aprender.codec.handlers._base import TAG_MODULES, Handler, for_tag, for_value, register_handler

__all__ = ["TAG_MODULES", "Handler", "for_tag", "for_value", "register_handler"]
