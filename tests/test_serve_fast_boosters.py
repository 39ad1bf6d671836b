"""The XGBoost and LightGBM fast paths of ``aprender serve``: the method's bits on every row, alone or
in a batch, labels included where probabilities tie exactly; one thread for the server's rows."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

import aprender
from aprender.serve._batching import Batcher
from aprender.serve._fast import fast_method
from aprender.serve._fast_boosters import MAX_ROWS

lightgbm = pytest.importorskip("lightgbm", reason="the lightgbm extra is not installed")
xgboost = pytest.importorskip("xgboost", reason="the xgboost extra is not installed")

Xb, yb = make_classification(n_samples=300, n_features=6, random_state=0)
Xm, ym = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=0)
Xr, yr = make_regression(n_samples=300, n_features=6, random_state=0)
LABELS = np.array(["high", "low", "mid"])
SMALL_LGBM = {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 5, "verbose": -1, "n_jobs": 1}
SMALL_XGB = {"n_estimators": 15, "max_depth": 3}

MODELS = [
    ("xgb-binary", lambda: xgboost.XGBClassifier(**SMALL_XGB).fit(Xb, yb), Xb, ("predict", "predict_proba")),
    ("xgb-multiclass", lambda: xgboost.XGBClassifier(**SMALL_XGB).fit(Xm, ym), Xm, ("predict", "predict_proba")),
    ("xgb-regressor", lambda: xgboost.XGBRegressor(**SMALL_XGB).fit(Xr, yr), Xr, ("predict",)),
    ("lgbm-binary", lambda: lightgbm.LGBMClassifier(**SMALL_LGBM).fit(Xb, yb), Xb, ("predict", "predict_proba")),
    ("lgbm-multiclass-strings", lambda: lightgbm.LGBMClassifier(**SMALL_LGBM).fit(Xm, LABELS[ym]), Xm,
     ("predict", "predict_proba")),
    ("lgbm-regressor", lambda: lightgbm.LGBMRegressor(**SMALL_LGBM).fit(Xr, yr), Xr, ("predict",)),
    # a prediction parameter (which aprender refuses to load: the estimator as fitted, not reloaded)
    ("lgbm-early-stop", lambda: lightgbm.LGBMClassifier(**SMALL_LGBM, pred_early_stop=True, pred_early_stop_freq=2,
                                                        pred_early_stop_margin=0.5).fit(Xm, ym), Xm,
     ("predict", "predict_proba")),
]


def _reloaded(model, tmp_path):
    if "pred_early_stop" in model.get_params():
        return model
    aprender.save(model, tmp_path / "model.apr")
    return aprender.load(tmp_path / "model.apr")


def _rows(X, n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, X.shape[1])) * X.std(axis=0) + X.mean(axis=0)


@pytest.mark.parametrize(("name", "fit", "X", "outputs"), MODELS, ids=[m[0] for m in MODELS])
def test_booster_fast_paths_give_the_methods_bits_alone_and_batched(name, fit, X, outputs, tmp_path):
    model = _reloaded(fit(), tmp_path)
    rows = _rows(X, 400)
    for output in outputs:
        fast, method = fast_method(model, output, X.shape[1]), getattr(model, output)
        assert fast is not None, output
        batched, want = fast(rows), method(rows)
        assert batched.dtype == want.dtype and batched.shape == want.shape and np.array_equal(batched, want)
        for i in range(0, len(rows), 7):  # a row alone: the same bits as in the batch
            alone = fast(rows[i:i + 1])
            assert alone.dtype == want.dtype and np.array_equal(alone, want[i:i + 1]), (output, i)


def test_labels_of_exactly_tied_probabilities_are_the_methods():
    """Constant features: no split, every class's probability equal (1/3 each; 0.5 for binary, which
    XGBoost's predict does not count as the positive class); the label must still be the method's."""
    constant = np.zeros((300, 4))
    rows = np.zeros((50, 4))
    for labels in (np.arange(300) % 3, np.arange(300) % 2):
        for model in (xgboost.XGBClassifier(**SMALL_XGB, base_score=0.5 if labels.max() == 1 else None),
                      lightgbm.LGBMClassifier(**SMALL_LGBM)):
            model.fit(constant, labels)
            proba = model.predict_proba(rows)
            assert (proba == proba[:, :1]).all()  # the ties are exact
            fast = fast_method(model, "predict", 4)
            assert fast is not None and np.array_equal(fast(rows), model.predict(rows))
            assert fast(rows).dtype == model.predict(rows).dtype


def test_a_large_call_goes_to_the_estimators_threads_and_the_estimator_keeps_its_booster():
    model = xgboost.XGBClassifier(**SMALL_XGB, n_jobs=2).fit(Xb, yb)
    booster = model.get_booster()
    fast = fast_method(model, "predict_proba", Xb.shape[1])
    rows = _rows(Xb, MAX_ROWS + 1)
    assert np.array_equal(fast(rows), model.predict_proba(rows))
    assert model.get_booster() is booster and model.get_params()["n_jobs"] == 2
    lgbm = lightgbm.LGBMClassifier(**SMALL_LGBM).fit(Xb, yb)
    assert fast_method(lgbm, "predict", Xb.shape[1]) is not None and lgbm.get_params()["n_jobs"] == 1


@pytest.mark.parametrize("model", [xgboost.XGBClassifier(**SMALL_XGB), lightgbm.LGBMClassifier(**SMALL_LGBM)],
                         ids=["xgboost", "lightgbm"])
def test_rows_with_missing_values_take_the_fast_path_with_the_methods_answer(model):
    """Boosters take NaN as a missing value (fitted on missing values here, so that they have learnt
    where to send them); their fast paths take it too, through the booster, with the method's bits."""
    X = Xb.copy()
    X[::4, 1] = np.nan
    model.fit(X, yb)
    rows = _rows(Xb, 60)
    rows[::3, 1] = np.nan
    rows[5] = np.nan
    fast = {name: fast_method(model, name, X.shape[1]) for name in ("predict", "predict_proba")}
    want = {name: getattr(model, name)(rows) for name in fast}
    model._Booster = None  # the wrapper's own method can no longer answer: the kernels must
    for name, method in fast.items():
        assert np.array_equal(method(rows), want[name]), name


