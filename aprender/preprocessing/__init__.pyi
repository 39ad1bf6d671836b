from ._encoders import LabelEncoder as LabelEncoder, OneHotEncoder as OneHotEncoder
from ._generated import (
    Binarizer as Binarizer,
    FunctionTransformer as FunctionTransformer,
    KBinsDiscretizer as KBinsDiscretizer,
    KernelCenterer as KernelCenterer,
    LabelBinarizer as LabelBinarizer,
    MaxAbsScaler as MaxAbsScaler,
    MultiLabelBinarizer as MultiLabelBinarizer,
    Normalizer as Normalizer,
    OrdinalEncoder as OrdinalEncoder,
    PolynomialFeatures as PolynomialFeatures,
    PowerTransformer as PowerTransformer,
    QuantileTransformer as QuantileTransformer,
    RobustScaler as RobustScaler,
    SplineTransformer as SplineTransformer,
    TargetEncoder as TargetEncoder,
)
from ._scalers import MinMaxScaler as MinMaxScaler, StandardScaler as StandardScaler
