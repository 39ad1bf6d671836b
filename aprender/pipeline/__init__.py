"""Pipelines that save and load without pickle."""

from aprender.pipeline._generated import FeatureUnion
from aprender.pipeline._pipeline import Pipeline, make_pipeline

__all__ = ["Pipeline", "make_pipeline"]
__all__ += ["FeatureUnion"]
