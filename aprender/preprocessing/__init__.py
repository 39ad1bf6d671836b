"""Preprocessing transformers that save and load without pickle."""

from aprender.preprocessing._encoders import LabelEncoder, OneHotEncoder
from aprender.preprocessing._scalers import MinMaxScaler, StandardScaler

__all__ = ["LabelEncoder", "MinMaxScaler", "OneHotEncoder", "StandardScaler"]
