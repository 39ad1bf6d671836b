"""The allow-list: which classes may be rebuilt from a file.

A file names its estimator classes by a stable string key such as
``"aprender.linear_model.LinearRegression"``. Loading looks that key up here and
nowhere else: nothing is ever imported by a name read from a file. The built-in
entries come from the schema modules shipped inside ``aprender.codec.schemas``; users add their own classes with
:func:`register_estimator`.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aprender.codec._model_type import ModelType
from aprender.exceptions import UnsupportedTypeError, UntrustedTypeError

__all__ = ["Entry", "Spec", "entry_for_class", "entry_for_key", "register_estimator", "registered"]

Validator = Callable[[Mapping[str, Any], Mapping[str, Any], str], None]


@dataclass(frozen=True)
class Spec:
    """How the codec treats one estimator class.

    Parameters
    ----------
    model_type : ModelType
        Family code written into files.
    aliases : mapping of str to str
        Fitted attribute -> stable tensor name (e.g. ``coef_`` -> ``coefficients``).
        Aliased attributes are always stored as tensors, scalars with shape ``[1]``.
        An alias containing ``{i}`` names each array of a list attribute
        (``coefs_`` -> ``layers.{i}.weight``).
    quantizable : tuple of str
        Attributes whose float tensors may be block-quantized (weights, centroids).
    validate : callable, optional
        ``validate(params, attrs, path)`` raises :class:`~aprender.exceptions.FormatError`
        when decoded values are inconsistent; runs before the estimator is built.
    pack, unpack : callable, optional
        ``pack(attrs) -> attrs`` rewrites fitted attributes into a storable layout
        before generic encoding; ``unpack(attrs, params, path) -> attrs`` reverses it
        after decoding and validation.
    """

    model_type: ModelType = ModelType.CUSTOM
    aliases: Mapping[str, str] = field(default_factory=dict)
    quantizable: tuple[str, ...] = ()
    validate: Validator | None = None
    pack: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    unpack: Callable[[dict[str, Any], Mapping[str, Any], str], dict[str, Any]] | None = None


@dataclass(frozen=True)
class Entry:
    """One allow-listed class: its stable key, the class itself and its spec.

    ``twins`` are the classes registered together with it in one schema entry
    (an aprender estimator and its scikit-learn base): a file of one may be
    rebuilt as the other.
    """

    key: str
    cls: type
    spec: Spec
    twins: tuple[type, ...] = ()


_lock = threading.RLock()
_by_key: dict[str, Entry] = {}
_by_cls: dict[type, Entry] = {}
_builtins_loaded = False


def public_key(cls: type) -> str:
    """The stable key of ``cls``: its public module path and class name.

    Private module components (``sklearn.linear_model._base``) are dropped, so the
    key survives internal reorganisations of the library that defines the class.
    """
    parts = [p for p in cls.__module__.split(".") if not p.startswith("_")]
    return ".".join([*parts, cls.__qualname__])


def _add(cls: type, spec: Spec, key: str | None, twins: tuple[type, ...] = ()) -> Entry:
    key = key or public_key(cls)
    if key in _by_key or cls in _by_cls:
        raise ValueError(f"{cls.__qualname__} (key '{key}') is already registered")
    entry = Entry(key=key, cls=cls, spec=spec, twins=twins)
    _by_key[key] = entry
    _by_cls[cls] = entry
    return entry


def _ensure_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _lock:
        if _builtins_loaded:
            return
        from aprender.codec import schemas as _schemas

        # Only aprender's own schema package is ever imported, never a name from a file.
        names = sorted(m.name for m in pkgutil.iter_modules(_schemas.__path__) if not m.name.startswith("_"))
        for name in names:
            module = importlib.import_module(f"{_schemas.__name__}.{name}")
            for classes, spec in module.SCHEMAS:
                for cls in classes:
                    _add(cls, spec, None, tuple(classes))
        _builtins_loaded = True


def register_estimator(
    cls: type,
    *,
    key: str | None = None,
    model_type: ModelType = ModelType.CUSTOM,
    aliases: Mapping[str, str] | None = None,
    quantizable: tuple[str, ...] = (),
    validate: Validator | None = None,
) -> type:
    """Allow ``cls`` to be rebuilt from aprender files.

    Registering the same class or key twice is an error. Returns ``cls`` so it can
    be used as a decorator.

    Parameters
    ----------
    cls : type
        A scikit-learn compatible estimator class whose fitted state is made of
        arrays, scalars, strings and other registered estimators.
    key : str, optional
        Stable key written into files; defaults to ``module.ClassName``.
    model_type : ModelType, default=ModelType.CUSTOM
        Family code written into .apr files.
    aliases, quantizable, validate
        See :class:`Spec`.

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from aprender import register_estimator
    >>> @register_estimator
    ... class Constant(BaseEstimator):
    ...     def __init__(self, value=0.0):
    ...         self.value = value
    """
    _ensure_builtins()
    spec = Spec(
        model_type=model_type,
        aliases=dict(aliases or {}),
        quantizable=tuple(quantizable),
        validate=validate,
    )
    with _lock:
        _add(cls, spec, key)
    return cls


def entry_for_class(cls: type, path: str = "") -> Entry:
    """The registry entry of ``cls``; :class:`UnsupportedTypeError` if it has none."""
    _ensure_builtins()
    entry = _by_cls.get(cls)
    if entry is None:
        library = cls.__module__.partition(".")[0]
        reason = (f"{library} classes are rebuilt only from aprender's allow-list, and this one is not on it "
                  "(the README lists the refused estimators)" if library in ("sklearn", "aprender") else
                  "this class is not registered; call aprender.register_estimator() on it")
        raise UnsupportedTypeError(path or "<model>", f"{cls.__module__}.{cls.__qualname__}", reason)
    return entry


def entry_for_key(key: object, path: str = "") -> Entry:
    """The entry for a key read from a file; :class:`UntrustedTypeError` if unknown."""
    _ensure_builtins()
    entry = _by_key.get(key) if isinstance(key, str) else None
    if entry is None:
        raise UntrustedTypeError(str(key)[:200], path)
    return entry


def same_schema(a: type, b: type) -> bool:
    """True when two classes were registered as twins (an aprender class and its sklearn base)."""
    _ensure_builtins()
    entry = _by_cls.get(a)
    return entry is not None and b in entry.twins


def registered() -> list[Entry]:
    """Every allow-listed class, in registration order."""
    _ensure_builtins()
    return list(_by_key.values())
