"""Column-wise composition of transformers that saves and loads without pickle."""

from aprender._lazy import lazy_attributes
from aprender.compose._column_transformer import ColumnTransformer, make_column_transformer

__all__ = ["ColumnTransformer", "make_column_transformer"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = ["TransformedTargetRegressor"]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
