"""The types the allow-list is made of: :class:`Spec` (how the codec treats a class) and
:class:`Entry` (one allow-listed class with its key and spec).

They live apart from the registry (``_registry``) so that schema modules, including the
generic one the registry falls back to, can build specs without importing it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aprender.codec._model_type import ModelType

__all__ = ["Entry", "Spec", "Validator"]

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
    training_only : tuple of str
        Fitted attributes that only further training reads (optimizer state, loss curves,
        out-of-bag scores, training-set labels). ``inference_only=True`` saves leave them
        out; a model loaded from such a file predicts identically and refuses ``partial_fit``.
    check_save : callable, optional
        ``check_save(params, path)`` raises :class:`~aprender.exceptions.UnsupportedTypeError`
        at save for hyperparameters a file must not hold (a custom objective given as a
        function), so the save fails rather than a later load.
    """

    model_type: ModelType = ModelType.CUSTOM
    aliases: Mapping[str, str] = field(default_factory=dict)
    quantizable: tuple[str, ...] = ()
    validate: Validator | None = None
    pack: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    unpack: Callable[[dict[str, Any], Mapping[str, Any], str], dict[str, Any]] | None = None
    training_only: tuple[str, ...] = ()
    check_save: Callable[[Mapping[str, Any], str], None] | None = None


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
