"""Schemas of the preprocessing transformers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sklearn import preprocessing as sk

from aprender import preprocessing as ap
from aprender.codec import ModelType, Spec
from aprender.codec._checks import fail, n_features, optional_array


def check_standard_scaler(params: Mapping[str, Any], attrs: Mapping[str, Any], path: str) -> None:
    """mean_, var_ and scale_ hold one value per feature (or are None)."""
    n = n_features(attrs, path)
    for name in ("mean_", "var_", "scale_"):
        if name not in attrs:  # None is a legitimate value, absence is not
            raise fail(path, f"missing fitted attribute '{name}'")
        optional_array(attrs, name, path, ndim=(1,), shape={0: n})


SCHEMAS = [
    ((ap.StandardScaler, sk.StandardScaler), Spec(ModelType.SCALER, validate=check_standard_scaler)),
]
