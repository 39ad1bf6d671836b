"""Functions a user's model names: not in aprender's default table, trusted only by the caller."""

from __future__ import annotations

import numpy as np

#: Not a function: a --trust that names it is refused.
CONSTANT = 2.0


def shifted_log(X):
    """log(X + 2), column by column (a FunctionTransformer's ``func``)."""
    return np.log(np.asarray(X, dtype=np.float64) + CONSTANT)


class Scales:
    """A class whose static method is trusted as ``user_funcs:Scales.halve``."""

    @staticmethod
    def halve(X):
        return np.asarray(X, dtype=np.float64) / 2.0
