"""Pipeline: scikit-learn's chaining of steps with aprender persistence."""

from __future__ import annotations

from typing import Any

from sklearn import pipeline as _sk

from aprender.base import SerializableMixin

__all__ = ["Pipeline", "make_pipeline"]


class Pipeline(SerializableMixin, _sk.Pipeline):
    """A sequence of transforms and a final estimator (:class:`sklearn.pipeline.Pipeline`).

    Each step is stored recursively under ``steps.{i}.{name}.``: the tensors of a
    ``("scaler", StandardScaler())`` first step are ``steps.0.scaler.mean_``, ...
    Steps may be aprender estimators or plain scikit-learn ones of supported classes.

    Examples
    --------
    >>> from aprender.linear_model import LogisticRegression
    >>> from aprender.pipeline import Pipeline
    >>> from aprender.preprocessing import StandardScaler
    >>> pipe = Pipeline([("scaler", StandardScaler()), ("clf", LogisticRegression())])
    >>> pipe.fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1]).predict([[0.1], [2.9]])
    array([0, 1])
    """


def make_pipeline(
    *steps: Any, memory: Any = None, transform_input: list[str] | None = None, verbose: bool = False
) -> Pipeline:
    """Build an aprender :class:`Pipeline`, naming each step after its class (:func:`sklearn.pipeline.make_pipeline`).

    Parameters
    ----------
    *steps : list of estimators
        The transforms followed by the final estimator.
    memory : str or object with the joblib.Memory interface, default=None
        Caches fitted transformers (not stored in model files: save with ``memory=None``).
    transform_input : list of str, default=None
        Metadata parameters to transform through the steps (metadata routing).
    verbose : bool, default=False
        Print the time elapsed while fitting each step.

    Returns
    -------
    Pipeline

    Examples
    --------
    >>> from aprender.linear_model import Ridge
    >>> from aprender.pipeline import make_pipeline
    >>> from aprender.preprocessing import MinMaxScaler
    >>> make_pipeline(MinMaxScaler(), Ridge()).steps[0][0]
    'minmaxscaler'
    """
    return Pipeline(_sk._name_estimators(steps), memory=memory, transform_input=transform_input, verbose=verbose)
