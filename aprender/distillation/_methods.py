"""The names of :func:`aprender.distill`'s methods, importable without scikit-learn (``apr distill --help``)."""

__all__ = ["METHODS"]

#: The distillation methods.
METHODS = ("standard", "ensemble", "progressive")
