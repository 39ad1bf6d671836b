"""Crafted hostile files for PCA, naive Bayes, KNN, SVM, MLP and MiniBatchKMeans.

Each test edits a real model's ModelState (or its SafeTensors header) so that its
arrays disagree, and checks that loading raises FormatError naming what is wrong
before scikit-learn, libsvm or the KD-tree code ever sees the values.
"""

from __future__ import annotations

import copy
import json
import struct
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from cases_models import digits, wine
from sklearn.exceptions import ConvergenceWarning
from zoo import iris

from aprender.cluster import MiniBatchKMeans
from aprender.codec import ModelState, from_state, to_state
from aprender.decomposition import PCA
from aprender.exceptions import FormatError
from aprender.format import safetensors
from aprender.naive_bayes import GaussianNB, MultinomialNB
from aprender.neighbors import KNeighborsClassifier
from aprender.neural_network import MLPClassifier
from aprender.svm import SVC, LinearSVC

Edit = Callable[[dict[str, Any], dict[str, np.ndarray]], None]


@cache
def _model(name: str) -> Any:
    X, y = iris()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {
            "knn": lambda: KNeighborsClassifier(algorithm="kd_tree").fit(X, y),
            "knn-brute": lambda: KNeighborsClassifier(algorithm="brute").fit(X, y),
            "mlp": lambda: MLPClassifier(hidden_layer_sizes=(16, 8), max_iter=5, random_state=0).fit(X, y),
            "svc": lambda: SVC().fit(X, y),
            "svc-precomputed": lambda: SVC(kernel="precomputed").fit(X @ X.T, y),
            "svc-sparse": lambda: SVC(kernel="linear").fit(sp.csr_matrix(X), y),
            "linear-svc": lambda: LinearSVC().fit(X, y),
            "pca": lambda: PCA(n_components=3).fit(wine()[0]),
            "gnb": lambda: GaussianNB().fit(X, y),
            "mnb": lambda: MultinomialNB().fit(*digits()),
            "mbkm": lambda: MiniBatchKMeans(n_clusters=3, n_init=1, random_state=0).fit(X),
        }[name]()


def _rejected(name: str, edit: Edit) -> str:
    """Apply ``edit(attrs, tensors)`` to the model's state; from_state must raise FormatError."""
    state = to_state(_model(name))
    meta, tensors = copy.deepcopy(state.meta), dict(state.tensors)
    edit(meta["model"]["attrs"], tensors)
    with pytest.raises(FormatError) as info:
        from_state(ModelState(tensors=tensors, meta=meta))
    return str(info.value)


def _header_rejected(name: str, tensor: str, shape: list[int]) -> str:
    """Give ``tensor`` another shape of the same byte size in the SafeTensors header."""
    raw = safetensors.dumps(_model(name))
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    assert np.prod(header[tensor]["shape"]) == np.prod(shape)
    header[tensor]["shape"] = shape
    text = json.dumps(header).encode()
    with pytest.raises(FormatError) as info:
        safetensors.loads(struct.pack("<Q", len(text)) + text + raw[8 + n :])
    return str(info.value)


def _set(name: str, value: Any) -> Edit:
    def edit(attrs: dict, tensors: dict) -> None:
        attrs[name] = value

    return edit


