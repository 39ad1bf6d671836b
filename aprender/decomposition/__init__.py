"""Matrix decompositions that save and load without pickle."""

import lazy_loader as lazy

# The names are listed once, in __init__.pyi, which type checkers read too;
# each is imported on first use.
__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
