"""Helpers the Dask tests' worker processes preload (LocalCluster(preload=[this file])).

A model class that refuses to be pickled, registered with aprender's allow-list in
every process that imports this file, and a probe of what a worker loaded.
"""

from __future__ import annotations

from typing import Any

from aprender import register_estimator
from aprender.linear_model import LogisticRegression


class UnpicklableLogisticRegression(LogisticRegression):
    """A LogisticRegression that raises when anything tries to pickle it."""

    def __reduce__(self) -> Any:
        raise TypeError("UnpicklableLogisticRegression must never be pickled")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("UnpicklableLogisticRegression must never be pickled")


register_estimator(UnpicklableLogisticRegression, key="tests.UnpicklableLogisticRegression")


def loaded(name: str) -> dict[str, Any] | None:
    """What the worker process cached under the plugin ``name`` (None if nothing)."""
    from aprender.dask import _scoring as _dask_scoring

    model = _dask_scoring._MODELS.get(name)
    if model is None:
        return None
    return {"class": type(model).__name__, "writeable": bool(model.coef_.flags.writeable)}
