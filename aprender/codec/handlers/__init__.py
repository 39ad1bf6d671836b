"""Handlers for values that are neither JSON nor plain arrays, one module per kind.

Importing this package registers every handler: sparse matrices, ``RandomState`` and
``Generator``, scikit-learn's ``Tree`` and loss objects, and standard-library values
(slices, numpy dtypes, ...), KD/Ball trees, interp1d and BSpline rebuilt
from data (``compiled``), Bunch/defaultdict/SGD losses
(``containers``), structured arrays of numeric fields (``records``), functions by
name (``functions``) and
allow-listed plain helper objects (``objects``). ``packed``, ``hgb`` and ``tree_structure`` hold the
pack/unpack and validation helpers that the ensemble schemas build on.
"""

from aprender.codec.handlers import (  # noqa: F401 - registers them
    compiled,
    containers,
    functions,
    loss,
    objects,
    random_state,
    records,
    rng,
    sparse,
    std,
    tree,
)
from aprender.codec.handlers._base import Handler, for_tag, for_value, register_handler

__all__ = ["Handler", "for_tag", "for_value", "register_handler"]
