"""Zoo cases of the classic model families: PCA, naive Bayes, KNN, SVM, MLP, MiniBatchKMeans.

Every case here runs through every format's roundtrip tests (see zoo.py).
"""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn import cluster as sk_cluster
from sklearn import decomposition as sk_decomposition
from sklearn import neighbors as sk_neighbors
from sklearn import neural_network as sk_neural_network
from sklearn import svm as sk_svm
from sklearn.datasets import load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from zoo import Case, diabetes, iris

from aprender.cluster import MiniBatchKMeans
from aprender.decomposition import PCA
from aprender.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB
from aprender.neighbors import KNeighborsClassifier, KNeighborsRegressor
from aprender.neural_network import MLPClassifier, MLPRegressor
from aprender.svm import SVC, SVR, LinearSVC, LinearSVR


@cache
def wine() -> tuple[np.ndarray, np.ndarray]:
    return load_wine(return_X_y=True)


@cache
def digits() -> tuple[np.ndarray, np.ndarray]:
    """The first 400 digits: small, and count-valued (0-16) for the discrete naive Bayes."""
    X, y = load_digits(return_X_y=True)
    return X[:400], y[:400]


def _fit(est: Any, data: tuple[np.ndarray, np.ndarray], supervised: bool = True) -> tuple[Any, np.ndarray]:
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short fits keep the suite fast
        warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) is deprecated in sklearn 1.9
        est.fit(X, y) if supervised else est.fit(X)
    return est, X


def _letters(y: np.ndarray) -> np.ndarray:
    """Integer class labels as string labels (stored in metadata, not as tensors)."""
    return np.array(list("abcdefghij"))[y]


def _scaled(data: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    X, y = data
    return (X - X.mean(axis=0)) / X.std(axis=0), y


CASES: list[Case] = [
    # PCA: components_ comes out Fortran-ordered; transform depends on that order.
    Case("PCA", lambda: _fit(PCA(n_components=3), wine(), supervised=False)),
    Case("PCA-whiten-randomized", lambda: _fit(
        PCA(n_components=10, whiten=True, svd_solver="randomized", random_state=0), digits(), supervised=False)),
    Case("PCA-sklearn", lambda: _fit(sk_decomposition.PCA(n_components=0.95), wine(), supervised=False)),
    # naive Bayes
    Case("GaussianNB", lambda: _fit(GaussianNB(), wine())),
    Case("MultinomialNB", lambda: _fit(MultinomialNB(alpha=0.5), digits())),
    Case("BernoulliNB", lambda: _fit(BernoulliNB(binarize=4.0), digits())),
    Case("MultinomialNB-strings", lambda: _fit(MultinomialNB(), (digits()[0], _letters(digits()[1])))),
    # k-nearest neighbours: both trees, brute force, a Minkowski p=3 metric, sparse data
    Case("KNeighborsClassifier-kd_tree", lambda: _fit(KNeighborsClassifier(algorithm="kd_tree", leaf_size=7), iris())),
    Case("KNeighborsClassifier-ball_tree-distance", lambda: _fit(
        KNeighborsClassifier(n_neighbors=7, algorithm="ball_tree", weights="distance", p=3), wine())),
    Case("KNeighborsClassifier-brute-strings", lambda: _fit(
        KNeighborsClassifier(algorithm="brute"), (iris()[0], _letters(iris()[1])))),
    Case("KNeighborsRegressor", lambda: _fit(KNeighborsRegressor(n_neighbors=4), diabetes())),
    Case("KNeighborsRegressor-sparse", lambda: (
        KNeighborsRegressor(n_neighbors=3).fit(sp.csr_matrix(digits()[0]), digits()[1].astype(float)),
        sp.csr_matrix(digits()[0][:50]))),
    Case("KNeighborsClassifier-sklearn", lambda: _fit(sk_neighbors.KNeighborsClassifier(), iris())),
    # support vector machines
    Case("SVC", lambda: _fit(SVC(), _scaled(wine()))),
    Case("SVC-probability", lambda: _fit(SVC(probability=True, random_state=0), iris())),
    Case("SVC-binary-poly", lambda: _fit(SVC(kernel="poly", degree=2), (iris()[0], iris()[1] == 1))),
    Case("SVC-sparse", lambda: (SVC(kernel="linear").fit(sp.csr_matrix(iris()[0]), iris()[1]), iris()[0])),
    Case("SVC-precomputed", lambda: _fit(SVC(kernel="precomputed"), (iris()[0] @ iris()[0].T, iris()[1]))),
    Case("SVR", lambda: _fit(SVR(C=50.0), diabetes())),
    Case("SVC-sklearn", lambda: _fit(sk_svm.SVC(decision_function_shape="ovo"), iris())),
    Case("LinearSVC", lambda: _fit(LinearSVC(), _scaled(wine()))),
    Case("LinearSVC-binary", lambda: _fit(LinearSVC(C=0.5), (iris()[0], iris()[1] == 2))),
    Case("LinearSVR", lambda: _fit(LinearSVR(C=10.0, max_iter=5000), diabetes())),
    Case("LinearSVR-sklearn", lambda: _fit(sk_svm.LinearSVR(fit_intercept=False), diabetes())),
    # multi-layer perceptrons: adam, sgd and lbfgs; binary, multiclass and multilabel
    Case("MLPClassifier", lambda: _fit(MLPClassifier(hidden_layer_sizes=(16, 8), max_iter=60, random_state=0),
                                       _scaled(wine()))),
    Case("MLPClassifier-binary-sgd", lambda: _fit(
        MLPClassifier(hidden_layer_sizes=(6,), solver="sgd", max_iter=40, random_state=0),
        (iris()[0], iris()[1] == 0))),
    Case("MLPClassifier-multilabel-lbfgs", lambda: _fit(
        MLPClassifier(hidden_layer_sizes=(5,), solver="lbfgs", alpha=1.0, max_iter=50, random_state=0),
        (iris()[0], np.c_[iris()[1] == 0, iris()[0][:, 0] > 5.8]))),
    Case("MLPClassifier-early-stopping", lambda: _fit(
        MLPClassifier(hidden_layer_sizes=(10,), early_stopping=True, max_iter=30, random_state=0),
        _scaled(wine()))),
    Case("MLPRegressor", lambda: _fit(MLPRegressor(hidden_layer_sizes=(8,), max_iter=50, random_state=0),
                                      _scaled(diabetes()))),
    Case("MLPRegressor-float32", lambda: _fit(  # adam keeps float32 layers (lbfgs works in float64)
        MLPRegressor(hidden_layer_sizes=(4, 4), activation="tanh", max_iter=30, random_state=0),
        (diabetes()[0].astype(np.float32), diabetes()[1].astype(np.float32)))),
    Case("MLPRegressor-lbfgs", lambda: _fit(
        MLPRegressor(hidden_layer_sizes=(4,), solver="lbfgs", activation="logistic", max_iter=30, random_state=0),
        _scaled(diabetes()))),
    Case("MLPClassifier-sklearn", lambda: _fit(
        sk_neural_network.MLPClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=0), iris())),
    # mini-batch k-means
    Case("MiniBatchKMeans", lambda: _fit(MiniBatchKMeans(n_clusters=3, n_init=1, random_state=0), iris(),
                                         supervised=False)),
    Case("MiniBatchKMeans-sklearn", lambda: _fit(sk_cluster.MiniBatchKMeans(n_clusters=4, n_init=1, batch_size=64,
                                                                            random_state=0), wine(), supervised=False)),
]
