"""inference_only=True saves leave out what only further training reads, and nothing else.

The slim file must predict bit-identically, be smaller, list what it left out, refuse
``partial_fit`` with InferenceOnlyError, and a file whose ``dropped`` list lies is refused.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import Ridge
from state_edit import hostile

import aprender
from aprender.cluster import KMeans, MiniBatchKMeans
from aprender.codec import from_state, to_state
from aprender.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier
from aprender.exceptions import InferenceOnlyError
from aprender.format import apr, gguf, safetensors
from aprender.neural_network import MLPClassifier, MLPRegressor

X, Y = load_digits(return_X_y=True)
X, Y = X[:600], Y[:600]

MODELS = {
    "mlp-classifier": (lambda: MLPClassifier((16,), max_iter=30, early_stopping=True, random_state=0).fit(X, Y),
                       ["_best_coefs", "_best_intercepts", "_no_improvement_count", "_optimizer", "_random_state",
                        "best_loss_", "best_validation_score_", "loss_curve_", "t_", "validation_scores_"]),
    "mlp-regressor": (lambda: MLPRegressor(hidden_layer_sizes=(8,), max_iter=30, random_state=0)
                      .fit(X, Y.astype(float)),
                      ["_best_coefs", "_best_intercepts", "_no_improvement_count", "_optimizer", "_random_state",
                       "best_loss_", "best_validation_score_", "loss_curve_", "t_", "validation_scores_"]),
    "kmeans": (lambda: KMeans(5, n_init=1, random_state=0).fit(X), ["labels_"]),
    "minibatch-kmeans": (lambda: MiniBatchKMeans(5, n_init=1, random_state=0).fit(X),
                         ["_counts", "_ewa_inertia", "_ewa_inertia_min", "_n_since_last_reassign", "_no_improvement",
                          "labels_"]),
    "forest-oob": (lambda: RandomForestClassifier(8, oob_score=True, random_state=0).fit(X, Y),
                   ["oob_decision_function_", "oob_score_"]),
    "boosting": (lambda: GradientBoostingClassifier(n_estimators=3, subsample=0.5, random_state=0)
                 .fit(X[:200], Y[:200]),
                 ["oob_improvement_", "oob_score_", "oob_scores_", "train_score_"]),
    "hist-boosting": (lambda: HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(X, Y),
                      ["train_score_", "validation_score_"]),
}
FORMATS = {"safetensors": safetensors, "apr": apr, "gguf": gguf}
METHODS = ("predict", "predict_proba", "transform")


def _fit(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MODELS[name][0]()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_slim_file_predicts_identically(name: str, fmt: str, tmp_path) -> None:
    model = _fit(name)
    full, slim = tmp_path / f"full.{fmt}", tmp_path / f"slim.{fmt}"
    aprender.save(model, full)
    aprender.save(model, slim, inference_only=True)
    assert slim.stat().st_size < full.stat().st_size
    loaded = aprender.load(slim)
    for method in METHODS:
        if hasattr(model, method):
            assert getattr(loaded, method)(X).tobytes() == getattr(model, method)(X).tobytes(), method
    for attr in MODELS[name][1]:
        assert not hasattr(loaded, attr), attr


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dropped_lists_exactly_the_training_state(name: str) -> None:
    state = to_state(_fit(name), inference_only=True)
    assert state.meta["model"]["dropped"] == MODELS[name][1]
    assert "dropped" not in to_state(_fit(name)).meta["model"]


@pytest.mark.parametrize("name", ["mlp-classifier", "mlp-regressor", "minibatch-kmeans"])
def test_partial_fit_is_refused(name: str) -> None:
    model = _fit(name)
    loaded = from_state(to_state(model, inference_only=True))
    with pytest.raises(InferenceOnlyError, match=r"inference-only file.*(_optimizer|_counts)"):
        loaded.partial_fit(X[:20], Y[:20]) if "kmeans" not in name else loaded.partial_fit(X[:20])
    if name != "mlp-classifier":  # (early stopping rules partial_fit out anyway) the full file trains on
        full = from_state(to_state(model))
        full.partial_fit(X[:20], Y[:20]) if "kmeans" not in name else full.partial_fit(X[:20])
    refit = loaded.fit(X[:100], Y[:100]) if "kmeans" not in name else loaded.fit(X[:100])
    assert refit is loaded


def test_same_bytes_twice_and_through_the_model_method(tmp_path) -> None:
    model = _fit("mlp-classifier")
    assert apr.dumps(model, inference_only=True) == apr.dumps(model, inference_only=True)
    model.save_safetensors(tmp_path / "m.safetensors", inference_only=True)
    assert (tmp_path / "m.safetensors").read_bytes() == safetensors.dumps(model, inference_only=True)


def test_estimators_without_a_training_only_list_are_unchanged() -> None:
    ridge = Ridge().fit(X, Y)
    assert safetensors.dumps(ridge, inference_only=True) == safetensors.dumps(ridge)


@pytest.mark.parametrize(("dropped", "message"), [
    (["coefs_"], "'dropped' must list training-only attributes"),
    ([], "'dropped' must list training-only attributes"),
    ([7], "'dropped' must list training-only attributes"),
    ("loss_curve_", "'dropped' must be list or null"),
])
def test_a_lying_dropped_list_is_refused(dropped, message: str, tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["dropped"] = dropped

    assert message in str(hostile(_fit("kmeans"), edit, tmp_path))


def test_dropped_must_not_name_a_stored_attribute(tmp_path) -> None:
    def edit(meta, tensors):
        meta["model"]["dropped"] = ["labels_"]  # a full file still holds labels_

    assert "'dropped' must list" in str(hostile(_fit("kmeans"), edit, tmp_path))


def test_inference_only_kmeans_keeps_its_centres() -> None:
    model = _fit("kmeans")
    loaded = from_state(to_state(model, inference_only=True))
    assert np.array_equal(loaded.cluster_centers_, model.cluster_centers_)
