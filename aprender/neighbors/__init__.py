"""Nearest-neighbour estimators that save and load without pickle."""

from aprender.neighbors._generated import (
    KernelDensity,
    KNeighborsTransformer,
    LocalOutlierFactor,
    NearestCentroid,
    NearestNeighbors,
    NeighborhoodComponentsAnalysis,
    RadiusNeighborsClassifier,
    RadiusNeighborsRegressor,
    RadiusNeighborsTransformer,
)
from aprender.neighbors._neighbors import KNeighborsClassifier, KNeighborsRegressor

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor"]
__all__ += [
    "KNeighborsTransformer",
    "KernelDensity",
    "LocalOutlierFactor",
    "NearestCentroid",
    "NearestNeighbors",
    "NeighborhoodComponentsAnalysis",
    "RadiusNeighborsClassifier",
    "RadiusNeighborsRegressor",
    "RadiusNeighborsTransformer",
]
