"""Column-wise composition of transformers that saves and loads without pickle."""

from aprender.compose._column_transformer import ColumnTransformer, make_column_transformer
from aprender.compose._generated import TransformedTargetRegressor

__all__ = ["ColumnTransformer", "make_column_transformer"]
__all__ += ["TransformedTargetRegressor"]
