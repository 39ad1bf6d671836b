from ._generated import NuSVC as NuSVC, NuSVR as NuSVR, OneClassSVM as OneClassSVM
from ._svm import LinearSVC as LinearSVC, LinearSVR as LinearSVR, SVC as SVC, SVR as SVR
