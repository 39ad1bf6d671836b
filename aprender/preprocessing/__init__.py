"""Preprocessing transformers that save and load without pickle."""

from aprender.preprocessing._encoders import LabelEncoder, OneHotEncoder
from aprender.preprocessing._generated import (
    Binarizer,
    FunctionTransformer,
    KBinsDiscretizer,
    KernelCenterer,
    LabelBinarizer,
    MaxAbsScaler,
    MultiLabelBinarizer,
    Normalizer,
    OrdinalEncoder,
    PolynomialFeatures,
    PowerTransformer,
    QuantileTransformer,
    RobustScaler,
    SplineTransformer,
    TargetEncoder,
)
from aprender.preprocessing._scalers import MinMaxScaler, StandardScaler

__all__ = ["LabelEncoder", "MinMaxScaler", "OneHotEncoder", "StandardScaler"]
__all__ += [
    "Binarizer",
    "FunctionTransformer",
    "KBinsDiscretizer",
    "KernelCenterer",
    "LabelBinarizer",
    "MaxAbsScaler",
    "MultiLabelBinarizer",
    "Normalizer",
    "OrdinalEncoder",
    "PolynomialFeatures",
    "PowerTransformer",
    "QuantileTransformer",
    "RobustScaler",
    "SplineTransformer",
    "TargetEncoder",
]
