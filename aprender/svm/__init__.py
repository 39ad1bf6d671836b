"""Support vector machines that save and load without pickle."""

from aprender._lazy import lazy_attributes
from aprender.svm._svm import SVC, SVR, LinearSVC, LinearSVR

__all__ = ["SVC", "SVR", "LinearSVC", "LinearSVR"]

# The generated namesakes are imported on first use: defining them costs milliseconds that
# loading a file of one of the hand-written classes above should not pay.
_GENERATED = ["NuSVC", "NuSVR", "OneClassSVM"]
__getattr__, __dir__ = lazy_attributes(__name__, {"_generated": _GENERATED})
__all__ += _GENERATED
