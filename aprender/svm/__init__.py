"""Support vector machines that save and load without pickle."""

from aprender.svm._generated import NuSVC, NuSVR, OneClassSVM
from aprender.svm._svm import SVC, SVR, LinearSVC, LinearSVR

__all__ = ["SVC", "SVR", "LinearSVC", "LinearSVR"]
__all__ += ["NuSVC", "NuSVR", "OneClassSVM"]
