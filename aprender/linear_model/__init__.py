"""Linear models that save and load without pickle."""

from aprender.linear_model._linear import ElasticNet, Lasso, LinearRegression, LogisticRegression, Ridge

__all__ = ["ElasticNet", "Lasso", "LinearRegression", "LogisticRegression", "Ridge"]
