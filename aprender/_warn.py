"""Warnings attributed to the user's line, however deep inside aprender they are raised."""

from __future__ import annotations

import functools
import importlib.util
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from aprender._display import printable

__all__ = ["model_type_keyword", "warn"]

#: Frames in these folders are skipped: aprender's own, and scikit-learn's (its fit
#: wrappers stand between a user's ``fit`` call and aprender's estimator code).
#: scikit-learn's folder is found without importing it (quantizing a GGUF file needs no estimator).
_SKIPPED = (str(Path(__file__).resolve().parent),
            str(Path(importlib.util.find_spec("sklearn").submodule_search_locations[0]).resolve()))


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` with the stack level of the first caller outside aprender and scikit-learn.

    A fixed ``stacklevel`` points at aprender's own code whenever the warning is raised
    one call deeper than its author assumed (``aprender.save`` -> backend -> quantize);
    walking the stack always names the line that called aprender. The message often quotes a
    file (a version, a class key), so it is shown through :func:`aprender._display.printable`.
    """
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
        frame, level = frame.f_back, level + 1
    warnings.warn(printable(message, keep="\n"), category, stacklevel=level)


F = TypeVar("F", bound=Callable[..., Any])


def model_type_keyword(func: F) -> F:
    """Accept ``expected=``, the older name of a load's ``model_type`` argument, with a DeprecationWarning."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "expected" in kwargs:
            if "model_type" in kwargs:
                raise TypeError(f"{func.__name__}() got both model_type= and its older name expected=")
            warnings.warn(f"{func.__name__}(expected=...) is deprecated; pass model_type=", DeprecationWarning,
                          stacklevel=2)
            kwargs["model_type"] = kwargs.pop("expected")
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
