"""Fitted attribute names and private flags come from what fitting produces (aprender/codec/_fitted_names.py).

A file that adds a name fits never leave (``_in_fit``, which makes HistGradientBoosting
read the caller's floats as pre-binned bytes), or sets a private flag to a value fits never
leave, is refused at load; every allow-listed class has a learned list; the list holds
what fits of this scikit-learn produce, checked on a sample of them.
"""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.cross_decomposition import PLSRegression
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.svm import SVR
from sklearn_instances import fitted, instances
from state_edit import hostile

import aprender
from aprender.codec import _fitted_names, to_state
from aprender.codec._fitted import _fitted_table, fitted_key
from aprender.codec._registry import entry_for_key
from aprender.codec._table import GENERIC, SCHEMA_MODULES

X = np.random.default_rng(0).normal(size=(60, 4))
Y = (X[:, 0] > 0).astype(int)


def _set(name, value):
    def edit(meta, tensors):
        meta["model"]["attrs"][name] = value

    return edit


def test_a_flag_set_only_while_fitting_is_refused(tmp_path) -> None:
    model = HistGradientBoostingClassifier(max_iter=5).fit(X, Y)
    error = hostile(model, _set("_in_fit", True), tmp_path)
    assert "'_in_fit' is not an attribute that fitting HistGradientBoostingClassifier leaves" in str(error)


def test_a_name_no_fit_produces_is_refused(tmp_path) -> None:
    error = hostile(SVR().fit(X, X[:, 0]), _set("_skip_checks_", 1), tmp_path)
    assert "'_skip_checks_' is not an attribute that fitting SVR leaves" in str(error)


@pytest.mark.parametrize(("model", "name", "value"), [
    (SVR(), "_effective_probability", True),
    (PLSRegression(n_components=1), "_norm_y_weights", True),
    (SVR(), "_effective_probability", 1),
])
def test_a_private_flag_fits_never_leave_is_refused(model, name, value, tmp_path) -> None:
    model = model.fit(X, X[:, 0])
    error = hostile(model, _set(name, value), tmp_path)
    assert f"'{name}' is {value!r}; fits of {type(model).__name__} leave it" in str(error)


def test_the_names_users_calls_set_are_accepted(tmp_path) -> None:
    """set_output, set_fit_request and set_callbacks write instance attributes on any estimator."""
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().set_output(transform="pandas").fit(X)
    with sklearn.config_context(enable_metadata_routing=True):
        scaler.set_fit_request(sample_weight=True)
        aprender.save(scaler, tmp_path / "s.apr")
        loaded = aprender.load(tmp_path / "s.apr")
    assert loaded._sklearn_output_config == {"transform": "pandas"}


def test_every_allow_listed_class_has_a_learned_list() -> None:
    missing = []
    for key in sorted({*GENERIC, *SCHEMA_MODULES}):
        try:
            cls = entry_for_key(key).cls
        except Exception:  # a class this scikit-learn does not have
            continue
        if fitted_key(cls) not in _fitted_names.NAMES:
            missing.append(key)
    assert missing == [], "run python tools/gen_fitted_names.py"


@pytest.mark.parametrize("key", sorted(instances())[::9])
def test_the_list_holds_what_fits_of_this_scikit_learn_produce(key) -> None:
    """A sample of the generator's instances (every ninth): every name the codec writes is in the list."""
    if ".".join(sklearn.__version__.split(".")[:2]) != _fitted_names.SKLEARN:
        pytest.skip(f"the list was learned under scikit-learn {_fitted_names.SKLEARN}")
    model, _ = fitted(key)
    stack = [to_state(model).meta["model"]]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("__t__") == "estimator" and node["attrs"]:
                known, _ = _fitted_table(entry_for_key(node["class"]).cls)
                assert set(node["attrs"]) <= known, "run python tools/gen_fitted_names.py"
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def test_under_another_release_only_the_other_rules_apply(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_fitted_names, "SKLEARN", "0.1")
    _fitted_table.cache_clear()
    try:
        path = tmp_path / "m.safetensors"
        model = SVR().fit(X, X[:, 0])
        model.extra_ = 1.0  # a name this table does not know, from a release it was not learned on
        aprender.save(model, path)
        assert aprender.load(path).extra_ == 1.0
    finally:
        _fitted_table.cache_clear()
