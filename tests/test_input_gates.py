"""A fitted attribute that scikit-learn's input validation reads cannot be left out of a file.

Without ``n_features_in_``, ``validate_data(reset=False)`` skips its width check and compiled
code indexes the caller's data by the fitted widths: a k-neighbors file without it made a wide
query read past ``_fit_X`` (SIGSEGV). Every class of the compiled-code audit whose fits leave a
gate of :data:`~aprender.codec._fitted.INPUT_GATES` must hold it; the crash runs in a child.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sklearn_instances as si
from child import load_and_use

import aprender
from aprender.codec import ModelState, from_state, to_state
from aprender.codec._fitted import INPUT_GATES, _fitted_table, fitted_key
from aprender.codec.schemas._compiled import COMPILED, NESTED
from aprender.exceptions import FormatError
from aprender.format import safetensors


def _gated_instances() -> list[str]:
    """Every scikit-learn instance of an audited class whose fits leave an input gate."""
    out = []
    for key, est in si.instances().items():
        known, _ = _fitted_table(type(est))
        if fitted_key(type(est)) in {*COMPILED, *NESTED} and known and set(INPUT_GATES) & known:
            out.append(key)
    return out


def test_every_audited_class_refuses_a_file_without_its_gates() -> None:
    keys, checked = _gated_instances(), set()
    assert len(keys) >= 40, keys
    for key in keys:
        est, _ = si.fitted(key)
        state = to_state(est)
        for gate in INPUT_GATES:
            if gate not in state.meta["model"]["attrs"]:
                continue
            meta = copy.deepcopy(state.meta)
            del meta["model"]["attrs"][gate]
            stripped = ModelState(tensors=dict(state.tensors), meta=meta)
            if getattr(est, "_fit_method", None) in ("kd_tree", "ball_tree"):  # as fitted on a prebuilt tree
                with pytest.raises(ValueError, match="dimension must match"):  # which checks the width itself
                    from_state(stripped)._tree.query(np.zeros((1, est.n_features_in_ + 1)))
                continue
            with pytest.raises(FormatError, match=f"'{gate}' is missing"):
                from_state(stripped)
            checked.add(type(est).__name__)
    assert len(checked) >= 40 and {"SVC", "DecisionTreeClassifier", "HistGradientBoostingClassifier"} <= checked


def test_a_k_neighbors_file_without_its_width_is_refused_before_a_wide_query(tmp_path) -> None:
    from sklearn.neighbors import KNeighborsClassifier

    X = np.random.RandomState(0).rand(40, 2)
    state = to_state(KNeighborsClassifier(algorithm="brute").fit(X, X[:, 0] > 0.5))
    meta = copy.deepcopy(state.meta)
    del meta["model"]["attrs"]["n_features_in_"]
    path = tmp_path / "knn.safetensors"
    path.write_bytes(safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    outcome = load_and_use({"wide": (str(path), "m.kneighbors(np.random.rand(2, 200000))")}, "import numpy as np")
    assert outcome["wide"].startswith("AprenderError: at '<model>': fitted attribute 'n_features_in_' is missing")
    plain = tmp_path / "plain.safetensors"
    aprender.save(KNeighborsClassifier(algorithm="brute").fit(X, X[:, 0] > 0.5), plain)
    assert aprender.load(plain).n_features_in_ == 2  # the same model, with its width, loads
