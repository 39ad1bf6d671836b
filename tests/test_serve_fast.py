"""The exact fast paths of ``aprender serve``: the same bits as the estimator's method, or no fast path."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification, make_regression

from aprender.ensemble import ExtraTreesClassifier, RandomForestClassifier, RandomForestRegressor
from aprender.linear_model import LinearRegression, LogisticRegression, Ridge, SGDClassifier
from aprender.serve._fast import fast_method
from aprender.svm import LinearSVC
from aprender.tree import DecisionTreeClassifier, DecisionTreeRegressor

X, y = load_iris(return_X_y=True)
Xc, yc = make_classification(n_samples=300, n_features=6, random_state=0)
Xr, yr = make_regression(n_samples=200, n_features=5, random_state=0)

MODELS = [
    (LogisticRegression(max_iter=500), X, y, ("predict", "predict_proba", "decision_function")),
    (LogisticRegression(), Xc, yc, ("predict", "predict_proba", "decision_function")),  # binary: expit
    (LogisticRegression(max_iter=500), X, np.array(["setosa", "versicolor", "virginica"])[y], ("predict",)),
    (SGDClassifier(random_state=0), Xc, yc, ("predict", "decision_function")),
    (LinearSVC(), X, y, ("predict", "decision_function")),
    (LinearRegression(), Xr, yr, ("predict",)),
    (Ridge(), Xr, np.c_[yr, 2 * yr], ("predict",)),
    (RandomForestClassifier(n_estimators=10, random_state=0), X, y, ("predict", "predict_proba")),
    (ExtraTreesClassifier(n_estimators=10, random_state=0), Xc, yc, ("predict", "predict_proba")),
    (RandomForestRegressor(n_estimators=10, random_state=0), Xr, yr, ("predict",)),
    (DecisionTreeClassifier(random_state=0), X, y, ("predict", "predict_proba")),
    (DecisionTreeRegressor(random_state=0), Xr, yr, ("predict",)),
]


@pytest.mark.parametrize(("model", "X", "y", "names"), MODELS, ids=lambda v: type(v).__name__)
def test_fast_paths_give_the_methods_bits(model, X, y, names):
    model.fit(X, y)
    rows = np.random.default_rng(1).standard_normal((40, X.shape[1])) * X.std(axis=0) + X.mean(axis=0)
    for name in names:
        fast = fast_method(model, name, X.shape[1])
        assert fast is not None, name
        for n in (1, 5, 40):
            got, want = fast(rows[:n]), getattr(model, name)(rows[:n])
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want), name


def test_rows_the_kernel_does_not_take_go_to_the_method():
    model = LogisticRegression(max_iter=500).fit(X, y)
    fast = fast_method(model, "predict_proba", 4)
    with pytest.raises(ValueError, match="NaN"):  # scikit-learn's own error, not a silent prediction
        fast(np.array([[1.0, np.nan, 2.0, 3.0]]))
    huge = np.array([[1e308, 1e308, 0.0, 0.0]])  # finite, but its sum is not: the method's own answer
    assert np.array_equal(fast(huge), model.predict_proba(huge), equal_nan=True)
    as_float32 = X[:3].astype(np.float32)
    assert np.array_equal(fast(as_float32), model.predict_proba(as_float32))
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="too large"):  # overflows float32 only after the cast
        fast_method(tree, "predict", 4)(np.array([[1e300, 1.0, 1.0, 1.0]]))


def test_no_fast_path_for_an_overridden_method_or_multi_output():
    class Shifted(LogisticRegression):
        def predict(self, X):
            return super().predict(X) + 1

    assert fast_method(Shifted(max_iter=500).fit(X, y), "predict", 4) is None
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, np.c_[y, y])
    assert fast_method(forest, "predict", 4) is None
    assert fast_method(LinearRegression().fit(Xr, yr), "transform", 5) is None
