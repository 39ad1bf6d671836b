"""Warnings attributed to the user's line, however deep inside aprender they are raised."""

from __future__ import annotations

import functools
import importlib.util
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from aprender._display import message as _message

__all__ = ["deprecated_alias", "model_type_keyword", "warn"]


def _folder(package: str) -> str:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"aprender needs {package}, which is not installed")
    return str(Path(spec.submodule_search_locations[0]).resolve())


#: Frames in these folders are skipped: aprender's own, and scikit-learn's (its fit
#: wrappers stand between a user's ``fit`` call and aprender's estimator code).
#: scikit-learn's folder is found without importing it (quantizing a GGUF file needs no estimator).
_SKIPPED = (str(Path(__file__).resolve().parent), _folder("sklearn"))


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` with the stack level of the first caller outside aprender and scikit-learn.

    A fixed ``stacklevel`` points at aprender's own code whenever the warning is raised
    one call deeper than its author assumed (``aprender.save`` -> backend -> quantize);
    walking the stack always names the line that called aprender. The message often quotes a
    file (a version, a class key), so it is shown through :func:`aprender._display.message`.
    """
    frame: FrameType | None = sys._getframe(1)
    level = 2
    while frame is not None and frame.f_code.co_filename.startswith(_SKIPPED):
        frame, level = frame.f_back, level + 1
    warnings.warn(_message(message), category, stacklevel=level)


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


def deprecated_alias(func: F, old: str, use: str) -> F:
    """``func`` under an older name ``old``: it still works, and warns with a DeprecationWarning naming ``use``.

    The wrapper carries ``__deprecated__`` (the attribute PEP 702 defines), so the
    names are found by introspection: tests/test_deprecated_names.py builds its table
    of deprecated names from it and fails on any call to one inside aprender.

    Examples
    --------
    >>> import warnings
    >>> twice = deprecated_alias(lambda x: 2 * x, "double", "twice")
    >>> twice.__deprecated__
    'double is deprecated; use twice'
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     twice(3), caught[0].category.__name__
    (6, 'DeprecationWarning')
    """
    message = f"{old} is deprecated; use {use}"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warn(message, DeprecationWarning)
        return func(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = old.rpartition(".")[2]
    wrapper.__deprecated__ = message  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
