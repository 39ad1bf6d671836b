"""scikit-learn's own estimator checks over every aprender estimator."""

from __future__ import annotations

from cases_own_models import TEXT_INPUT_EXPECTED_FAILURES
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

from aprender.codec import registered
from aprender.compose import ColumnTransformer
from aprender.linear_model import LogisticRegression
from aprender.pipeline import Pipeline
from aprender.preprocessing import StandardScaler

APRENDER_CLASSES = sorted(
    (e.cls for e in registered() if e.key.startswith("aprender.") and not e.cls.__module__.endswith("._generated")),
    key=lambda c: c.__name__,
)


#: Constructor arguments of the meta-estimators that cannot be built without any (sklearn's own choices).
INIT_PARAMS = {
    Pipeline: lambda: {"steps": [("scaler", StandardScaler()), ("clf", LogisticRegression())]},
    ColumnTransformer: lambda: {"transformers": [("scaler", StandardScaler(), [0, 1])]},
}


def _instance(cls: type):
    return cls(**INIT_PARAMS[cls]()) if cls in INIT_PARAMS else cls()


def _inherited_expected_failures(estimator) -> dict[str, str]:
    """The checks scikit-learn itself marks as expected failures for the parent class.

    aprender's estimators inherit scikit-learn's algorithms unchanged, so they fail
    exactly the checks their parent is known to fail (each with sklearn's reason).
    """
    from sklearn.utils._test_common.instance_generator import _get_expected_failed_checks

    if type(estimator) in TEXT_INPUT_EXPECTED_FAILURES:  # aprender's own text models: checks fed numbers
        return TEXT_INPUT_EXPECTED_FAILURES[type(estimator)]
    for base in type(estimator).__mro__[1:]:
        # aprender's own estimators (MixtureOfExperts) have only BaseEstimator and mixins from sklearn
        if base.__module__.startswith("sklearn.") and issubclass(base, BaseEstimator) and base is not BaseEstimator:
            return _get_expected_failed_checks(base(**estimator.get_params(deep=False)))
    return {}


def test_every_aprender_estimator_is_checked() -> None:
    assert len(APRENDER_CLASSES) >= 7


@parametrize_with_checks(
    [_instance(cls) for cls in APRENDER_CLASSES], expected_failed_checks=_inherited_expected_failures
)
def test_sklearn_compatible(estimator, check) -> None:
    check(estimator)
