"""Every loss of the SGD family saves, loads and keeps training; crafted loss nodes are refused.

``SGDClassifier(loss="log_loss")``, ``"squared_error"`` and ``"huber"`` keep a loss from
``sklearn._loss._loss`` (``CyHalfBinomialLoss``, ``CyHalfSquaredError``, ``CyHuberLoss``)
as ``_loss_function_``; the others one of ``sklearn.linear_model._sgd_fast``. Crafted
loss nodes are written with the library's own writer; the one that loads (a regressor
loss in a classifier) is used in a child process.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import aprender
from aprender.codec import ModelState, from_state, to_state
from aprender.codec.handlers.sgd_loss import SGD_LOSSES
from aprender.exceptions import FormatError
from aprender.format import apr, safetensors
from aprender.linear_model import SGDClassifier, SGDRegressor

_X = np.random.RandomState(0).normal(size=(60, 4))
_Y2 = (_X[:, 0] > 0).astype(int)
_Y3 = np.arange(60) % 3
_YR = _X @ np.arange(1.0, 5.0)
_CLASSIFIER_LOSSES = ["hinge", "log_loss", "modified_huber", "squared_hinge", "perceptron", "squared_error", "huber",
                      "epsilon_insensitive", "squared_epsilon_insensitive"]
_REGRESSOR_LOSSES = ["squared_error", "huber", "epsilon_insensitive", "squared_epsilon_insensitive"]


def _fit(cls, loss: str, y: np.ndarray, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few iterations: convergence warnings
        return cls(loss=loss, max_iter=5, tol=None, random_state=0, **kw).fit(_X, y)


def _continue(model, y: np.ndarray):
    kw = {"classes": np.unique(y)} if hasattr(model, "classes_") else {}
    return model.partial_fit(_X, y, **kw)


_CASES = [(SGDClassifier, loss, y, avg) for loss in _CLASSIFIER_LOSSES for y in ("Y2", "Y3") for avg in (False, True)]
_CASES += [(SGDRegressor, loss, "YR", avg) for loss in _REGRESSOR_LOSSES for avg in (False, True)]


@pytest.mark.parametrize(("cls", "loss", "target", "average"), _CASES,
                         ids=[f"{c.__name__}-{loss}-{t}-{'avg' if a else 'plain'}" for c, loss, t, a in _CASES])
def test_every_loss_round_trips_and_keeps_training(cls, loss, target, average) -> None:
    y = {"Y2": _Y2, "Y3": _Y3, "YR": _YR}[target]
    model = _fit(cls, loss, y, average=average)
    state = to_state(model)
    for dump, parse in ((safetensors.state_to_bytes, safetensors.state_from_bytes),
                        (apr.state_to_bytes, apr.state_from_bytes)):
        loaded = from_state(parse(dump(state)))
        if hasattr(model, "_loss_function_"):
            assert type(loaded._loss_function_) is type(model._loss_function_)
            assert loaded._loss_function_.__reduce__()[1] == model._loss_function_.__reduce__()[1]
        methods = ["predict", "decision_function"] if cls is SGDClassifier else ["predict"]
        methods += ["predict_proba"] if loss in ("log_loss", "modified_huber") else []
        for method in methods:
            assert np.array_equal(getattr(loaded, method)(_X), getattr(model, method)(_X)), method
        fresh = _fit(cls, loss, y, average=average)
        _continue(fresh, y)
        _continue(loaded, y)
        assert fresh.coef_.tobytes() == loaded.coef_.tobytes()
        assert fresh.intercept_.tobytes() == loaded.intercept_.tobytes()


def test_the_loss_table_names_every_class_scikit_learn_uses() -> None:
    from sklearn.linear_model import SGDOneClassSVM

    used = {entry[0] for table in (SGDClassifier.loss_functions, SGDRegressor.loss_functions,
                                   SGDOneClassSVM.loss_functions) for entry in table.values()}
    assert used == {cls for cls, _ in SGD_LOSSES.values()}


def _loss_file(node_edit) -> bytes:
    state = to_state(_fit(SGDClassifier, "huber", _Y2))
    meta = copy.deepcopy(state.meta)
    node_edit(meta["model"]["attrs"]["_loss_function_"])
    return safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta))


_HOSTILE = {
    "unknown-name": (lambda n: n.update(loss="Log"), "SGD loss 'Log' is not allowed"),
    "a-module-path": (lambda n: n.update(loss="os.system"), "is not allowed"),
    "nan-delta": (lambda n: n.update(args=[{"__t__": "float", "v": "nan"}]), "finite number"),
    "string-delta": (lambda n: n.update(args=["0.1"]), "finite number"),
    "huge-delta": (lambda n: n.update(args=[1e300]), "finite number"),
    "negative-delta": (lambda n: n.update(args=[-1.0]), "finite number"),
    "too-many-args": (lambda n: n.update(args=[0.1, 0.2]), "takes 1 finite number"),
    "too-few-args": (lambda n: n.update(args=[]), "takes 1 finite number"),
    "args-for-binomial": (lambda n: n.update(loss="CyHalfBinomialLoss", args=[1.0]), "takes 0 finite number"),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE))
def test_crafted_loss_is_refused(case) -> None:
    edit, message = _HOSTILE[case]
    with pytest.raises(FormatError, match=message):
        safetensors.loads(_loss_file(edit))


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import aprender
    X = np.random.RandomState(0).normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    swapped, plain = aprender.load(sys.argv[1]), aprender.load(sys.argv[2])
    assert (swapped.predict(X) == plain.predict(X)).all()
    swapped.partial_fit(X, y)
    plain.partial_fit(X, y)
    # partial_fit rebuilt the loss from `loss` and `epsilon`: the file's choice changed nothing
    print(type(swapped._loss_function_).__name__, swapped.coef_.tobytes() == plain.coef_.tobytes())
""")


def test_a_regressor_loss_in_a_classifier_file_is_harmless(tmp_path) -> None:
    """The file's loss never reaches _sgd_fast: partial_fit replaces it before training."""
    model = _fit(SGDClassifier, "hinge", _Y2)
    state = to_state(model)
    meta = copy.deepcopy(state.meta)
    meta["model"]["attrs"]["_loss_function_"].update(loss="CyHalfSquaredError", args=[])
    swapped, plain = tmp_path / "swapped.safetensors", tmp_path / "plain.safetensors"
    swapped.write_bytes(safetensors.state_to_bytes(ModelState(tensors=dict(state.tensors), meta=meta)))
    aprender.save(model, plain)
    done = subprocess.run([sys.executable, "-c", _CHILD, str(swapped), str(plain)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, f"child died with {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.split() == ["Hinge", "True"]
