"""Column-wise composition of transformers that saves and loads without pickle."""

from aprender.compose._column_transformer import ColumnTransformer, make_column_transformer

__all__ = ["ColumnTransformer", "make_column_transformer"]
