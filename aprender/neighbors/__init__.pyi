from ._generated import (
    KernelDensity as KernelDensity,
    KNeighborsTransformer as KNeighborsTransformer,
    LocalOutlierFactor as LocalOutlierFactor,
    NearestCentroid as NearestCentroid,
    NearestNeighbors as NearestNeighbors,
    NeighborhoodComponentsAnalysis as NeighborhoodComponentsAnalysis,
    RadiusNeighborsClassifier as RadiusNeighborsClassifier,
    RadiusNeighborsRegressor as RadiusNeighborsRegressor,
    RadiusNeighborsTransformer as RadiusNeighborsTransformer,
)
from ._neighbors import KNeighborsClassifier as KNeighborsClassifier, KNeighborsRegressor as KNeighborsRegressor
