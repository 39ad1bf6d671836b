"""Multi-layer perceptrons with aprender persistence (the family the Rust aprender library calls NeuralSequential)."""

from __future__ import annotations

from sklearn import neural_network as _sk

from aprender.base import SerializableMixin

__all__ = ["MLPClassifier", "MLPRegressor"]


class MLPClassifier(SerializableMixin, _sk.MLPClassifier):
    """Multi-layer perceptron classifier (:class:`sklearn.neural_network.MLPClassifier`).

    Saved tensors: ``layers.{i}.weight`` (``coefs_[i]``, shape ``[fan_in, fan_out]``)
    and ``layers.{i}.bias`` (``intercepts_[i]``), plus the optimizer state so that
    ``partial_fit`` continues exactly where it stopped.

    Examples
    --------
    >>> from aprender.neural_network import MLPClassifier
    >>> X, y = [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], [0, 1, 1, 1]
    >>> clf = MLPClassifier(hidden_layer_sizes=(4,), solver="lbfgs", random_state=0).fit(X, y)
    >>> [w.shape for w in clf.coefs_]
    [(2, 4), (4, 1)]
    """


class MLPRegressor(SerializableMixin, _sk.MLPRegressor):
    """Multi-layer perceptron regressor (:class:`sklearn.neural_network.MLPRegressor`).

    Saved tensors: ``layers.{i}.weight`` (``coefs_[i]``, shape ``[fan_in, fan_out]``)
    and ``layers.{i}.bias`` (``intercepts_[i]``), plus the optimizer state.

    Examples
    --------
    >>> from aprender.neural_network import MLPRegressor
    >>> X, y = [[0.0], [1.0], [2.0], [3.0]], [0.0, 1.0, 2.0, 3.0]
    >>> reg = MLPRegressor(hidden_layer_sizes=(3,), solver="lbfgs", random_state=0).fit(X, y)
    >>> reg.predict([[1.5]]).shape
    (1,)
    """
