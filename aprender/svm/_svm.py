"""Support vector machines: scikit-learn's libsvm/liblinear models with aprender persistence."""

from __future__ import annotations

from sklearn import svm as _sk

from aprender.base import SerializableMixin

__all__ = ["SVC", "SVR", "LinearSVC", "LinearSVR"]


class SVC(SerializableMixin, _sk.SVC):
    """Kernel support vector classifier (:class:`sklearn.svm.SVC`).

    Saved tensors: ``support_``, ``support_vectors_``, ``_n_support``,
    ``dual_coef_``/``_dual_coef_``, ``intercept_``/``_intercept_`` and the Platt
    scaling ``_probA``/``_probB``. Loading checks that these arrays are mutually
    consistent before libsvm can see them.

    Examples
    --------
    >>> from aprender.svm import SVC
    >>> clf = SVC(kernel="linear").fit([[0.0], [1.0], [4.0], [5.0]], [0, 0, 1, 1])
    >>> clf.predict([[0.5], [4.5]])
    array([0, 1])
    """


class SVR(SerializableMixin, _sk.SVR):
    """Epsilon-support vector regression (:class:`sklearn.svm.SVR`).

    Saved tensors: ``support_``, ``support_vectors_``, ``dual_coef_`` and
    ``intercept_`` (plus libsvm's private copies), checked on load.

    Examples
    --------
    >>> from aprender.svm import SVR
    >>> reg = SVR(kernel="linear", C=10.0, epsilon=0.0).fit([[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0])
    >>> reg.predict([[1.5]]).round(1)
    array([1.5])
    """


class LinearSVC(SerializableMixin, _sk.LinearSVC):
    """Linear support vector classifier (:class:`sklearn.svm.LinearSVC`).

    Saved tensors: ``coefficients`` (``coef_``) and ``intercept`` (``intercept_``).

    Examples
    --------
    >>> from aprender.svm import LinearSVC
    >>> clf = LinearSVC().fit([[0.0], [1.0], [4.0], [5.0]], [0, 0, 1, 1])
    >>> clf.predict([[0.5], [4.5]])
    array([0, 1])
    """


class LinearSVR(SerializableMixin, _sk.LinearSVR):
    """Linear support vector regression (:class:`sklearn.svm.LinearSVR`).

    Saved tensors: ``coefficients`` (``coef_``) and ``intercept`` (``intercept_``).

    Examples
    --------
    >>> from aprender.svm import LinearSVR
    >>> reg = LinearSVR(epsilon=0.0, C=10.0).fit([[0.0], [1.0], [2.0]], [0.0, 2.0, 4.0])
    >>> reg.coef_.shape
    (1,)
    """
