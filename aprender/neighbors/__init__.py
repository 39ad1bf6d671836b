"""Nearest-neighbour estimators that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.neighbors._neighbors import KNeighborsClassifier, KNeighborsRegressor

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = [
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
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