def test_a_custom_objective_keeps_the_wrappers_method():
    def squared(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    model = lightgbm.LGBMRegressor(**SMALL_LGBM, objective=squared).fit(Xr, yr)
    assert fast_method(model, "predict", Xr.shape[1]) is None


def test_requests_merged_by_the_batcher_get_their_one_row_answers(tmp_path):
    model = _reloaded(xgboost.XGBClassifier(**SMALL_XGB).fit(Xm, ym), tmp_path)
    fast = fast_method(model, "predict_proba", Xm.shape[1])
    calls = []
    batcher = Batcher(lambda X: {"p": fast(X)}, max_batch_size=64, max_batch_time=0.0, max_queue=64,
                      on_batch=calls.append, inline_rows=MAX_ROWS)
    rows = _rows(Xm, 12, seed=5)

    async def everyone():
        return await asyncio.gather(*(batcher.submit(rows[i:i + 1]) for i in range(len(rows))))

    answers = asyncio.run(everyone())
    assert calls == [len(rows)]  # one call for all of them
    for i, answer in enumerate(answers):
        assert np.array_equal(answer["p"], model.predict_proba(rows[i:i + 1]))


def test_a_request_for_labels_and_probabilities_calls_the_booster_once(monkeypatch):
    model = lightgbm.LGBMClassifier(**SMALL_LGBM).fit(Xm, ym)
    fast = {name: fast_method(model, name, Xm.shape[1]) for name in ("predict_proba", "predict")}
    rows, other = _rows(Xm, 5), _rows(Xm, 6, seed=9)
    want = {name: getattr(model, name)(rows) for name in fast}
    want_other = model.predict(other)
    calls, real = [], model.booster_.predict
    monkeypatch.setattr(model.booster_, "predict", lambda X, **kw: calls.append(len(X)) or real(X, **kw))
    proba = fast["predict_proba"](rows)
    assert np.array_equal(proba, want["predict_proba"])
    assert np.array_equal(fast["predict"](rows), want["predict"])  # the remembered call
    proba[:] = 0  # the caller's copy: the remembered values are untouched
    assert np.array_equal(fast["predict_proba"](rows), want["predict_proba"])
    assert np.array_equal(fast["predict"](other), want_other)  # other rows: a new call
    assert calls == [5, 6]
