from . import text as text
from ._generated import DictVectorizer as DictVectorizer, FeatureHasher as FeatureHasher