def _tensor(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Edit:
    def edit(attrs: dict, tensors: dict) -> None:
        tensors[name] = np.ascontiguousarray(change(tensors[name].copy()))

    return edit


def _poke(index: Any, value: Any) -> Callable[[np.ndarray], np.ndarray]:
    def change(a: np.ndarray) -> np.ndarray:
        a[index] = value
        return a

    return change


# -- k-nearest neighbours ---------------------------------------------------------------


def test_knn_fit_data_shorter_than_claimed() -> None:
    message = _rejected("knn", _tensor("_fit_X", lambda a: a[:100]))
    assert "'_fit_X' has shape (100, 4), expected (n_samples_fit_, n_features_in_) = (150, 4)" in message


def test_knn_sample_count_larger_than_data() -> None:
    message = _rejected("knn", _set("n_samples_fit_", 10**9))
    assert "'_fit_X' has shape (150, 4)" in message and "1000000000" in message


def test_knn_fit_data_reshaped_in_safetensors_header() -> None:
    message = _header_rejected("knn", "_fit_X", [300, 2])
    assert "'_fit_X' has shape (300, 2), expected (n_samples_fit_, n_features_in_) = (150, 4)" in message


@pytest.mark.parametrize("code", [3, -1])
def test_knn_class_index_outside_classes(code) -> None:
    message = _rejected("knn", _tensor("_y", _poke(7, code)))
    assert "'_y' holds class indices outside [0, 3) for output 0" in message


def test_knn_targets_shorter_than_data() -> None:
    assert "'_y' has shape (149,); axis 0 must be 150" in _rejected("knn", _tensor("_y", lambda a: a[1:]))


def test_knn_tree_with_a_field_it_does_not_have() -> None:
    def smuggle(attrs: dict, tensors: dict) -> None:
        tensors["node_data"] = np.zeros(8)
        attrs["_tree"]["items"].append(["node_data", {"__t__": "tensor", "name": "node_data"}])

    assert "'_tree' must hold the fields ['idx_array', 'idx_end', " in _rejected("knn", smuggle)


def test_knn_leaf_size_zero() -> None:
    message = _rejected("knn", _set("_tree", {"__t__": "dict", "items": [["leaf_size", 0]]}))
    assert "at '_tree': 'leaf_size' is 0, must be >= 1" in message


def test_knn_metric_the_tree_cannot_use() -> None:
    assert "metric 'cosine' is not supported by KDTree" in _rejected("knn", _set("effective_metric_", "cosine"))


def test_knn_brute_force_metric_unknown() -> None:
    assert "metric 'os.system' is not supported by brute-force search" in _rejected(
        "knn-brute", _set("effective_metric_", "os.system"))


def test_knn_metric_parameters_the_tree_rejects() -> None:
    def evil(attrs: dict, tensors: dict) -> None:
        attrs["effective_metric_params_"] = {"__t__": "dict", "items": [["evil", 1]]}

    message = _rejected("knn", evil)
    assert "invalid aprender.neighbors.KNeighborsClassifier state" in message and "evil" in message


def test_knn_non_finite_data_for_a_tree() -> None:
    message = _rejected("knn", _tensor("_fit_X", _poke((3, 1), np.nan)))
    assert "'_fit_X' of a kd_tree must be a dense array of finite values" in message


def test_knn_unknown_fit_method() -> None:
    assert "'_fit_method' must be one of" in _rejected("knn", _set("_fit_method", "octree"))


def test_knn_brute_force_with_a_tree() -> None:
    message = _rejected("knn-brute", _set("_tree", {"__t__": "dict", "items": [["leaf_size", 30]]}))
    assert "'_tree' must be null when _fit_method is 'brute'" in message


# -- multi-layer perceptron -------------------------------------------------------------


def test_mlp_layers_that_do_not_chain_via_safetensors_header() -> None:
    message = _header_rejected("mlp", "layers.1.weight", [8, 16])
    assert "layers do not chain: layer 1 weight is [8, 16] but layer 0 has 16 outputs" in message


def test_mlp_first_layer_wider_than_the_input() -> None:
    message = _rejected("mlp", _tensor("layers.0.weight", lambda a: np.zeros((5, 16))))
    assert "layers do not chain: layer 0 weight is [5, 16] but n_features_in_ is 4" in message


def test_mlp_bias_of_the_wrong_length() -> None:
    message = _rejected("mlp", _tensor("layers.2.bias", lambda a: a[:2]))
    assert "layer 2 bias is [2] but its weight is [8, 3]" in message


def test_mlp_last_layer_wider_than_the_outputs() -> None:
    def widen(attrs: dict, tensors: dict) -> None:
        tensors["layers.2.weight"] = np.zeros((8, 4))
        tensors["layers.2.bias"] = np.zeros(4)

    assert "the last layer has 4 outputs but n_outputs_ is 3" in _rejected("mlp", widen)


def test_mlp_layer_missing_from_the_list() -> None:
    def drop(attrs: dict, tensors: dict) -> None:
        attrs["coefs_"].pop()
        del tensors["layers.2.weight"]

    assert "'coefs_' must be a list of 3 arrays (n_layers_ - 1)" in _rejected("mlp", drop)


def test_mlp_layer_tensor_missing_from_the_file() -> None:
    def drop(attrs: dict, tensors: dict) -> None:
        del tensors["layers.0.bias"]

    assert "missing tensor 'layers.0.bias'" in _rejected("mlp", drop)


def test_mlp_layers_of_mixed_dtypes() -> None:
    message = _rejected("mlp", _tensor("layers.1.weight", lambda a: a.astype(np.float32)))
    assert "layer 1 is float32/float64, expected float64 like layer 0" in message


def test_mlp_unknown_activation() -> None:
    assert "'out_activation_' must be one of" in _rejected("mlp", _set("out_activation_", "os.system"))


def test_mlp_output_units_disagree_with_classes() -> None:
    def binary(attrs: dict, tensors: dict) -> None:
        attrs["_label_binarizer"]["items"] = [["y_type_", "binary"], ["sparse_input_", False]]

    assert "3 classes (binary) cannot produce 3 output units" in _rejected("mlp", binary)


def test_mlp_optimizer_moments_of_the_wrong_shape() -> None:
    message = _rejected("mlp", _tensor("_optimizer.ms.1", lambda a: a[:, :4]))
    assert "at '_optimizer': 'ms' must hold one float array per layer parameter" in message


def test_mlp_optimizer_of_unknown_kind() -> None:
    def evil(attrs: dict, tensors: dict) -> None:
        items = dict(attrs["_optimizer"]["items"])
        items["kind"] = "subprocess"
        attrs["_optimizer"]["items"] = [[k, v] for k, v in items.items()]

    assert "at '_optimizer': must be {'kind': 'adam' | 'sgd', ...}" in _rejected("mlp", evil)


# -- libsvm: every size libsvm reads through a raw pointer -------------------------------


@pytest.mark.parametrize("index", [150, -1, 10**6])
def test_svc_precomputed_support_index_outside_training_set(index) -> None:
    message = _rejected("svc-precomputed", _tensor("support_", _poke(0, index)))
    assert "'support_' holds indices outside the 150 training samples" in message


def test_svc_support_counts_do_not_add_up() -> None:
    message = _rejected("svc", _tensor("_n_support", _poke(0, 1)))
    assert "'_n_support' [1," in message and "does not account for the" in message


def test_svc_support_vectors_missing_for_a_real_kernel() -> None:
    # (0, 0) support vectors skip scikit-learn's own consistency check and then make
    # libsvm read every support vector out of bounds.
    message = _rejected("svc", _tensor("support_vectors_", lambda a: np.zeros((0, 0))))
    assert "'support_vectors_' must be a float64 array of shape [" in message and "found float64[0, 0]" in message


def test_svc_fewer_support_vectors_than_indices() -> None:
    message = _rejected("svc", _tensor("support_vectors_", lambda a: a[:-1]))
    assert "'support_vectors_' must be a float64 array of shape" in message


def test_svc_dual_coefficients_of_the_wrong_shape() -> None:
    message = _rejected("svc", _tensor("_dual_coef_", lambda a: a[:, :-1]))
    assert "'_dual_coef_' must be a float64 array of shape [2, " in message


def test_svc_dual_coefficients_not_c_ordered() -> None:
    def fortran(attrs: dict, tensors: dict) -> None:
        attrs["_dual_coef_"]["order"] = "F"

    assert "'_dual_coef_' must be C-ordered for libsvm" in _rejected("svc", fortran)


def test_svc_intercepts_for_fewer_class_pairs() -> None:
    message = _rejected("svc", _tensor("_intercept_", lambda a: a[:1]))
    assert "'_intercept_' must be a float64 array of shape [3], found float64[1]" in message


def test_svc_platt_parameters_for_the_wrong_number_of_pairs() -> None:
    message = _rejected("svc", _tensor("_probA", lambda a: np.zeros(2)))
    assert "'_probA' must have shape [0] or [3]" in message


def test_svc_support_indices_of_the_wrong_dtype() -> None:
    assert "'support_' must be a 1-d int32 array" in _rejected("svc", _tensor("support_", lambda a: a.astype(np.int64)))


def test_svc_more_classes_than_support_counts() -> None:
    message = _rejected("svc", _tensor("classes_", lambda a: np.arange(4)))
    assert "'_n_support' must be a int32 array of shape [4], found int32[3]" in message


def test_svc_training_shape_disagrees_with_features() -> None:
    message = _rejected("svc", _set("shape_fit_", {"__t__": "tuple", "v": [150, 5]}))
    assert "'shape_fit_' (150, 5) does not match n_features_in_ 4" in message


def test_svc_sparse_probability_without_platt_parameters() -> None:
    message = _rejected("svc-sparse", _set("_effective_probability", True))
    assert "'_effective_probability' must be a bool, and true only with Platt parameters" in message


def test_svc_sparse_dual_coefficients_partly_stored() -> None:
    def drop_one(attrs: dict, tensors: dict) -> None:
        for name in ("_dual_coef_", "dual_coef_"):
            node = attrs[name]
            tensors[node["data"]["name"]] = tensors[node["data"]["name"]][:-1].copy()
            tensors[node["indices"]["name"]] = tensors[node["indices"]["name"]][:-1].copy()
            indptr = tensors[node["indptr"]["name"]].copy()
            indptr[-1] -= 1
            tensors[node["indptr"]["name"]] = indptr

    assert "'_dual_coef_' must store all" in _rejected("svc-sparse", drop_one)


def test_linear_svc_coefficients_for_other_features() -> None:
    message = _rejected("linear-svc", _tensor("coefficients", lambda a: np.zeros((3, 5))))
    assert "'coef_' has shape (3, 5); axis 1 must be 4" in message


# -- PCA ---------------------------------------------------------------------------------


def test_pca_components_reshaped_in_safetensors_header() -> None:
    assert "'components_' has shape (13, 3); axis 0 must be 3" in _header_rejected("pca", "components_", [13, 3])


def test_pca_components_for_other_features() -> None:
    message = _rejected("pca", _tensor("components_", lambda a: np.zeros((3, 12))))
    assert "'components_' has 12 columns but n_features_in_ is 13" in message


def test_pca_more_components_than_features() -> None:
    assert "'n_components_' is 99, must be [0, 13]" in _rejected("pca", _set("n_components_", 99))


def test_pca_mean_of_the_wrong_length() -> None:
    assert "'mean_' has shape (12,); axis 0 must be 13" in _rejected("pca", _tensor("mean_", lambda a: a[1:]))


def test_pca_explained_variance_of_the_wrong_length() -> None:
    message = _rejected("pca", _tensor("explained_variance_", lambda a: a[:2]))
    assert "'explained_variance_' has shape (2,); axis 0 must be 3" in message


# -- naive Bayes -------------------------------------------------------------------------


def test_gaussian_nb_class_counts_disagree_with_classes() -> None:
    message = _rejected("gnb", _tensor("class_count_", lambda a: a[:2]))
    assert "'class_count_' has shape (2,); axis 0 must be 3" in message


def test_gaussian_nb_means_for_other_features() -> None:
    message = _rejected("gnb", _tensor("theta_", lambda a: np.zeros((3, 5))))
    assert "'theta_' has shape (3, 5); axis 1 must be 4" in message


def test_gaussian_nb_classes_not_an_array() -> None:
    assert "'classes_' must be a 1-d array of at least 1 labels" in _rejected("gnb", _set("classes_", 3))


def test_multinomial_nb_log_probabilities_for_other_features() -> None:
    message = _rejected("mnb", _tensor("feature_log_prob_", lambda a: a[:, :60]))
    assert "'feature_log_prob_' has shape (10, 60); axis 1 must be 64" in message


def test_multinomial_nb_priors_for_more_classes() -> None:
    message = _rejected("mnb", _tensor("class_log_prior_", lambda a: np.zeros(11)))
    assert "'class_log_prior_' has shape (11,); axis 0 must be 10" in message


# -- MiniBatchKMeans ---------------------------------------------------------------------


def test_minibatch_kmeans_counts_for_other_centres() -> None:
    assert "'_counts' has shape (2,); axis 0 must be 3" in _rejected("mbkm", _tensor("_counts", lambda a: a[:2]))


@pytest.mark.parametrize("name", ["_sparse_kernels", "_impl"])
def test_svc_file_cannot_shadow_class_settings(name) -> None:
    # An instance copy of SVC._sparse_kernels, reordered, turns a linear kernel into
    # libsvm's precomputed one, which indexes the input with support-vector values.
    message = _rejected("svc-sparse", _set(name, ["precomputed", "poly", "rbf", "sigmoid", "linear"]))
    assert f"fitted attribute '{name}' would shadow SVC.{name}" in message
