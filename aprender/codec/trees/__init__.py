"""Tree storage: decision trees as node arrays, one tree or many packed, and their structural checks.

- ``_structure``: vectorised checks of packed node arrays (children inside their tree,
  one parent each, depths), shared by every tree format (scikit-learn, HistGradientBoosting,
  XGBoost, LightGBM);
- ``_sklearn_tree``: scikit-learn's ``Tree`` <-> one array per node field, and the check
  of an estimator's fitted attributes against its trees;
- ``_packed``: a forest's or gradient boosting's list or grid of trees <-> one packed node,
  and the ``pack``/``unpack`` of an ensemble's ``estimators_`` that their schemas share.

Both the ``sklearn_tree`` handler (aprender.codec.handlers.tree) and the estimator
schemas (aprender.codec.schemas) use this package; it imports neither.
"""
