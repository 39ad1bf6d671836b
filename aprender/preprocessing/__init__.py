"""Preprocessing transformers that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.preprocessing._encoders import LabelEncoder, OneHotEncoder
from aprender.preprocessing._scalers import MinMaxScaler, StandardScaler

__all__ = ["LabelEncoder", "MinMaxScaler", "OneHotEncoder", "StandardScaler"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = [
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
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
