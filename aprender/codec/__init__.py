"""The codec: estimator <-> :class:`ModelState`, the one form every file format stores.

Writing walks a fitted estimator into named tensors plus a JSON metadata tree
(``_encode``); reading checks every node of that tree and rebuilds the estimator
through the allow-list (``_decode``, ``_registry``). ``handlers`` holds one module per
kind of non-JSON value, ``schemas`` one module per estimator family (stable tensor
names, quantizable weights, load-time validators); a handler may use a schema's
checks, never the reverse, and ``trees`` stores decision trees for both. Nothing here
reads or writes bytes.

Examples
--------
>>> from aprender.codec import from_state, to_state
>>> from aprender.linear_model import LinearRegression
>>> lr = LinearRegression().fit([[0.0], [1.0]], [1.0, 3.0])
>>> from_state(to_state(lr)).predict([[2.0]])
array([5.])
"""

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too;
# each is imported on first use.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
