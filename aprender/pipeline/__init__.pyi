from ._generated import FeatureUnion as FeatureUnion
from ._pipeline import Pipeline as Pipeline, make_pipeline as make_pipeline
