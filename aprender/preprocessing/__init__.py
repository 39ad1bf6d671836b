"""Preprocessing transformers that save and load without pickle."""

from aprender.preprocessing._scalers import StandardScaler

__all__ = ["StandardScaler"]
