from ._column_transformer import (
    ColumnTransformer as ColumnTransformer,
    make_column_transformer as make_column_transformer,
)
from ._generated import TransformedTargetRegressor as TransformedTargetRegressor
